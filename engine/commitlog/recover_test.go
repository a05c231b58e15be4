package commitlog

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

const recSeg = 64 << 10

// fillLog appends n records of sizes 500..2500 to a new log in dir and
// closes it. It returns their offsets and payloads.
func fillLog(t *testing.T, dir string, n int) (offs []int64, payloads [][]byte) {
	t.Helper()
	l := openLog(t, dir, &Options{SegmentSize: recSeg})
	for i := 0; i < n; i++ {
		p := payload(i, 500+(i*131)%2000)
		offs = append(offs, appendOne(t, l, p))
		payloads = append(payloads, p)
	}
	closeLog(t, l)
	return offs, payloads
}

// reopen opens dir again with a log recorder and a corruption collector.
func reopen(t *testing.T, dir string) (*Log, *logRecorder, *[]Corruption) {
	t.Helper()
	rec := &logRecorder{}
	var found []Corruption
	l := openLog(t, dir, &Options{
		SegmentSize:  recSeg,
		Logger:       slog.New(rec),
		OnCorruption: func(c Corruption) { found = append(found, c) },
	})
	return l, rec, &found
}

// checkRecords verifies that the records with the given indexes read back
// intact.
func checkRecords(t *testing.T, l *Log, offs []int64, payloads [][]byte, idx ...int) {
	t.Helper()
	for _, i := range idx {
		got, err := l.Read(offs[i], nil)
		if err != nil {
			t.Fatalf("Read record %d at %d: %v", i, offs[i], err)
		}
		if !bytes.Equal(got, payloads[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

func span(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestRecoverTornTail(t *testing.T) {
	for _, c := range []struct {
		name string
		tear func(t *testing.T, dir string, off int64, n int) // damages the last record (at off, payload n bytes)
	}{
		{"payload cut in the middle", func(t *testing.T, dir string, off int64, n int) {
			base := off - off%recSeg
			patchFile(t, segPath(dir, base), off-base+headerSize+int64(n/2), make([]byte, n-n/2))
		}},
		{"header only", func(t *testing.T, dir string, off int64, n int) {
			base := off - off%recSeg
			patchFile(t, segPath(dir, base), off-base+headerSize, make([]byte, n))
		}},
		{"half a header", func(t *testing.T, dir string, off int64, n int) {
			base := off - off%recSeg
			patchFile(t, segPath(dir, base), off-base+6, make([]byte, n+headerSize-6))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			offs, payloads := fillLog(t, dir, 100)
			last := len(offs) - 1
			c.tear(t, dir, offs[last], len(payloads[last]))
			// As after a crash: the checkpoint is older than the torn record.
			writeCheckpoint(t, dir, offs[last-30], recSeg)

			l, rec, found := reopen(t, dir)
			if l.EndOffset() != offs[last] {
				t.Fatalf("EndOffset %d, want %d (the torn record's offset)", l.EndOffset(), offs[last])
			}
			if len(*found) != 0 {
				t.Fatalf("a torn tail reported as corruption: %v", *found)
			}
			if !rec.has("truncated torn tail") {
				t.Fatalf("torn tail not logged:\n%s", rec)
			}
			checkRecords(t, l, offs, payloads, span(0, last)...)
			_, err := l.Read(offs[last], nil)
			wantErr(t, err, ErrOffsetOutOfRange)
			// The rest of the segment is zero again.
			base := offs[last] - offs[last]%recSeg
			if tail := readFileAt(t, segPath(dir, base), offs[last]-base, int(recSeg-(offs[last]-base))); !allZero(tail) {
				t.Fatal("torn bytes left behind")
			}
			// New appends continue at the end.
			p := payload(1000, 777)
			if off := appendOne(t, l, p); off != offs[last] {
				t.Fatalf("append at %d, want %d", off, offs[last])
			}
			closeLog(t, l)
			l, rec, _ = reopen(t, dir)
			if rec.has("torn") {
				t.Fatalf("clean reopen logged a torn tail:\n%s", rec)
			}
			checkRecords(t, l, append(offs[:last:last], offs[last]), append(payloads[:last:last], p), span(0, last+1)...)
			if got := scanAll(t, l); len(got) != last+1 {
				t.Fatalf("Scan found %d records, want %d", len(got), last+1)
			}
		})
	}
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func TestRecoverGarbageAfterEnd(t *testing.T) {
	dir := t.TempDir()
	offs, payloads := fillLog(t, dir, 100)
	end := offs[99] + FrameSize(len(payloads[99]))
	base := end - end%recSeg
	garbage := payload(7, 300)
	patchFile(t, segPath(dir, base), end-base+1000, garbage)
	// Also a later segment holding garbage: it lies past the end and goes.
	later := base + 3*recSeg
	if err := os.WriteFile(segPath(dir, base+recSeg), make([]byte, recSeg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segPath(dir, base+2*recSeg), make([]byte, recSeg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segPath(dir, later), payload(8, recSeg), 0o644); err != nil {
		t.Fatal(err)
	}
	writeCheckpoint(t, dir, offs[50], recSeg)

	l, rec, found := reopen(t, dir)
	if l.EndOffset() != end {
		t.Fatalf("EndOffset %d, want %d", l.EndOffset(), end)
	}
	if len(*found) != 0 {
		t.Fatalf("corruption reported: %v", *found)
	}
	if !rec.has("truncated torn tail") || !rec.has("removed segments after the end") {
		t.Fatalf("log:\n%s", rec)
	}
	for _, b := range []int64{base + 2*recSeg, later} {
		if _, err := os.Stat(segPath(dir, b)); !os.IsNotExist(err) {
			t.Fatalf("segment %d past the end still there: %v", b, err)
		}
	}
	if got := readFileAt(t, segPath(dir, base), end-base, int(recSeg-(end-base))); !allZero(got) {
		t.Fatal("garbage not zeroed")
	}
	checkRecords(t, l, offs, payloads, span(0, 100)...)
}

func TestRecoverCorruptMiddle(t *testing.T) {
	cases := []struct {
		name       string
		checkpoint func(offs []int64) int64 // -1: keep the one Close wrote
		victim     int                      // record whose payload gets a bit flip
		atOpen     bool                     // found by Open (after the checkpoint) rather than by Scan
	}{
		{"after checkpoint", func(offs []int64) int64 { return offs[10] }, 60, true},
		{"after missing checkpoint", nil, 60, true},
		{"before checkpoint", func([]int64) int64 { return -1 }, 60, false},
		{"first record", func(offs []int64) int64 { return 0 }, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			offs, payloads := fillLog(t, dir, 200)
			switch {
			case c.checkpoint == nil:
				os.Remove(filepath.Join(dir, checkpointName))
			case c.checkpoint(offs) >= 0:
				writeCheckpoint(t, dir, c.checkpoint(offs), recSeg)
			}
			v := c.victim
			flipBit(t, dir, recSeg, offs[v]+headerSize+int64(len(payloads[v])/2))

			l, rec, found := reopen(t, dir)
			want := Corruption{Start: offs[v], End: offs[v+1], Reason: "checksum mismatch"}
			if c.atOpen {
				if len(*found) != 1 || (*found)[0] != want {
					t.Fatalf("Open found %v, want %v", *found, want)
				}
				if !rec.has("corrupt region skipped") {
					t.Fatalf("corruption not logged:\n%s", rec)
				}
			} else if len(*found) != 0 {
				t.Fatalf("Open looked before the checkpoint: %v", *found)
			}
			if end := offs[199] + FrameSize(len(payloads[199])); l.EndOffset() != end {
				t.Fatalf("EndOffset %d, want %d", l.EndOffset(), end)
			}
			got, err := l.Read(offs[v], []byte("dst"))
			wantErr(t, err, ErrCorrupt)
			if string(got) != "dst" {
				t.Fatal("Read returned bytes for a corrupt record")
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Offset != offs[v] || ce.Reason != "checksum mismatch" {
				t.Fatalf("error %#v", err)
			}
			checkRecords(t, l, offs, payloads, append(span(0, v), span(v+1, 200)...)...)
			// Scan skips the record and reports it (once).
			recs := scanAll(t, l)
			if len(recs) != 199 {
				t.Fatalf("Scan found %d records, want 199", len(recs))
			}
			for _, r := range recs {
				if r.off == offs[v] {
					t.Fatal("Scan returned the corrupt record")
				}
			}
			scanAll(t, l)
			if len(*found) != 1 || (*found)[0] != want {
				t.Fatalf("reported %v, want %v once", *found, want)
			}
			if cs := l.Corruptions(); len(cs) != 1 || cs[0] != want {
				t.Fatalf("Corruptions() = %v", cs)
			}
			// The log goes on.
			p := payload(999, 100)
			off := appendOne(t, l, p)
			closeLog(t, l)
			l, _, _ = reopen(t, dir)
			checkRecords(t, l, append(offs, off), append(payloads, p), append(span(0, v), span(v+1, 201)...)...)
		})
	}
}

func TestRecoverCorruptSegmentEnd(t *testing.T) {
	dir := t.TempDir()
	offs, payloads := fillLog(t, dir, 200)
	// The last record of the first segment, and the marker after it.
	last := 0
	for offs[last+1] < recSeg {
		last++
	}
	marker := offs[last] + FrameSize(len(payloads[last]))
	if marker >= recSeg-headerSize {
		t.Skip("no marker in the first segment")
	}
	flipBit(t, dir, recSeg, marker+4)
	writeCheckpoint(t, dir, 0, recSeg)
	l, _, found := reopen(t, dir)
	want := Corruption{Start: marker, End: recSeg, Reason: "end-of-segment marker checksum mismatch"}
	if len(*found) != 1 || (*found)[0] != want {
		t.Fatalf("found %v, want %v", *found, want)
	}
	checkRecords(t, l, offs, payloads, span(0, 200)...)
	if n := len(scanAll(t, l)); n != 200 {
		t.Fatalf("Scan found %d records", n)
	}
}

func TestRecoverCorruptLastRecordBeforeCheckpoint(t *testing.T) {
	dir := t.TempDir()
	offs, payloads := fillLog(t, dir, 50)
	flipBit(t, dir, recSeg, offs[49]+headerSize)
	l, _, found := reopen(t, dir)
	// Trusted at Open; Scan finds it and reports the region up to the end.
	scanAll(t, l)
	want := Corruption{Start: offs[49], End: l.EndOffset(), Reason: "checksum mismatch"}
	if len(*found) != 1 || (*found)[0] != want {
		t.Fatalf("found %v, want %v", *found, want)
	}
	checkRecords(t, l, offs, payloads, span(0, 49)...)
	// Later appends are read past it.
	p := payload(5, 5)
	off := appendOne(t, l, p)
	if recs := scanAll(t, l); len(recs) != 50 || recs[49].off != off {
		t.Fatalf("Scan after append: %d records", len(recs))
	}
}

func TestRecoverCheckpoint(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(t *testing.T, dir string, offs []int64)
		warn  string
	}{
		{"missing", func(t *testing.T, dir string, _ []int64) {
			os.Remove(filepath.Join(dir, checkpointName))
		}, "no checkpoint"},
		{"empty", func(t *testing.T, dir string, _ []int64) {
			os.WriteFile(filepath.Join(dir, checkpointName), nil, 0o644)
		}, "no checkpoint"},
		{"short", func(t *testing.T, dir string, _ []int64) {
			os.WriteFile(filepath.Join(dir, checkpointName), []byte("abc"), 0o644)
		}, "short checkpoint"},
		{"bit flip", func(t *testing.T, dir string, _ []int64) {
			b, _ := os.ReadFile(filepath.Join(dir, checkpointName))
			b[9] ^= 1
			os.WriteFile(filepath.Join(dir, checkpointName), b, 0o644)
		}, "checkpoint checksum mismatch"},
		{"other segment size", func(t *testing.T, dir string, offs []int64) {
			writeCheckpoint(t, dir, offs[10], 2*recSeg)
		}, "checkpoint written with segment size"},
		{"past the end", func(t *testing.T, dir string, offs []int64) {
			writeCheckpoint(t, dir, 100*recSeg, recSeg)
		}, "past the last segment"},
		{"misaligned", func(t *testing.T, dir string, offs []int64) {
			writeCheckpoint(t, dir, offs[10]+3, recSeg)
		}, "not a frame boundary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			offs, payloads := fillLog(t, dir, 150)
			end := offs[149] + FrameSize(len(payloads[149]))
			c.spoil(t, dir, offs)
			l, rec, found := reopen(t, dir)
			if !rec.has(c.warn) || !rec.has("scanning from the first segment") {
				t.Fatalf("log:\n%s", rec)
			}
			if l.EndOffset() != end || len(*found) != 0 {
				t.Fatalf("EndOffset %d (want %d), corruptions %v", l.EndOffset(), end, *found)
			}
			checkRecords(t, l, offs, payloads, span(0, 150)...)
			closeLog(t, l)
			// Open rewrote a good checkpoint.
			b, err := os.ReadFile(filepath.Join(dir, checkpointName))
			if err != nil {
				t.Fatal(err)
			}
			if ck, ok, why := decodeCheckpoint(b, recSeg); !ok || ck.offset != end || !ck.clean {
				t.Fatalf("checkpoint %+v, %v, %s; want %d, clean", ck, ok, why, end)
			}
		})
	}
}

// TestRecoverMarkerWithoutNextSegment covers a crash between writing a
// marker and the next segment being used: the log ends at the boundary.
func TestRecoverMarkerWithoutNextSegment(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, &Options{SegmentSize: recSeg})
	appendOne(t, l, payload(0, recSeg-1000))
	appendOne(t, l, payload(1, 2000))
	closeLog(t, l)
	os.Remove(segPath(dir, recSeg))
	writeCheckpoint(t, dir, 0, recSeg)
	l, _, found := reopen(t, dir)
	if l.EndOffset() != recSeg || len(*found) != 0 {
		t.Fatalf("EndOffset %d, corruptions %v", l.EndOffset(), *found)
	}
	if off := appendOne(t, l, []byte("next")); off != recSeg {
		t.Fatalf("append at %d", off)
	}
}

// TestRecoverStaleFrameNotResurrected: after a tail is truncated and
// overwritten by shorter records, the old records beyond must not reappear.
func TestRecoverStaleFrameNotResurrected(t *testing.T) {
	dir := t.TempDir()
	offs, payloads := fillLog(t, dir, 20)
	// Tear record 10 and leave 11..19 intact after it: Open keeps them as
	// records after a corrupt region...
	flipBit(t, dir, recSeg, offs[10]+headerSize)
	writeCheckpoint(t, dir, 0, recSeg)
	l, _, found := reopen(t, dir)
	if len(*found) != 1 {
		t.Fatalf("found %v", *found)
	}
	checkRecords(t, l, offs, payloads, span(11, 20)...)
	closeLog(t, l)
	// ...but tearing the very last one truncates, and what is appended next
	// can never be confused with it.
	flipBit(t, dir, recSeg, offs[19]+headerSize)
	writeCheckpoint(t, dir, offs[15], recSeg)
	l, _, _ = reopen(t, dir)
	if l.EndOffset() != offs[19] {
		t.Fatalf("EndOffset %d, want %d", l.EndOffset(), offs[19])
	}
	small := appendOne(t, l, []byte("tiny"))
	closeLog(t, l)
	writeCheckpoint(t, dir, 0, recSeg)
	l, _, _ = reopen(t, dir)
	recs := scanAll(t, l)
	if last := recs[len(recs)-1]; last.off != small || string(last.payload) != "tiny" {
		t.Fatalf("last record at %d: %q", last.off, last.payload)
	}
}

func TestCleanShutdownCheckpoint(t *testing.T) {
	dir := t.TempDir()
	offs, payloads := fillLog(t, dir, 100)
	end := offs[99] + FrameSize(len(payloads[99]))
	read := func() checkpoint {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, checkpointName))
		if err != nil {
			t.Fatal(err)
		}
		ck, ok, why := decodeCheckpoint(b, recSeg)
		if !ok {
			t.Fatal(why)
		}
		return ck
	}
	if ck := read(); ck != (checkpoint{offset: end, clean: true}) {
		t.Fatalf("after Close: %+v, want clean at %d", ck, end)
	}
	rec := &logRecorder{}
	var broken atomic.Bool
	l := openLog(t, dir, &Options{SegmentSize: recSeg, Logger: slog.New(rec), hooks: &testHooks{msync: func(b []byte) error {
		if broken.Load() {
			return errors.New("broken")
		}
		return msync(b)
	}}})
	if ck := read(); ck != (checkpoint{offset: end}) {
		t.Fatalf("after Open: %+v, want not clean at %d", ck, end)
	}
	if l.EndOffset() != end || rec.has("WARN") {
		t.Fatalf("EndOffset %d; log:\n%s", l.EndOffset(), rec)
	}
	checkRecords(t, l, offs, payloads, span(0, 100)...)
	// A failed flush leaves the checkpoint not clean.
	broken.Store(true)
	appendOne(t, l, []byte("x"))
	if err := l.Close(); err == nil {
		t.Fatal("Close hid the flush error")
	}
	if ck := read(); ck.clean {
		t.Fatalf("checkpoint %+v is clean after a failed flush", ck)
	}
}
