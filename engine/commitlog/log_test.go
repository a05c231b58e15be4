package commitlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestAppendReadRoundTrip(t *testing.T) {
	const seg = 64 << 10
	maxP := seg - headerSize
	cases := []struct {
		name    string
		batches [][]int // payload sizes, one slice per Append
	}{
		{"one record", [][]int{{100}}},
		{"empty payload", [][]int{{0}, {0, 0}, {1}}},
		{"many small across segments", repeat(300, []int{1000})},
		{"batches across segments", repeat(40, []int{3000, 1, 500, 2999, 12, 7, 4000})},
		{"exact fill, no marker", [][]int{{seg/2 - headerSize}, {seg/2 - headerSize}, {10}}},
		{"eight bytes left, no marker", [][]int{{seg - 8 - headerSize}, {10}}},
		{"marker then batch", [][]int{{seg - 64 - headerSize}, {100, 100}}},
		{"max payload", [][]int{{maxP}, {1}, {maxP}, {maxP}}},
		{"batch of a whole segment", [][]int{{5}, {seg/4 - headerSize, seg/4 - headerSize, seg/4 - headerSize, seg/4 - headerSize}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, &Options{SegmentSize: seg})
			var want []scanned
			i := 0
			for _, sizes := range c.batches {
				recs := make([][]byte, len(sizes))
				for k, n := range sizes {
					recs[k] = payload(i+k, n)
				}
				offs := make([]int64, len(recs))
				before := l.EndOffset()
				if err := l.Append(recs, nil, offs); err != nil {
					t.Fatalf("Append: %v", err)
				}
				// The batch is contiguous and in one segment.
				for k := range recs {
					if k > 0 && offs[k] != offs[k-1]+FrameSize(len(recs[k-1])) {
						t.Fatalf("batch not contiguous: %v", offs)
					}
					if offs[k] < before {
						t.Fatalf("offset %d before previous end %d", offs[k], before)
					}
				}
				last := offs[len(offs)-1] + FrameSize(len(recs[len(recs)-1]))
				if offs[0]/seg != (last-1)/seg {
					t.Fatalf("batch [%d, %d) crosses a segment boundary", offs[0], last)
				}
				if l.EndOffset() != last {
					t.Fatalf("EndOffset %d, want %d", l.EndOffset(), last)
				}
				if offs[0] != before && offs[0]%seg != 0 {
					t.Fatalf("batch at %d neither at the end %d nor at a segment base", offs[0], before)
				}
				for k := range recs {
					want = append(want, scanned{off: offs[k], next: offs[k] + FrameSize(len(recs[k])), payload: recs[k]})
				}
				i += len(sizes)
			}
			check := func(l *Log) {
				t.Helper()
				for _, w := range want {
					got, err := l.Read(w.off, nil)
					if err != nil {
						t.Fatalf("Read(%d): %v", w.off, err)
					}
					if !bytes.Equal(got, w.payload) {
						t.Fatalf("Read(%d): payload differs", w.off)
					}
				}
				got := scanAll(t, l)
				if len(got) != len(want) {
					t.Fatalf("Scan found %d records, want %d", len(got), len(want))
				}
				for k := range got {
					if got[k].off != want[k].off || got[k].next != want[k].next || !bytes.Equal(got[k].payload, want[k].payload) {
						t.Fatalf("Scan record %d: off %d next %d, want off %d next %d", k, got[k].off, got[k].next, want[k].off, want[k].next)
					}
				}
				if len(l.Corruptions()) != 0 {
					t.Fatalf("corruptions: %v", l.Corruptions())
				}
			}
			check(l)
			end := l.EndOffset()
			closeLog(t, l)
			for _, w := range want {
				checkFrameOnDisk(t, dir, seg, w.off, w.payload)
			}
			l = openLog(t, dir, &Options{SegmentSize: seg})
			if l.EndOffset() != end {
				t.Fatalf("reopened EndOffset %d, want %d", l.EndOffset(), end)
			}
			check(l)
			// Appending after reopening continues at the end.
			if off := appendOne(t, l, []byte("after")); off != end && off%seg != 0 {
				t.Fatalf("append after reopen at %d, end was %d", off, end)
			}
		})
	}
}

func repeat(n int, batch []int) [][]int {
	out := make([][]int, n)
	for i := range out {
		out[i] = batch
	}
	return out
}

