package kv

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/karmanmq/karman/engine/internal/disk"
)

// DiskFS wraps a pebble file system so that a full or failing disk
// pauses pebble instead of breaking it. Pebble cannot go on after a
// failed write or sync of its log: the commit that finds the error calls
// Fatalf, and a later rotation of the log panics. It also retries a
// failed flush or compaction at once, for ever. So DiskFS keeps errors of
// writes and syncs from pebble:
//
//   - A write, preallocation, file creation, rename or link that fails
//     with ENOSPC or EDQUOT is reported to the monitor, waits for space to
//     return, and is tried again (a write from where it stopped).
//   - Any other error of a write or a sync (EIO above all: Linux drops the
//     dirty pages of a failed write-back, so a retried sync would report
//     success for data that is gone) is reported as a failure, and the
//     call never returns. So does the creation of a file once the disk
//     failed (what a retried flush or compaction does first).
//
// Callers must refuse new writes while the disk is out of space or
// failed, and must not wait for a write that may be paused (see
// meta.Store). Once the monitor closes, a paused call stays paused: the
// database must then be left unclosed (Stuck says so), since closing it
// would wait for the paused call.
type DiskFS struct {
	vfs.FS
	// NoLog says the database writes no log (pebble.Options.DisableWAL):
	// its .log files are then treated as any other file, whose writes fail
	// rather than wait once the monitor closes, so that closing the
	// database on a full disk does not wait for space.
	NoLog bool

	space   *disk.Monitor
	stuck   atomic.Bool
	waiting atomic.Int64 // calls waiting for space
}

// NewDiskFS wraps fs (nil: the operating system's) for the disk that
// space watches.
func NewDiskFS(fs vfs.FS, space *disk.Monitor) *DiskFS {
	if fs == nil {
		fs = vfs.Default
	}
	return &DiskFS{FS: fs, space: space}
}

// Stuck reports whether a call is paused: waiting for space, or for good
// (it failed, or waited for space until the monitor closed).
func (fs *DiskFS) Stuck() bool { return fs.stuck.Load() || fs.waiting.Load() > 0 }

// park reports err as a failure of the disk and never returns.
func (fs *DiskFS) park(err error) {
	fs.space.ReportFailure(err)
	fs.stuck.Store(true)
	select {}
}

// retry runs op until it does not fail for want of space, waiting for
// space between tries. Other errors are returned when fail is false and
// park the call when it is true. When the monitor closes during a wait,
// the error is returned, except for a write of a log (fail and log true),
// which pebble cannot survive: that call is parked.
func (fs *DiskFS) retry(fail, log bool, op func() error) error {
	for {
		err := op()
		switch {
		case err == nil:
			return nil
		case disk.IsSpace(err):
			fs.space.ReportNoSpace(err)
			fs.waiting.Add(1)
			werr := fs.space.WaitSpace()
			fs.waiting.Add(-1)
			if errors.Is(werr, disk.ErrNotStarted) {
				return err // opening: fail rather than wait
			}
			if werr != nil && !(fail && log) {
				return err
			}
			if werr != nil {
				fs.stuck.Store(true)
				fs.park(fmt.Errorf("%w (%w)", werr, err))
			}
		case fail:
			fs.park(err)
		default:
			return err
		}
	}
}

// Unwrap returns the wrapped file system.
func (fs *DiskFS) Unwrap() vfs.FS { return fs.FS }

func (fs *DiskFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.retry(false, false, func() (err error) {
		// A failed disk parks the background work that would otherwise
		// retry at once.
		if s := fs.space.Status(); s.State == disk.Failed {
			fs.park(errors.New(s.Reason))
		}
		f, err = fs.FS.Create(name, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	return newDiskFile(f, fs, name), nil
}

// OpenDir wraps the directory, whose Sync makes creations and renames
// durable.
func (fs *DiskFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return newDiskFile(f, fs, name), nil
}

func (fs *DiskFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return newDiskFile(f, fs, name), nil
}

func (fs *DiskFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.retry(false, false, func() (err error) {
		f, err = fs.FS.ReuseForWrite(oldname, newname, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	return newDiskFile(f, fs, newname), nil
}

func (fs *DiskFS) Link(oldname, newname string) error {
	return fs.retry(false, false, func() error { return fs.FS.Link(oldname, newname) })
}

func (fs *DiskFS) Rename(oldname, newname string) error {
	return fs.retry(false, false, func() error { return fs.FS.Rename(oldname, newname) })
}

type diskFile struct {
	vfs.File
	fs  *DiskFS
	log bool // a write-ahead log, which pebble cannot see fail
}

func newDiskFile(f vfs.File, fs *DiskFS, name string) *diskFile {
	return &diskFile{File: f, fs: fs, log: !fs.NoLog && strings.HasSuffix(name, ".log")}
}

func (f *diskFile) Write(p []byte) (int, error) {
	done := 0
	err := f.fs.retry(true, f.log, func() error {
		n, err := f.File.Write(p[done:])
		done += n
		if err == nil && done < len(p) {
			err = io.ErrShortWrite
		}
		return err
	})
	return done, err
}

func (f *diskFile) WriteAt(p []byte, off int64) (int, error) {
	done := 0
	err := f.fs.retry(true, f.log, func() error {
		n, err := f.File.WriteAt(p[done:], off+int64(done))
		done += n
		return err
	})
	return done, err
}

func (f *diskFile) Preallocate(off, n int64) error {
	return f.fs.retry(true, f.log, func() error {
		err := f.File.Preallocate(off, n)
		if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP) {
			return nil // a file system without fallocate: nothing reserved, nothing lost
		}
		return err
	})
}

// synced parks a failed sync: whatever its errno, the pages it was to
// write may be gone, so the disk counts as failed.
func (f *diskFile) synced(err error) error {
	if err != nil {
		f.fs.park(err)
	}
	return nil
}

func (f *diskFile) Sync() error     { return f.synced(f.File.Sync()) }
func (f *diskFile) SyncData() error { return f.synced(f.File.SyncData()) }

func (f *diskFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.synced(err)
}
