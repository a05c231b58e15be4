package commitlog

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"testing"
	"unsafe"
)

// With FlushSync, appends write through the active segment's file; the
// records read back through the mapping, across segment rolls, and after
// reopening in either mode.
func TestWriteThroughReadsBack(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, &Options{SegmentSize: 64 << 10, Flush: FlushSync})
	if !l.writeThrough || l.file == nil {
		t.Fatal("a FlushSync log does not write through its file")
	}
	var offs []int64
	for i := range 200 { // about 4 segments
		offs = append(offs, appendOne(t, l, payload(i, 1000)))
	}
	check := func(l *Log) {
		t.Helper()
		for i, off := range offs {
			got, err := l.Read(off, nil)
			if err != nil || !bytes.Equal(got, payload(i, 1000)) {
				t.Fatalf("record %d at %d: %d bytes, %v", i, off, len(got), err)
			}
		}
	}
	check(l)
	closeLog(t, l)
	for _, mode := range []FlushMode{FlushAsync, FlushSync} {
		l := openLog(t, dir, &Options{SegmentSize: 64 << 10, Flush: mode})
		check(l)
		offs = append(offs, appendOne(t, l, payload(len(offs), 1000)))
		check(l)
		closeLog(t, l)
	}
}

// A write that fails fails the log, as a failed sync does: the bytes after
// the end are then unknown.
func TestWriteThroughErrorIsPermanent(t *testing.T) {
	l := openLog(t, t.TempDir(), &Options{SegmentSize: 64 << 10, Flush: FlushSync})
	appendOne(t, l, []byte("fine"))
	l.file.Close() // every later write fails
	err := l.Append([][]byte{[]byte("doomed")}, nil, nil)
	if !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Append after a failed write = %v, want the write error", err)
	}
	if err := l.Append([][]byte{[]byte("later")}, nil, nil); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the next Append = %v, want the first failure", err)
	}
	if got, want := l.EndOffset(), FrameSize(len("fine")); got != want {
		t.Errorf("end moved to %d after a failed write, want %d", got, want)
	}
	l.Close()
}

// zeroedTo returns how far zeroAhead has written zeros.
func zeroedTo(l *Log) int64 {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.zeroed
}

// zeroAhead writes zeros from the writer's page up to the limit asked,
// within the active segment, and syncs them.
func TestZeroAhead(t *testing.T) {
	var mu sync.Mutex
	var synced [][2]uintptr // address ranges msynced
	l := openLog(t, t.TempDir(), &Options{SegmentSize: 1 << 20, Flush: FlushSync, hooks: &testHooks{manualZero: true, msync: func(b []byte) error {
		mu.Lock()
		synced = append(synced, [2]uintptr{uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&b[0])) + uintptr(len(b))})
		mu.Unlock()
		return nil
	}}})
	defer l.Close()
	appendOne(t, l, payload(0, 5000))
	end := l.EndOffset()
	if !l.zeroAhead(end + 300<<10) {
		t.Fatal("zeroAhead gave up")
	}
	from := (end + int64(pageSize) - 1) &^ int64(pageSize-1)
	if got := zeroedTo(l); got != end+300<<10 {
		t.Fatalf("zeroed to %d, want %d", got, end+300<<10)
	}
	seg := l.segmentAt(end)
	lo, hi := uintptr(unsafe.Pointer(&seg.data[from])), uintptr(unsafe.Pointer(&seg.data[end+300<<10-1]))
	mu.Lock()
	covered := false
	for _, r := range synced {
		covered = covered || r[0] <= lo && hi < r[1]
	}
	mu.Unlock()
	if !covered {
		t.Errorf("no msync covered the zeros [%d, %d)", from, end+300<<10)
	}
	// Asked again, it writes only what is new, and never past the segment.
	if !l.zeroAhead(10 << 20) {
		t.Fatal("zeroAhead gave up")
	}
	if got := zeroedTo(l); got != 1<<20 {
		t.Fatalf("zeroed to %d, want the segment's end %d", got, 1<<20)
	}
	// An async log has no file to write through and is left alone.
	a := openLog(t, t.TempDir(), &Options{SegmentSize: 1 << 20})
	defer a.Close()
	if a.zeroAhead(1 << 20) {
		t.Error("zeroAhead wrote ahead of a FlushAsync log")
	}
}

// Zeros written ahead while appends run never land on a record: every
// record reads back, also after reopening, across segment rolls.
func TestZeroAheadKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, &Options{SegmentSize: 256 << 10, Flush: FlushSync})
	const n = 600 // about 5 segments
	offs := make([]int64, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			offs[i] = appendOne(t, l, payload(i, 100+i*7%3000))
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			l.zeroAhead(l.EndOffset() + 64<<10)
		}
	}
	check := func(l *Log) {
		t.Helper()
		for i, off := range offs {
			got, err := l.Read(off, nil)
			if err != nil || !bytes.Equal(got, payload(i, 100+i*7%3000)) {
				t.Fatalf("record %d at %d: %d bytes, %v", i, off, len(got), err)
			}
		}
	}
	check(l)
	closeLog(t, l)
	l = openLog(t, dir, &Options{SegmentSize: 256 << 10, Flush: FlushSync})
	check(l)
	closeLog(t, l)
}
