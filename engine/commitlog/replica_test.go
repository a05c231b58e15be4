package commitlog

import (
	"bytes"
	"errors"
	"testing"
)

// appendVaried appends n records of varied sizes in batches of varied lengths,
// so that segments end with markers and tails.
func appendVaried(t testing.TB, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; {
		k := 1 + i%5
		var batch [][]byte
		for j := 0; j < k && i < n; j++ {
			batch = append(batch, payload(i, 1+(i*37)%700))
			i++
		}
		if err := l.Append(batch, nil, nil); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
}

// replicate copies master's log into replica, chunk bytes at a time, from
// replica's end, as a replication stream does, and returns the number of
// calls it took.
func replicate(t testing.TB, master, replica *Log, chunk int) int {
	t.Helper()
	calls := 0
	var buf []byte
	for off := replica.EndOffset(); off < master.EndOffset(); {
		var next int64
		var err error
		buf, next, err = master.ReadFrames(off, buf[:0], chunk)
		if err != nil {
			t.Fatalf("ReadFrames(%d): %v", off, err)
		}
		if next == off {
			t.Fatalf("ReadFrames(%d) made no progress", off)
		}
		at := off
		if len(buf) == 0 {
			at = next // the master moved to the next segment
		}
		end, err := replica.AppendFrames(at, buf)
		if err != nil {
			t.Fatalf("AppendFrames(%d, %d bytes): %v", at, len(buf), err)
		}
		if end != next {
			t.Fatalf("AppendFrames(%d) ended at %d, the master's frames at %d", at, end, next)
		}
		off = next
		calls++
	}
	return calls
}

// sameLog fails unless a and b hold the same records at the same offsets
// and end at the same offset.
func sameLog(t testing.TB, a, b *Log) {
	t.Helper()
	ra, rb := scanAll(t, a), scanAll(t, b)
	if len(ra) != len(rb) {
		t.Fatalf("%d records against %d", len(ra), len(rb))
	}
	for i := range ra {
		if ra[i].off != rb[i].off || ra[i].next != rb[i].next || !bytes.Equal(ra[i].payload, rb[i].payload) {
			t.Fatalf("record %d: at %d/%d, %d bytes against at %d/%d, %d bytes", i, ra[i].off, ra[i].next, len(ra[i].payload), rb[i].off, rb[i].next, len(rb[i].payload))
		}
	}
	if a.EndOffset() != b.EndOffset() {
		t.Fatalf("ends %d and %d", a.EndOffset(), b.EndOffset())
	}
}

func TestReplicateFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush FlushMode
		chunk int
	}{
		{"async small chunks", FlushAsync, 1},
		{"async large chunks", FlushAsync, 1 << 20},
		{"sync", FlushSync, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{SegmentSize: MinSegmentSize, Flush: tc.flush}
			master := openLog(t, t.TempDir(), o)
			replica := openLog(t, t.TempDir(), o)
			appendVaried(t, master, 150)
			if master.EndOffset() < 3*MinSegmentSize {
				t.Fatalf("the master holds only %d bytes; the test wants several segments", master.EndOffset())
			}
			replicate(t, master, replica, tc.chunk)
			sameLog(t, master, replica)
			// More appends, copied again from where the replica ends.
			appendVaried(t, master, 40)
			replicate(t, master, replica, tc.chunk)
			sameLog(t, master, replica)

			// The copy survives a reopen as it is.
			dir := replica.Dir()
			closeLog(t, replica)
			replica = openLog(t, dir, o)
			sameLog(t, master, replica)
			// And appends of its own follow on.
			off := appendOne(t, replica, []byte("after"))
			if off != master.EndOffset() {
				t.Fatalf("append after the copy at %d, want %d", off, master.EndOffset())
			}
		})
	}
}

func TestReadFramesBounds(t *testing.T) {
	l := openLog(t, t.TempDir(), &Options{SegmentSize: MinSegmentSize})
	a := appendOne(t, l, payload(1, 100))
	b := appendOne(t, l, payload(2, 100))
	got, next, err := l.ReadFrames(a, nil, 1)
	if err != nil || next != b || len(got) != int(b-a) {
		t.Fatalf("ReadFrames with max 1 = %d bytes, next %d, %v; want one frame, next %d", len(got), next, err, b)
	}
	got, next, err = l.ReadFrames(l.EndOffset(), got[:0], 100)
	if err != nil || next != l.EndOffset() || len(got) != 0 {
		t.Fatalf("ReadFrames at the end = %d bytes, next %d, %v", len(got), next, err)
	}
	if _, _, err := l.ReadFrames(a+8, nil, 100); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadFrames inside a record: %v, want ErrCorrupt", err)
	}
	if _, _, err := l.ReadFrames(l.EndOffset()+8, nil, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("ReadFrames past the end: %v, want ErrOffsetOutOfRange", err)
	}
}

