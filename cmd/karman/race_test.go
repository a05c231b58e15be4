//go:build race

package main

// Under the race detector the binary is built with it too: it then reuses
// the race-built packages of the test and checks the real binary for races.
func init() { buildFlags = append(buildFlags, "-race") }