func TestEndOfSegmentMarker(t *testing.T) {
	const seg = 64 << 10
	dir := t.TempDir()
	l := openLog(t, dir, &Options{SegmentSize: seg})
	first := appendOne(t, l, payload(0, seg-1000))
	end := l.EndOffset()
	second := appendOne(t, l, payload(1, 2000))
	if first != 0 || second != seg {
		t.Fatalf("offsets %d, %d; want 0, %d", first, second, seg)
	}
	s := l.segmentAt(0)
	if f := decodeFrame(s.data, int(end), end, seg); f.kind != frameMarker || f.size != int(seg-end) {
		t.Fatalf("no marker at %d: %+v", end, f)
	}
	_, err := l.Read(end, nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "end of a segment") {
		t.Fatalf("Read(marker) = %v, want a CorruptError about the segment end", err)
	}
	// Scanning from the marker goes to the next segment.
	var offs []int64
	if _, err := l.Scan(end, func(off, next int64, p []byte) error {
		offs = append(offs, off)
		return nil
	}); err != nil || len(offs) != 1 || offs[0] != seg {
		t.Fatalf("Scan from marker: %v, %v", offs, err)
	}
}

func TestReadBadOffsets(t *testing.T) {
	const seg = 64 << 10
	l := openLog(t, t.TempDir(), &Options{SegmentSize: seg})
	var offs []int64
	for i := 0; i < 100; i++ {
		offs = append(offs, appendOne(t, l, payload(i, 2000)))
	}
	end := l.EndOffset()
	cases := []struct {
		name string
		off  int64
		want error
	}{
		{"negative", -8, ErrOffsetOutOfRange},
		{"at end", end, ErrOffsetOutOfRange},
		{"past end", end + 8, ErrOffsetOutOfRange},
		{"far past end", 1 << 50, ErrOffsetOutOfRange},
		{"not aligned", offs[3] + 1, ErrCorrupt},
		{"inside payload", offs[3] + 64, ErrCorrupt},
		{"inside header", offs[3] + 8, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := l.Read(c.off, dst)
			wantErr(t, err, c.want)
			if string(got) != "keep" {
				t.Fatalf("dst changed to %q", got)
			}
			if !strings.HasPrefix(err.Error(), "commitlog: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
		})
	}
	// Offsets below MinOffset, once retention deleted their segment.
	if n, err := l.Retain(l.now().Add(1e12), 1, 0); err != nil || n == 0 {
		t.Fatalf("Retain: %d, %v", n, err)
	}
	_, err := l.Read(offs[0], nil)
	wantErr(t, err, ErrOffsetGone)
	var oe *OffsetError
	if !errors.As(err, &oe) || oe.Min != l.MinOffset() || oe.Op != "read" {
		t.Fatalf("error %#v", err)
	}
	_, err = l.Scan(offs[0], func(int64, int64, []byte) error { return nil })
	wantErr(t, err, ErrOffsetGone)
	_, err = l.Scan(end+8, func(int64, int64, []byte) error { return nil })
	wantErr(t, err, ErrOffsetOutOfRange)
	_, err = l.Scan(offs[99]+4, func(int64, int64, []byte) error { return nil })
	wantErr(t, err, ErrCorrupt)
}

func TestAppendErrors(t *testing.T) {
	const seg = 64 << 10
	l := openLog(t, t.TempDir(), &Options{SegmentSize: seg})
	appendOne(t, l, []byte("x"))
	end := l.EndOffset()
	if l.MaxPayload() != seg-headerSize {
		t.Fatalf("MaxPayload %d", l.MaxPayload())
	}
	err := l.Append([][]byte{make([]byte, seg-headerSize+1)}, nil, nil)
	wantErr(t, err, ErrTooLarge)
	if !strings.Contains(err.Error(), "record 0 has 65525 bytes, the limit is 65524") {
		t.Fatalf("error %q", err)
	}
	err = l.Append([][]byte{make([]byte, seg/2), make([]byte, seg/2)}, nil, nil)
	wantErr(t, err, ErrTooLarge)
	if err := l.Append([][]byte{{1}, {2}}, nil, make([]int64, 1)); err == nil {
		t.Fatal("Append with short offs succeeded")
	}
	if err := l.Append(nil, nil, nil); err != nil {
		t.Fatalf("empty Append: %v", err)
	}
	if l.EndOffset() != end {
		t.Fatalf("failed appends moved the end from %d to %d", end, l.EndOffset())
	}
}

