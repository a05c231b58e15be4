//go:build race

package server_test

// raceEnabled: the race detector slows the server many times over, so
// timing tests only log.
const raceEnabled = true