func TestAppendFramesRefuses(t *testing.T) {
	o := &Options{SegmentSize: MinSegmentSize}
	master := openLog(t, t.TempDir(), o)
	appendOne(t, master, payload(1, 200))
	second := appendOne(t, master, payload(2, 200))
	frames, _, err := master.ReadFrames(0, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(frames)
	flipped[headerSize+5] ^= 1
	padded := bytes.Clone(frames)
	padded[second-1] = 7 // the first record's padding (200+12 rounds up to 216)
	for _, tc := range []struct {
		name   string
		off    int64
		data   []byte
		target error
	}{
		{"ahead of the end", second, frames[second:], ErrNotAtEnd},
		{"moved frames", 0, frames[second:], ErrCorrupt},
		{"flipped bit", 0, flipped, ErrCorrupt},
		{"non-zero padding", 0, padded, ErrCorrupt},
		{"cut short", 0, frames[:len(frames)-3], ErrCorrupt},
		{"cut header", 0, frames[:5], ErrCorrupt},
		{"unaligned", 4, frames, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replica := openLog(t, t.TempDir(), o)
			end, err := replica.AppendFrames(tc.off, tc.data)
			if !errors.Is(err, tc.target) {
				t.Fatalf("AppendFrames: %v, want %v", err, tc.target)
			}
			if end != 0 || replica.EndOffset() != 0 {
				t.Fatalf("the refused frames moved the end to %d/%d", end, replica.EndOffset())
			}
			// The log still takes the right frames.
			if _, err := replica.AppendFrames(0, frames); err != nil {
				t.Fatalf("AppendFrames after a refusal: %v", err)
			}
			sameLog(t, master, replica)
		})
	}
}

func TestTruncate(t *testing.T) {
	o := &Options{SegmentSize: MinSegmentSize}
	for _, tc := range []struct {
		name string
		pick func(recs []scanned, l *Log) int64
	}{
		{"in the active segment", func(recs []scanned, l *Log) int64 { return recs[len(recs)-3].off }},
		{"two segments back", func(recs []scanned, l *Log) int64 {
			for i := len(recs) - 1; i >= 0; i-- {
				if recs[i].off < l.EndOffset()-l.EndOffset()%MinSegmentSize-MinSegmentSize {
					return recs[i].off
				}
			}
			return 0
		}},
		{"at a segment base", func(recs []scanned, l *Log) int64 { return MinSegmentSize }},
		{"at the end of a segment's records", func(recs []scanned, l *Log) int64 {
			for i := 1; i < len(recs); i++ {
				if recs[i].off/MinSegmentSize != recs[i-1].off/MinSegmentSize {
					return recs[i-1].next
				}
			}
			return 0
		}},
		{"at the start", func(recs []scanned, l *Log) int64 { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, o)
			appendVaried(t, l, 120)
			recs := scanAll(t, l)
			cut := tc.pick(recs, l)
			if err := l.Truncate(cut); err != nil {
				t.Fatalf("Truncate(%d): %v", cut, err)
			}
			if l.EndOffset() != cut {
				t.Fatalf("end %d after Truncate(%d)", l.EndOffset(), cut)
			}
			var kept []scanned
			for _, r := range recs {
				if r.off < cut {
					kept = append(kept, r)
				}
			}
			check := func(l *Log) {
				t.Helper()
				got := scanAll(t, l)
				if len(got) != len(kept) {
					t.Fatalf("%d records after the cut at %d, want %d", len(got), cut, len(kept))
				}
				for i := range got {
					if got[i].off != kept[i].off || !bytes.Equal(got[i].payload, kept[i].payload) {
						t.Fatalf("record %d differs after the cut", i)
					}
				}
			}
			check(l)
			// Appends go on from the cut, and a reopen (after a crash or
			// not) finds the cut and what followed it, nothing of before.
			off := appendOne(t, l, []byte("new"))
			if off != cut {
				t.Fatalf("append after the cut at %d, want %d", off, cut)
			}
			kept = append(kept, scanned{off: off, payload: []byte("new")})
			check(l)
			closeLog(t, l)
			l = openLog(t, dir, o)
			check(l)
			closeLog(t, l)
			writeCheckpoint(t, dir, 0, MinSegmentSize) // as after a crash: scan it all
			l = openLog(t, dir, o)
			check(l)
			if c := l.Corruptions(); len(c) > 0 {
				t.Fatalf("corrupt regions after the cut: %v", c)
			}
		})
	}
}