// offsetStamper writes each record's offset into its first 8 bytes.
type offsetStamper struct {
	calls []int
}

func (s *offsetStamper) Stamp(i int, rec []byte, off int64) {
	s.calls = append(s.calls, i)
	binary.LittleEndian.PutUint64(rec, uint64(off))
}

func TestStamper(t *testing.T) {
	const seg = 64 << 10
	l := openLog(t, t.TempDir(), &Options{SegmentSize: seg})
	s := &offsetStamper{}
	for n := 0; n < 50; n++ {
		recs := [][]byte{make([]byte, 3000), make([]byte, 8), make([]byte, 100)}
		offs := make([]int64, 3)
		if err := l.Append(recs, s, offs); err != nil {
			t.Fatal(err)
		}
		for k, off := range offs {
			got, err := l.Read(off, nil)
			if err != nil {
				t.Fatal(err)
			}
			if binary.LittleEndian.Uint64(got) != uint64(off) {
				t.Fatalf("record at %d stamped %d", off, binary.LittleEndian.Uint64(got))
			}
			if !bytes.Equal(got, recs[k]) {
				t.Fatal("stamped record differs from the caller's slice")
			}
		}
	}
	if len(s.calls) != 150 || s.calls[0] != 0 || s.calls[1] != 1 || s.calls[2] != 2 {
		t.Fatalf("Stamp calls %v", s.calls[:6])
	}
}

type panicStamper struct{ at int }

func (s panicStamper) Stamp(i int, rec []byte, off int64) {
	if i == s.at {
		panic("stamp")
	}
}

func TestStamperPanicLeavesNoTrace(t *testing.T) {
	const seg = 64 << 10
	dir := t.TempDir()
	l := openLog(t, dir, &Options{SegmentSize: seg})
	appendOne(t, l, []byte("before"))
	end := l.EndOffset()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		l.Append([][]byte{payload(1, 500), payload(2, 500), payload(3, 500)}, panicStamper{at: 2}, nil)
	}()
	if l.EndOffset() != end {
		t.Fatalf("end moved to %d", l.EndOffset())
	}
	appendOne(t, l, []byte("after"))
	closeLog(t, l)
	// Recovery from the first segment must not find the dropped frames.
	writeCheckpoint(t, dir, 0, seg)
	l = openLog(t, dir, &Options{SegmentSize: seg})
	got := scanAll(t, l)
	if len(got) != 2 || string(got[0].payload) != "before" || string(got[1].payload) != "after" {
		t.Fatalf("records after reopen: %d", len(got))
	}
}

func TestScanCallbackError(t *testing.T) {
	l := openLog(t, t.TempDir(), &Options{SegmentSize: 64 << 10})
	var offs []int64
	for i := 0; i < 10; i++ {
		offs = append(offs, appendOne(t, l, payload(i, 100)))
	}
	stop := errors.New("stop")
	n := 0
	end, err := l.Scan(offs[2], func(off, next int64, p []byte) error {
		n++
		if off == offs[5] {
			return stop
		}
		return nil
	})
	if err != stop || end != offs[5] || n != 4 {
		t.Fatalf("Scan = %d, %v after %d records; want %d, stop, 4", end, err, n, offs[5])
	}
	// Resuming at the returned offset sees the record again.
	end, err = l.Scan(end, func(off, next int64, p []byte) error {
		if off == offs[5] && !bytes.Equal(p, payload(5, 100)) {
			t.Fatal("payload differs")
		}
		return nil
	})
	if err != nil || end != l.EndOffset() {
		t.Fatalf("Scan = %d, %v", end, err)
	}
	if end, err := l.Scan(l.EndOffset(), nil); err != nil || end != l.EndOffset() {
		t.Fatalf("Scan at the end = %d, %v", end, err)
	}
}

