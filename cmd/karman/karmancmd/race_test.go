//go:build race

package karmancmd

// Under the race detector the binaries karman build makes in tests are
// built with it too (through GOFLAGS, which the build passes on): they then
// reuse the race-built packages of the test and are checked for races.
func init() { buildGOFLAGS = "-race" }
