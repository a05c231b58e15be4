//go:build !unix

package mqtt

// RaiseFileLimit does nothing where there are no rlimits.
func RaiseFileLimit() (uint64, error) { return 0, nil }