// TestScanFollowsWriter has a reader follow the log while it is written,
// as the engine's dispatcher does: it must see every record, in order, and
// never a partial one.
func TestScanFollowsWriter(t *testing.T) {
	const seg = 64 << 10
	const total = 3000
	l := openLog(t, t.TempDir(), &Options{SegmentSize: seg})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < total; {
			n := 1 + i%5
			recs := make([][]byte, 0, n)
			for k := 0; k < n && i < total; k++ {
				recs = append(recs, payload(i, 10+(i*37)%2000))
				i++
			}
			if err := l.Append(recs, nil, nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := 0
	off := int64(0)
	for seen < total {
		var err error
		off, err = l.Scan(off, func(o, next int64, p []byte) error {
			if !bytes.Equal(p, payload(seen, 10+(seen*37)%2000)) {
				t.Fatalf("record %d at %d differs", seen, o)
			}
			seen++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestOpenErrors(t *testing.T) {
	const seg = 64 << 10
	t.Run("options", func(t *testing.T) {
		for _, o := range []Options{
			{SegmentSize: 1000},
			{SegmentSize: 4096 + 8},
			{SegmentSize: MaxSegmentSize * 2},
			{Flush: 7},
			{FlushInterval: -1},
		} {
			if _, err := Open(t.TempDir(), &o); err == nil || !strings.HasPrefix(err.Error(), "commitlog: invalid Options.") {
				t.Errorf("Open(%+v) = %v", o, err)
			}
		}
	})
	t.Run("wrong segment size", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, &Options{SegmentSize: seg})
		appendOne(t, l, []byte("x"))
		closeLog(t, l)
		_, err := Open(dir, &Options{SegmentSize: 2 * seg})
		if err == nil || !strings.Contains(err.Error(), "is 65536 bytes, want 131072 (Options.SegmentSize)") {
			t.Fatalf("Open = %v", err)
		}
	})
	t.Run("short segment file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(segPath(dir, 0), []byte("short"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, &Options{SegmentSize: seg})
		if err == nil || !strings.Contains(err.Error(), "segment file 00000000000000000000 is 5 bytes") {
			t.Fatalf("Open = %v", err)
		}
	})
	t.Run("missing segment", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, &Options{SegmentSize: seg})
		for i := 0; i < 100; i++ {
			appendOne(t, l, payload(i, 2000))
		}
		closeLog(t, l)
		os.Remove(segPath(dir, seg))
		_, err := Open(dir, &Options{SegmentSize: seg})
		if err == nil || !strings.Contains(err.Error(), "not contiguous (segment 00000000000000065536 is missing)") {
			t.Fatalf("Open = %v", err)
		}
	})
	t.Run("misaligned segment name", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(segPath(dir, 4096), make([]byte, seg), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, &Options{SegmentSize: seg}); err == nil || !strings.Contains(err.Error(), "multiple of the segment size") {
			t.Fatalf("Open = %v", err)
		}
	})
	t.Run("in use", func(t *testing.T) {
		dir := t.TempDir()
		openLog(t, dir, &Options{SegmentSize: seg})
		if _, err := Open(dir, &Options{SegmentSize: seg}); err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("second Open = %v", err)
		}
	})
	t.Run("unfinished segment creation", func(t *testing.T) {
		dir := t.TempDir()
		tmp := segPath(dir, 0) + tmpSuffix
		if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		openLog(t, dir, &Options{SegmentSize: seg})
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Fatalf("temporary segment file left: %v", err)
		}
	})
}

