package commitlog

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

func TestOffsetCRC(t *testing.T) {
	for _, off := range []int64{0, 8, 4096, 1 << 30, 1<<62 + 40, -8} {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(off))
		if got, want := offsetCRC(off), crc32.Checksum(b[:], crc32.MakeTable(crc32.Castagnoli)); got != want {
			t.Errorf("offsetCRC(%d) = %#x, want %#x", off, got, want)
		}
	}
}

func TestFrameSize(t *testing.T) {
	for _, c := range []struct {
		n    int
		want int64
	}{{0, 16}, {1, 16}, {4, 16}, {5, 24}, {12, 24}, {1024, 1040}, {1020, 1032}} {
		if got := FrameSize(c.n); got != c.want {
			t.Errorf("FrameSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestDecodeFrame(t *testing.T) {
	const size = 4096
	const base = 1 << 20
	type testCase struct {
		name   string
		build  func(d []byte) // writes the segment
		pos    int
		limit  int
		kind   frameKind
		length int
		reason string
	}
	rec := func(pos int, p string) func(d []byte) {
		return func(d []byte) { putRecord(d, pos, base+int64(pos), []byte(p)) }
	}
	then := func(fs ...func(d []byte)) func(d []byte) {
		return func(d []byte) {
			for _, f := range fs {
				f(d)
			}
		}
	}
	poke := func(at int, x byte) func(d []byte) { return func(d []byte) { d[at] ^= x } }
	cases := []testCase{
		{name: "record", build: rec(0, "hello"), kind: frameRecord, length: 5},
		{name: "empty record", build: rec(64, ""), pos: 64, kind: frameRecord},
		{name: "max record", build: rec(0, string(make([]byte, size-headerSize))), kind: frameRecord, length: size - headerSize},
		{name: "zero", kind: frameInvalid, reason: "zero header"},
		{name: "tail", pos: size - 8, kind: frameTail},
		{name: "past end", pos: size + 8, kind: frameInvalid},
		{name: "bad magic", build: then(rec(0, "hello"), poke(0, 1)), kind: frameInvalid, reason: "bad magic"},
		{name: "bad crc", build: then(rec(0, "hello"), poke(5, 1)), kind: frameInvalid, reason: "checksum mismatch"},
		{name: "bad length", build: then(rec(0, "hello"), poke(8, 1)), kind: frameInvalid, reason: "checksum mismatch"},
		{name: "huge length", build: then(rec(0, "hello"), poke(11, 0x80)), kind: frameInvalid, reason: "record length exceeds segment"},
		{name: "payload flip", build: then(rec(0, "hello"), poke(13, 4)), kind: frameInvalid, reason: "checksum mismatch"},
		{name: "within limit", build: rec(0, "hello"), limit: 24, kind: frameRecord, length: 5},
		{name: "truncated by limit", build: rec(0, "hello world"), limit: 16, kind: frameInvalid, reason: "truncated record"},
		{name: "header beyond limit", build: rec(0, "hello"), limit: 8, kind: frameInvalid, reason: "truncated frame header"},
		{name: "moved frame", build: func(d []byte) {
			putRecord(d, 0, base, []byte("hello"))
			copy(d[64:], d[:16])
		}, pos: 64, kind: frameInvalid, reason: "checksum mismatch"},
		{name: "marker", build: func(d []byte) { putMarker(d, 4000, base+4000) }, pos: 4000, kind: frameMarker},
		{name: "marker moved", build: func(d []byte) {
			putMarker(d, 4000, base+4000)
			copy(d[3984:], d[4000:4016])
			clear(d[4000:])
			d[3984+8] += 16
		}, pos: 3984, kind: frameInvalid, reason: "end-of-segment marker checksum mismatch"},
		{name: "marker bad length", build: then(func(d []byte) { putMarker(d, 4000, base+4000) }, poke(4008, 8)),
			pos: 4000, kind: frameInvalid, reason: "end-of-segment marker with wrong length"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := make([]byte, size)
			if c.build != nil {
				c.build(d)
			}
			limit := c.limit
			if limit == 0 {
				limit = size
			}
			f := decodeFrame(d, c.pos, base+int64(c.pos), limit)
			if f.kind != c.kind || f.length != c.length || (c.reason != "" && f.reason != c.reason) {
				t.Fatalf("decodeFrame = %+v, want kind %d length %d reason %q", f, c.kind, c.length, c.reason)
			}
			if f.kind == frameRecord && f.size != int(FrameSize(f.length)) {
				t.Fatalf("size %d, want %d", f.size, FrameSize(f.length))
			}
		})
	}
}

func TestFindFrame(t *testing.T) {
	d := make([]byte, 4096)
	putRecord(d, 0, 0, []byte("first"))
	putRecord(d, 1000, 1000, []byte("second"))
	if p, nz := findFrame(d, 0, 8, len(d), len(d)); p != 1000 || nz != 1008 {
		t.Fatalf("findFrame = %d, %d; want 1000, 1008", p, nz)
	}
	d[1014] ^= 1
	if p, nz := findFrame(d, 0, 8, len(d), len(d)); p != -1 || nz != 1024 {
		t.Fatalf("findFrame = %d, %d; want -1, 1024", p, nz)
	}
	if p, nz := findFrame(d, 0, 24, 1000, len(d)); p != -1 || nz != -1 {
		t.Fatalf("findFrame over zeros = %d, %d; want -1, -1", p, nz)
	}
}
