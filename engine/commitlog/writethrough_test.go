package commitlog

import (
	"bytes"
	"errors"
	"os"
	"testing"
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
