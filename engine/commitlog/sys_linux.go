package commitlog

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fallocate reserves the blocks of f's bytes [from, to). It returns
// errNoFallocate where the file system cannot (EOPNOTSUPP, or EINVAL from
// some).
func fallocate(f *os.File, from, to int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, from, to-from)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return errNoFallocate
	}
	return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
}

// dataRanges calls fn for each region of [from, to) of f that may hold
// non-zero bytes, in order, until fn returns false. Holes read as zeros and
// are skipped; where the file system cannot tell, the whole range is passed.
func dataRanges(f *os.File, from, to int64, fn func(a, b int64) bool) {
	fd := int(f.Fd())
	for off := from; off < to; {
		d, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return // only a hole from off to the end of the file
		}
		if err != nil {
			fn(off, to)
			return
		}
		if d >= to {
			return
		}
		h, err := unix.Seek(fd, d, unix.SEEK_HOLE)
		if err != nil || h > to {
			h = to
		}
		if !fn(d, h) {
			return
		}
		off = h
	}
}

// dataEnd returns the end of the data region of f that holds off (at most
// size), or off itself when off lies in a hole; size where the file
// system cannot tell.
func dataEnd(f *os.File, off, size int64) int64 {
	fd := int(f.Fd())
	d, err := unix.Seek(fd, off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return off // a hole from off to the end of the file
	}
	if err != nil {
		return size
	}
	if d > off {
		return off
	}
	h, err := unix.Seek(fd, off, unix.SEEK_HOLE)
	if err != nil || h > size {
		return size
	}
	return h
}

// datasync makes f's data durable.
func datasync(f *os.File) error {
	return unix.Fdatasync(int(f.Fd()))
}
