//go:build unix

package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

const lockName = "LOCK"

// lockDir takes an exclusive advisory lock on dir, held until the returned
// file is closed (or the process dies).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("commitlog: lock %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("commitlog: %s is in use by another process", dir)
		}
		return nil, fmt.Errorf("commitlog: lock %s: %w", dir, err)
	}
	return f, nil
}

var pageSize = os.Getpagesize()

// msync makes b, a page-aligned part of a mapping, durable.
func msync(b []byte) error {
	return unix.Msync(b, unix.MS_SYNC)
}

// adviseRandom turns read-ahead for the mapping b off (or back on). It is
// only a hint; errors are ignored.
func adviseRandom(b []byte, random bool) {
	advice := unix.MADV_NORMAL
	if random {
		advice = unix.MADV_RANDOM
	}
	_ = unix.Madvise(b, advice)
}
