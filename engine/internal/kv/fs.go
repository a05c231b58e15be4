package kv

import (
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/karmanmq/karman/engine/internal/disk"
)

// DiskFS wraps a pebble file system so that a full disk pauses pebble
// instead of breaking it. Pebble treats a failed write to its log as
// fatal (the commit pipeline cannot go on after it) and retries a failed
// flush or compaction at once, for ever. DiskFS therefore keeps "no
// space" from pebble: a write, preallocation, file creation, rename or
// link that fails with ENOSPC or EDQUOT is reported to space, waits for
// space to return, and is tried again (a write from where it stopped).
// Callers must refuse new writes while the disk is full, so that nobody
// waits behind the paused write; only what was in flight when the disk
// filled waits.
//
// EIO is different: Linux drops the dirty pages of a failed write-back,
// so a retried sync would report success for data that is gone. DiskFS
// reports it as a failure and hands it to pebble. Once the disk failed,
// the creation of a new file (what a retried flush or compaction does
// first) waits until space gives up, so that pebble does not retry in a
// tight loop.
//
// When space gives up waiting (the monitor closed), the original error
// is returned.
func DiskFS(fs vfs.FS, space *disk.Monitor) vfs.FS {
	if fs == nil {
		fs = vfs.Default
	}
	return &diskFS{FS: fs, space: space}
}

type diskFS struct {
	vfs.FS
	space *disk.Monitor
}

// retry runs op until it does not fail for want of space, waiting for
// space between tries.
func (fs *diskFS) retry(op func() error) error {
	for {
		err := op()
		switch {
		case err == nil:
			return nil
		case disk.IsSpace(err):
			fs.space.ReportNoSpace(err)
			if fs.space.WaitSpace() != nil {
				return err
			}
		default:
			if disk.IsIO(err) {
				fs.space.ReportFailure(err)
			}
			return err
		}
	}
}

// Unwrap returns the wrapped file system.
func (fs *diskFS) Unwrap() vfs.FS { return fs.FS }

func (fs *diskFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.retry(func() (err error) {
		// A failed disk parks the background work that would otherwise
		// retry at once.
		if err := fs.space.HoldIfFailed(); err != nil {
			return err
		}
		f, err = fs.FS.Create(name, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f, fs: fs}, nil
}

func (fs *diskFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f, fs: fs}, nil
}

func (fs *diskFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.retry(func() (err error) {
		f, err = fs.FS.ReuseForWrite(oldname, newname, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f, fs: fs}, nil
}

func (fs *diskFS) Link(oldname, newname string) error {
	return fs.retry(func() error { return fs.FS.Link(oldname, newname) })
}

func (fs *diskFS) Rename(oldname, newname string) error {
	return fs.retry(func() error { return fs.FS.Rename(oldname, newname) })
}

type diskFile struct {
	vfs.File
	fs *diskFS
}

func (f *diskFile) Write(p []byte) (int, error) {
	done := 0
	err := f.fs.retry(func() error {
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
	err := f.fs.retry(func() error {
		n, err := f.File.WriteAt(p[done:], off+int64(done))
		done += n
		return err
	})
	return done, err
}

func (f *diskFile) Preallocate(off, n int64) error {
	return f.fs.retry(func() error { return f.File.Preallocate(off, n) })
}

// synced reports a failed sync: whatever its errno, the pages it was to
// write may be gone, so the disk counts as failed.
func (f *diskFile) synced(err error) error {
	if err != nil {
		f.fs.space.ReportFailure(err)
	}
	return err
}

func (f *diskFile) Sync() error     { return f.synced(f.File.Sync()) }
func (f *diskFile) SyncData() error { return f.synced(f.File.SyncData()) }

func (f *diskFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.synced(err)
}
