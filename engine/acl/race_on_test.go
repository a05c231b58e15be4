//go:build race

package acl

// raceEnabled: under the race detector sync.Pool drops what it is given
// at random, so pooled MACs are made again: allocation counts do not hold.
const raceEnabled = true
