// Package config is the typed configuration of a Karman server (package
// server, and so `karman serve`).
//
// Every setting is a command-line flag; each flag can also be given as an
// environment variable named KARMAN_ plus the flag name in upper case with
// dashes as underscores (--http-addr is KARMAN_HTTP_ADDR). A flag on the
// command line wins over the environment, which wins over the default. An
// environment variable with the KARMAN_ prefix that names no flag is
// ignored with a warning naming the nearest flag (platforms set their own:
// Kubernetes service links such as KARMAN_PORT pass without one). Validate
// checks every value against its range, zero included, before the server binds
// a port.
//
// A Config is filled by Bind and the flag parser, then by ApplyEnv; it is
// not safe for concurrent modification, and the server only reads it.
package config
