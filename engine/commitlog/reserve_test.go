package commitlog

import (
	"bytes"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
)

// A reservation that fails for lack of space fails the append with an
// error matching ErrNoSpace and ENOSPC, stores nothing, tells the owner,
// and leaves the log usable: the same append succeeds once space is back,
// and everything acknowledged reads back, also after reopening.
func TestReserveFailureKeepsLogUsable(t *testing.T) {
	for _, mode := range []FlushMode{FlushAsync, FlushSync} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			var full atomic.Bool
			var told atomic.Int64
			o := &Options{SegmentSize: 64 << 10, Flush: mode, OnNewSegment: func() { told.Add(1) },
				hooks: &testHooks{reserve: func(from, to int64) error {
					if full.Load() {
						return syscall.ENOSPC
					}
					return nil
				}}}
			l := openLog(t, dir, o)
			var offs []int64
			add := func(i int) error {
				var off [1]int64
				err := l.Append([][]byte{payload(i, 1000)}, nil, off[:])
				if err == nil {
					offs = append(offs, off[0])
				}
				return err
			}
			for i := range 10 {
				if err := add(i); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			// The first segment is reserved to its end (a chunk is larger):
			// appends go on until the next segment needs blocks.
			full.Store(true)
			before := told.Load()
			var err error
			for i := 10; i < 200 && err == nil; i++ {
				err = add(i)
			}
			if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append on a full disk: %v, want ErrNoSpace and ENOSPC", err)
			}
			if len(offs) >= 200 {
				t.Fatal("no append failed")
			}
			if told.Load() == before {
				t.Error("OnNewSegment was not called when reserving failed")
			}
			if l.failure() != nil {
				t.Fatalf("the log failed for good: %v", l.failure())
			}
			end := l.EndOffset()
			if err := add(len(offs)); err == nil {
				t.Fatal("append succeeded while reserving fails")
			}
			if l.EndOffset() != end {
				t.Fatalf("a failed append moved the end from %d to %d", end, l.EndOffset())
			}
			full.Store(false)
			n := len(offs)
			for i := n; i < n+80; i++ { // the same append first, then into a third segment
				if err := add(i); err != nil {
					t.Fatalf("append %d once space is back: %v", i, err)
				}
			}
			check := func(l *Log) {
				t.Helper()
				for i, off := range offs {
					got, err := l.Read(off, nil)
					if err != nil || !bytes.Equal(got, payload(i, 1000)) {
						t.Fatalf("record %d at %d: %d bytes, %v", i, off, len(got), err)
					}
				}
				if got := len(scanAll(t, l)); got != len(offs) {
					t.Fatalf("scan found %d records, %d were acknowledged", got, len(offs))
				}
			}
			check(l)
			closeLog(t, l)
			o.hooks = nil
			l = openLog(t, dir, o)
			check(l)
			closeLog(t, l)
		})
	}
}

// A segment end marker needs its bytes reserved like a record: when they
// cannot be, the roll fails with ErrNoSpace and is tried again later.
func TestReserveMarker(t *testing.T) {
	dir := t.TempDir()
	var full atomic.Bool
	o := &Options{SegmentSize: 8 << 10, Flush: FlushAsync, hooks: &testHooks{manualZero: true, reserve: func(from, to int64) error {
		if full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}}}
	l := openLog(t, dir, o)
	// Then pretend that only what the first record needed was reserved.
	appendOne(t, l, payload(0, 4000))
	full.Store(true)
	l.wmu.Lock()
	l.reserved.Store(l.active.base + int64(l.pos)) // forget the rest
	l.wmu.Unlock()
	err := l.Append([][]byte{payload(1, 6000)}, nil, nil) // does not fit: roll, and a marker
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("roll with no room for the marker: %v, want ErrNoSpace", err)
	}
	if got := len(l.segmentsForTest()); got != 1 {
		t.Fatalf("%d segments after a failed roll, want 1", got)
	}
	full.Store(false)
	off := appendOne(t, l, payload(1, 6000))
	if off != 8<<10 {
		t.Fatalf("record after the roll at %d, want the next segment's base %d", off, 8<<10)
	}
	if got := len(scanAll(t, l)); got != 2 {
		t.Fatalf("scan found %d records, want 2", got)
	}
}

func (l *Log) segmentsForTest() []*segment { return *l.segs.Load() }
