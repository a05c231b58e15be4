//go:build unix && !linux

package commitlog

import "os"

// reserveBlocks makes the file system allocate the blocks of f's bytes
// [from, to) by writing zeros over them: this platform has no fallocate.
// Nothing at or after from may hold data.
func reserveBlocks(f *os.File, from, to int64) error {
	return writeZeros(f, from, to)
}

// dataRanges calls fn for [from, to): this platform cannot tell where holes are.
func dataRanges(f *os.File, from, to int64, fn func(a, b int64) bool) {
	if from < to {
		fn(from, to)
	}
}

// datasync makes f's data durable.
func datasync(f *os.File) error {
	return f.Sync()
}