func TestTruncateRefuses(t *testing.T) {
	l := openLog(t, t.TempDir(), &Options{SegmentSize: MinSegmentSize})
	a := appendOne(t, l, payload(1, 100))
	appendOne(t, l, payload(2, 100))
	end := l.EndOffset()
	for _, tc := range []struct {
		off    int64
		target error
	}{
		{a + 16, ErrCorrupt},
		{a + 3, ErrCorrupt},
		{end + 8, ErrOffsetOutOfRange},
		{-8, ErrOffsetOutOfRange},
	} {
		if err := l.Truncate(tc.off); !errors.Is(err, tc.target) {
			t.Errorf("Truncate(%d): %v, want %v", tc.off, err, tc.target)
		}
	}
	if err := l.Truncate(end); err != nil {
		t.Fatalf("Truncate at the end: %v", err)
	}
	if l.EndOffset() != end || len(scanAll(t, l)) != 2 {
		t.Fatalf("refused truncations changed the log")
	}
}

// A replica that held more than its new master (an old master) cuts back
// to the common prefix and then copies the new master's records.
func TestTruncateThenReplicate(t *testing.T) {
	o := &Options{SegmentSize: MinSegmentSize}
	oldMaster := openLog(t, t.TempDir(), o)
	newMaster := openLog(t, t.TempDir(), o)
	appendVaried(t, oldMaster, 60)
	replicate(t, oldMaster, newMaster, 4096)
	common := oldMaster.EndOffset()
	appendVaried(t, oldMaster, 30) // never reached the new master
	for i := range 25 {            // the new master's own
		appendOne(t, newMaster, payload(1000+i, 300))
	}
	if err := oldMaster.Truncate(common); err != nil {
		t.Fatal(err)
	}
	replicate(t, newMaster, oldMaster, 4096)
	sameLog(t, newMaster, oldMaster)
}

func FuzzCheckFrames(f *testing.F) {
	l := openLog(f, f.TempDir(), &Options{SegmentSize: MinSegmentSize})
	appendOne(f, l, []byte("hello"))
	appendOne(f, l, payload(2, 40))
	frames, _, err := l.ReadFrames(0, nil, 1<<20)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint64(0), frames)
	f.Add(uint64(24), frames[24:])
	f.Add(uint64(8), []byte{0x5a, 0xc3, 0x2b, 0x9e, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, off uint64, data []byte) {
		at := int64(off % (1 << 40))
		n, err := CheckFrames(at, data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("CheckFrames error %v does not match ErrCorrupt", err)
			}
			return
		}
		if at != 0 || len(data) > MinSegmentSize {
			return // a fresh log takes frames at 0, one segment of them
		}
		// Frames that verify are stored as they are and read back.
		replica := openLog(t, t.TempDir(), &Options{SegmentSize: MinSegmentSize})
		if _, err := replica.AppendFrames(at, data); err != nil {
			t.Fatalf("AppendFrames of verified frames: %v", err)
		}
		if got := len(scanAll(t, replica)); got != n {
			t.Fatalf("%d records stored, CheckFrames counted %d", got, n)
		}
		back, _, err := replica.ReadFrames(0, nil, 1<<20)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("ReadFrames gave %d bytes back (%v), %d stored", len(back), err, len(data))
		}
	})
}

// A segment filled to its last byte ends where the next one begins; the
// replica moves on to the next as the master did.
func TestReplicateFullSegment(t *testing.T) {
	o := &Options{SegmentSize: MinSegmentSize}
	master := openLog(t, t.TempDir(), o)
	replica := openLog(t, t.TempDir(), o)
	// Two records that fill the segment exactly, then one more.
	half := MinSegmentSize/2 - headerSize
	appendOne(t, master, payload(1, half))
	appendOne(t, master, payload(2, half))
	if master.EndOffset() != MinSegmentSize {
		t.Fatalf("end %d, want the segment full", master.EndOffset())
	}
	replicate(t, master, replica, 1<<20)
	appendOne(t, master, payload(3, 100))
	replicate(t, master, replica, 1<<20)
	sameLog(t, master, replica)
}
