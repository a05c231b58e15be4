//go:build unix && !linux

package commitlog

import "os"

// fallocate returns errNoFallocate: this platform has none.
func fallocate(f *os.File, from, to int64) error { return errNoFallocate }

// dataRanges calls fn for [from, to): this platform cannot tell where holes are.
func dataRanges(f *os.File, from, to int64, fn func(a, b int64) bool) {
	if from < to {
		fn(from, to)
	}
}

// dataEnd returns size: this platform cannot tell where holes are.
func dataEnd(f *os.File, off, size int64) int64 { return size }

// datasync makes f's data durable.
func datasync(f *os.File) error {
	return f.Sync()
}
