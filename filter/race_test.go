//go:build race

package filter

// raceEnabled reports a race-detector build, in which sync.Pool drops
// items on purpose, so pooled paths allocate.
const raceEnabled = true
