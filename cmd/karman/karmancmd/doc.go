// Package cli is the karman command line: serve, config, bench and
// version, built on cobra.
package cli