func TestDefaults(t *testing.T) {
	o := (*Options)(nil).EnsureDefaults()
	if o.SegmentSize != 1<<30 || o.Flush != FlushAsync || o.FlushInterval != DefaultFlushInterval || o.Logger == nil {
		t.Fatalf("defaults %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// A zero Options (and nil) opens a log with 1 GiB segments.
	dir := t.TempDir()
	l := openLog(t, dir, nil)
	fi, err := os.Stat(segPath(dir, 0))
	if err != nil || fi.Size() != 1<<30 {
		t.Fatalf("segment: %v, %v", fi, err)
	}
	appendOne(t, l, []byte("hello"))
	if got, err := l.Read(0, nil); err != nil || string(got) != "hello" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if FlushSync.String() != "sync" || FlushAsync.String() != "async" {
		t.Fatal("FlushMode.String")
	}
}

func TestClosed(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, &Options{SegmentSize: 64 << 10})
	appendOne(t, l, []byte("x"))
	closeLog(t, l)
	wantErr(t, l.Close(), ErrClosed)
	wantErr(t, l.Append([][]byte{{1}}, nil, nil), ErrClosed)
	_, err := l.Read(0, nil)
	wantErr(t, err, ErrClosed)
	_, err = l.Scan(0, nil)
	wantErr(t, err, ErrClosed)
	wantErr(t, l.Flush(), ErrClosed)
	_, err = l.Retain(l.now(), 1, 0)
	wantErr(t, err, ErrClosed)
	// Close removed the segment made ahead of need.
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "00000000000000000000 LOCK checkpoint" {
		t.Fatalf("files after Close: %v", names)
	}
	if _, err := os.Stat(filepath.Join(dir, checkpointName)); err != nil {
		t.Fatal(err)
	}
}

func TestSegmentCreationFailure(t *testing.T) {
	const seg = 64 << 10
	var failing sync.Map // base -> struct{}
	boom := errors.New("no space left")
	hooks := &testHooks{create: func(base int64) error {
		if _, ok := failing.Load(base); ok {
			return boom
		}
		return nil
	}}
	failing.Store(int64(2*seg), struct{}{})
	l := openLog(t, t.TempDir(), &Options{SegmentSize: seg, hooks: hooks})
	var offs []int64
	var err error
	for err == nil {
		p := payload(len(offs), 5000)
		var o [1]int64
		if err = l.Append([][]byte{p}, nil, o[:]); err == nil {
			offs = append(offs, o[0])
		}
	}
	wantErr(t, err, boom)
	end := l.EndOffset()
	if end >= 2*seg || end < seg {
		t.Fatalf("end %d after failing to roll into segment 2", end)
	}
	// Not permanent: once segments can be created again, appends go on.
	failing.Delete(int64(2 * seg))
	off := appendOne(t, l, payload(99, 5000))
	if off != 2*seg {
		t.Fatalf("append at %d, want %d", off, 2*seg)
	}
	for i, o := range offs {
		if got, err := l.Read(o, nil); err != nil || !bytes.Equal(got, payload(i, 5000)) {
			t.Fatalf("Read(%d): %v", o, err)
		}
	}
}

// growingStamper replaces the next record with a larger one while the
// batch is being written: a caller bug that must not corrupt the log.
type growingStamper struct{ recs [][]byte }

func (s *growingStamper) Stamp(i int, rec []byte, off int64) {
	if i+1 < len(s.recs) {
		s.recs[i+1] = make([]byte, 60000)
	}
}

func TestStamperChangingBatch(t *testing.T) {
	const seg = 64 << 10
	dir := t.TempDir()
	l := openLog(t, dir, &Options{SegmentSize: seg})
	appendOne(t, l, []byte("before"))
	recs := [][]byte{payload(1, 100), payload(2, 100)}
	err := l.Append(recs, &growingStamper{recs: recs}, nil)
	if err == nil || !strings.Contains(err.Error(), "changed size") {
		t.Fatalf("Append = %v", err)
	}
	appendOne(t, l, []byte("after"))
	closeLog(t, l)
	writeCheckpoint(t, dir, 0, seg)
	l = openLog(t, dir, &Options{SegmentSize: seg})
	if got := scanAll(t, l); len(got) != 2 || string(got[1].payload) != "after" {
		t.Fatalf("%d records after reopen", len(got))
	}
}

// TestOnNewSegment checks that the owner hears of each new segment and of
// each segment that could not be made.
func TestOnNewSegment(t *testing.T) {
	var calls atomic.Int32
	var fail atomic.Bool
	hooks := &testHooks{create: func(int64) error {
		if fail.Load() {
			return errors.New("no space left on device")
		}
		return nil
	}}
	l := openLog(t, t.TempDir(), &Options{SegmentSize: 64 << 10, OnNewSegment: func() { calls.Add(1) }, hooks: hooks})
	defer closeLog(t, l)
	for i := range 100 { // about two segments of 1 KiB records
		appendOne(t, l, payload(i, 1000))
	}
	rolled := int32(l.EndOffset() / (64 << 10))
	if got := calls.Load(); got != rolled {
		t.Fatalf("OnNewSegment called %d times for %d rolls", got, rolled)
	}
	fail.Store(true)
	before := calls.Load()
	var err error
	for i := 0; err == nil && i < 200; i++ {
		err = l.Append([][]byte{payload(i, 1000)}, nil, nil)
	}
	if err == nil {
		t.Fatal("appends went on past a segment that could not be made")
	}
	if calls.Load() == before {
		t.Fatal("OnNewSegment was not called when a segment could not be made")
	}
}
