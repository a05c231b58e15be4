package commitlog

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/edsrzf/mmap-go"
)

const (
	segmentNameLen = 20
	tmpSuffix      = ".tmp"
)

// segment is one mapped segment file.
//
// Its mapping lives as long as its reference count is positive. The log
// holds one reference while the segment is part of it; readers take one
// (acquire) for as long as they touch data. Whoever drops the count to zero
// unmaps it.
type segment struct {
	base int64
	path string
	data mmap.MMap

	refs atomic.Int64
	// lastWrite is when the segment was last appended to, in Unix
	// nanoseconds: set when it is created and when the writer leaves it for
	// the next one; for segments found at Open, the file's modification time.
	lastWrite atomic.Int64
}

func newSegment(base int64, path string, data mmap.MMap, lastWrite time.Time) *segment {
	s := &segment{base: base, path: path, data: data}
	s.refs.Store(1)
	s.lastWrite.Store(lastWrite.UnixNano())
	return s
}

// acquire takes a reference, or reports false if the segment is already
// unmapped (or about to be).
func (s *segment) acquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference and unmaps the segment when it was the last.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		m := s.data
		_ = m.Unmap()
	}
}

func segmentName(base int64) string {
	return fmt.Sprintf("%0*d", segmentNameLen, base)
}

// parseSegmentName returns the base offset a segment file name stands for.
func parseSegmentName(name string) (int64, bool) {
	if len(name) != segmentNameLen {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	base, err := strconv.ParseInt(name, 10, 64)
	return base, err == nil
}

// createSegmentFile creates the segment file for base at full size, durably,
// and maps it. The file is sparse: its blocks are reserved later, ahead of
// the writer (see reserve.go). It is built under a temporary name and
// renamed, so a segment file with a final name always has its full size.
func createSegmentFile(dir string, base, size int64, now time.Time) (*segment, error) {
	name := segmentName(base)
	path := filepath.Join(dir, name)
	tmp := path + tmpSuffix
	fail := func(op string, err error) (*segment, error) {
		return nil, fmt.Errorf("commitlog: create segment %s: %s: %w", name, op, err)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fail("open", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		os.Remove(tmp)
		return fail("truncate", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fail("sync", err)
	}
	data, err := mmap.MapRegion(f, int(size), mmap.RDWR, 0, 0)
	f.Close()
	if err != nil {
		os.Remove(tmp)
		return fail("map", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		data.Unmap()
		os.Remove(tmp)
		return fail("rename", err)
	}
	if err := syncDir(dir); err != nil {
		data.Unmap()
		return fail("sync directory", err)
	}
	return newSegment(base, path, data, now), nil
}

// openSegment opens and maps an existing segment file, which must be
// exactly size bytes. The file is returned open so that recovery can ask it
// where its data is; the caller closes it.
func openSegment(dir string, base, size int64) (*segment, *os.File, error) {
	name := segmentName(base)
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("commitlog: open segment %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("commitlog: open segment %s: %w", name, err)
	}
	if fi.Size() != size {
		f.Close()
		return nil, nil, fmt.Errorf("commitlog: segment file %s is %d bytes, want %d (Options.SegmentSize); "+
			"the directory was written with another segment size or the file was damaged", name, fi.Size(), size)
	}
	data, err := mmap.MapRegion(f, int(size), mmap.RDWR, 0, 0)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("commitlog: map segment %s: %w", name, err)
	}
	return newSegment(base, path, data, fi.ModTime()), f, nil
}

// syncDir makes the creation, renaming and removal of files in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
