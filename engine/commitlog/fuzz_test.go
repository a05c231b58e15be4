package commitlog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

const fuzzSegment = MinSegmentSize

// verifyRecord checks, without decodeFrame, that seg (a whole segment whose
// first byte is at log offset base) holds at off a record frame whose
// payload is p and whose CRC is right.
func verifyRecord(t *testing.T, seg []byte, base, off int64, p []byte) {
	t.Helper()
	pos := off - base
	if pos < 0 || pos+headerSize+int64(len(p)) > int64(len(seg)) {
		t.Fatalf("record at %d (%d bytes) is outside its segment", off, len(p))
	}
	h := seg[pos : pos+headerSize]
	if binary.LittleEndian.Uint32(h) != recordMagic || int(binary.LittleEndian.Uint32(h[8:])) != len(p) {
		t.Fatalf("record at %d: bad header %x", off, h)
	}
	if !bytes.Equal(seg[pos+headerSize:pos+headerSize+int64(len(p))], p) {
		t.Fatalf("record at %d: payload differs from the stored bytes", off)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(off))
	want := crc32.Checksum(append(b[:], seg[pos+8:pos+headerSize+int64(len(p))]...), crc32.MakeTable(crc32.Castagnoli))
	if binary.LittleEndian.Uint32(h[4:]) != want {
		t.Fatalf("record at %d: served with a wrong checksum", off)
	}
}

// FuzzRecovery opens a log whose first one or two segments hold arbitrary
// bytes (and, optionally, a checkpoint with an arbitrary offset, possibly
// claiming a clean shutdown). Open,
// Scan and Read must not panic, must only ever return payloads whose
// checksum verifies, and the log must keep working: an appended record
// reads back, also after a reopen, and the records found the first time are
// all still there.
func FuzzRecovery(f *testing.F) {
	seg := make([]byte, fuzzSegment)
	putRecord(seg, 0, 0, []byte("hello"))
	putRecord(seg, 24, 24, []byte("world"))
	f.Add(seg[:64], uint64(0), false)
	f.Add(seg[:64], uint64(24), true)
	f.Fuzz(func(t *testing.T, content []byte, ck uint64, withCk bool) {
		if len(content) > 2*fuzzSegment {
			content = content[:2*fuzzSegment]
		}
		dir := t.TempDir()
		for base := int64(0); base == 0 || base < int64(len(content)); base += fuzzSegment {
			s := make([]byte, fuzzSegment)
			copy(s, content[min(base, int64(len(content))):])
			if err := os.WriteFile(segPath(dir, base), s, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if withCk {
			// The top bit of ck selects a checkpoint written by Close.
			var b [checkpointSize]byte
			encodeCheckpoint(b[:], checkpoint{offset: int64(ck &^ (1 << 63)), clean: ck>>63 == 1}, fuzzSegment)
			if err := os.WriteFile(filepath.Join(dir, checkpointName), b[:], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		l, err := Open(dir, &Options{SegmentSize: fuzzSegment})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		type rec struct {
			off int64
			p   []byte
		}
		var recs []rec
		if end, err := l.Scan(l.MinOffset(), func(off, next int64, p []byte) error {
			if next != off+FrameSize(len(p)) {
				t.Fatalf("record at %d: next %d", off, next)
			}
			recs = append(recs, rec{off, bytes.Clone(p)})
			return nil
		}); err != nil || end != l.EndOffset() {
			t.Fatalf("Scan = %d, %v; end is %d", end, err, l.EndOffset())
		}
		served := map[int64][]byte{}
		for _, r := range recs {
			got, err := l.Read(r.off, nil)
			if err != nil || !bytes.Equal(got, r.p) {
				t.Fatalf("Read(%d) = %v after Scan returned it", r.off, err)
			}
			served[r.off] = r.p
		}
		// Every aligned offset: an error or a payload that verifies.
		for off := l.MinOffset(); off < l.EndOffset(); off += frameAlign {
			if p, err := l.Read(off, nil); err == nil {
				served[off] = p
			}
		}
		p := []byte("appended after recovery")
		var offs [1]int64
		if err := l.Append([][]byte{p}, nil, offs[:]); err != nil {
			t.Fatalf("Append: %v", err)
		}
		if got, err := l.Read(offs[0], nil); err != nil || !bytes.Equal(got, p) {
			t.Fatalf("Read(appended) = %q, %v", got, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		for off, p := range served {
			base := off - off%fuzzSegment
			s, err := os.ReadFile(segPath(dir, base))
			if err != nil {
				t.Fatal(err)
			}
			verifyRecord(t, s, base, off, p)
		}

		l, err = Open(dir, &Options{SegmentSize: fuzzSegment})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l.Close()
		recs = append(recs, rec{offs[0], p})
		for _, r := range recs {
			if got, err := l.Read(r.off, nil); err != nil || !bytes.Equal(got, r.p) {
				t.Fatalf("after reopen, Read(%d) = %v", r.off, err)
			}
		}
		if withCk {
			// A checkpoint with a valid CRC but a made-up offset can make
			// recovery trust garbage; it must still never serve bad bytes
			// (checked above), but Scan may take another path.
			return
		}
		i := 0
		end, err := l.Scan(l.MinOffset(), func(off, next int64, p []byte) error {
			if i >= len(recs) || recs[i].off != off || !bytes.Equal(recs[i].p, p) {
				t.Fatalf("after reopen, record %d at %d is not what was there before", i, off)
			}
			i++
			return nil
		})
		if err != nil || end != l.EndOffset() {
			t.Fatalf("Scan after reopen = %d, %v; end is %d", end, err, l.EndOffset())
		}
		if i != len(recs) {
			t.Fatalf("after reopen Scan found %d records, want %d", i, len(recs))
		}
	})
}

// FuzzDecodeFrame decodes arbitrary bytes as a segment: decodeFrame and
// findFrame must not panic, and a frame they accept must verify.
func FuzzDecodeFrame(f *testing.F) {
	seg := make([]byte, 64)
	putRecord(seg, 0, 4096, []byte("hello"))
	putMarker(seg, 24, 4096+24)
	f.Add(seg, uint16(0), int64(4096), uint16(64))
	f.Add(seg, uint16(24), int64(4096), uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, pos uint16, base int64, limit uint16) {
		data = data[:len(data)&^(frameAlign-1)]
		p := int(pos) &^ (frameAlign - 1)
		lim := min(int(limit), len(data))
		fr := decodeFrame(data, p, base+int64(p), lim)
		switch fr.kind {
		case frameRecord:
			verifyRecord(t, data, base, base+int64(p), data[p+headerSize:p+headerSize+fr.length])
			if p+fr.size > lim {
				t.Fatalf("record frame of %d bytes at %d passes the limit %d", fr.size, p, lim)
			}
		case frameMarker:
			if p+fr.size != len(data) || p+headerSize > lim {
				t.Fatalf("marker at %d of size %d in %d bytes", p, fr.size, len(data))
			}
		case frameTail:
			if len(data)-p >= headerSize {
				t.Fatalf("tail at %d of %d bytes", p, len(data))
			}
		}
		if q, nz := findFrame(data, base, p, lim, lim); q >= 0 {
			if q < p || q%frameAlign != 0 || nz < q+8 {
				t.Fatalf("findFrame = %d, %d from %d", q, nz, p)
			}
			if k := decodeFrame(data, q, base+int64(q), lim).kind; k != frameRecord && k != frameMarker {
				t.Fatalf("findFrame found %d, which does not decode", q)
			}
		}
	})
}
