package commitlog

import (
	"encoding/binary"
	"hash/crc32"
)

// Frame layout; see the package documentation for the diagram.
const (
	headerSize  = 12 // magic, CRC, length
	frameAlign  = 8  // frames start at multiples of this
	recordMagic = 0x9e2bc35a
	markerMagic = 0x71d4a8e6
)

// castagnoli is the CRC-32C table; passing it to crc32.Update selects the
// hardware implementation where there is one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FrameSize returns the number of log bytes a record with an n-byte payload
// occupies: the 12-byte header plus the payload, rounded up to 8.
func FrameSize(n int) int64 {
	return alignUp(int64(headerSize) + int64(n))
}

func alignUp(n int64) int64 { return (n + frameAlign - 1) &^ (frameAlign - 1) }

// offsetCRC returns the CRC-32C of off as 8 little-endian bytes, computed
// without a buffer so that it cannot allocate. Continuing it with
// crc32.Update gives the CRC of the offset followed by more bytes.
func offsetCRC(off int64) uint32 {
	c := ^uint32(0)
	for i := 0; i < 8; i++ {
		c = castagnoli[byte(c)^byte(off>>(8*i))] ^ (c >> 8)
	}
	return ^c
}

// reasonZero is why a frame whose header is all zeros is invalid: nothing
// was written there.
const reasonZero = "zero header"

type frameKind uint8

const (
	frameInvalid frameKind = iota // no valid frame here
	frameRecord                   // a record that verifies
	frameMarker                   // an end-of-segment marker that verifies
	frameTail                     // too little room left for a header: the segment ends here
)

// frame is what decodeFrame found.
type frame struct {
	kind   frameKind
	length int    // payload length of a record
	size   int    // bytes the frame occupies: padding included, for a marker up to the segment end
	reason string // why a frame is invalid
}

// decodeFrame inspects the frame at pos of a segment whose mapping is data
// and whose byte pos is at log offset off. Only data[:limit] may be read
// (bytes past limit may be being written); a frame must end at or before
// limit to be valid. pos must be a multiple of frameAlign. It never panics,
// whatever data holds.
func decodeFrame(data []byte, pos int, off int64, limit int) frame {
	if pos < 0 || pos > len(data) || limit > len(data) {
		return frame{reason: "offset outside segment"}
	}
	if len(data)-pos < headerSize {
		return frame{kind: frameTail}
	}
	if limit-pos < headerSize {
		return frame{reason: "truncated frame header"}
	}
	magic := binary.LittleEndian.Uint32(data[pos:])
	sum := binary.LittleEndian.Uint32(data[pos+4:])
	n := binary.LittleEndian.Uint32(data[pos+8:])
	switch magic {
	case recordMagic:
		if uint64(n) > uint64(len(data)-pos-headerSize) {
			return frame{reason: "record length exceeds segment"}
		}
		size := int(FrameSize(int(n)))
		if size > limit-pos {
			return frame{reason: "truncated record"}
		}
		if crc32.Update(offsetCRC(off), castagnoli, data[pos+8:pos+headerSize+int(n)]) != sum {
			return frame{reason: "checksum mismatch"}
		}
		return frame{kind: frameRecord, length: int(n), size: size}
	case markerMagic:
		if uint64(n) != uint64(len(data)-pos) {
			return frame{reason: "end-of-segment marker with wrong length"}
		}
		if crc32.Update(offsetCRC(off), castagnoli, data[pos+8:pos+headerSize]) != sum {
			return frame{reason: "end-of-segment marker checksum mismatch"}
		}
		return frame{kind: frameMarker, size: len(data) - pos}
	case 0:
		if sum == 0 && n == 0 {
			return frame{reason: reasonZero}
		}
	}
	return frame{reason: "bad magic"}
}

// putRecord writes a record frame for payload at pos of data, the mapping
// of a segment whose byte pos is at log offset off, and returns the frame
// size. The caller has checked that the frame fits. The payload is copied
// once and its CRC computed over the copy.
func putRecord(data []byte, pos int, off int64, payload []byte) int {
	n := len(payload)
	end := pos + headerSize + n
	size := int(FrameSize(n))
	binary.LittleEndian.PutUint32(data[pos+8:], uint32(n))
	copy(data[pos+headerSize:end], payload)
	clear(data[end : pos+size])
	binary.LittleEndian.PutUint32(data[pos+4:], crc32.Update(offsetCRC(off), castagnoli, data[pos+8:end]))
	binary.LittleEndian.PutUint32(data[pos:], recordMagic)
	return size
}

// putMarker writes an end-of-segment marker at pos of data, the mapping of
// a segment, which must have room for a header.
func putMarker(data []byte, pos int, off int64) {
	encodeMarker(data[pos:pos+headerSize], len(data)-pos, off)
}

// encodeMarker writes into h (headerSize bytes) the header of a marker at
// log offset off that covers the rest bytes left in its segment.
func encodeMarker(h []byte, rest int, off int64) {
	binary.LittleEndian.PutUint32(h[8:], uint32(rest))
	binary.LittleEndian.PutUint32(h[4:], crc32.Update(offsetCRC(off), castagnoli, h[8:headerSize]))
	binary.LittleEndian.PutUint32(h[0:], markerMagic)
}

// findFrame returns the first position p in [from, to) (rounded up to
// frameAlign) where a valid record or marker starts, or -1. Frames are
// validated against limit as in decodeFrame. It also returns the end of the
// last non-zero 8-byte word it looked at before stopping, or -1 if all were
// zero.
func findFrame(data []byte, base int64, from, to, limit int) (p, nonZeroEnd int) {
	nonZeroEnd = -1
	if to > len(data) {
		to = len(data)
	}
	for p = int(alignUp(int64(from))); p+8 <= to; p += frameAlign {
		w := binary.LittleEndian.Uint64(data[p:])
		if w == 0 {
			continue
		}
		nonZeroEnd = p + 8
		if m := uint32(w); m != recordMagic && m != markerMagic {
			continue
		}
		if f := decodeFrame(data, p, base+int64(p), limit); f.kind == frameRecord || f.kind == frameMarker {
			return p, nonZeroEnd
		}
	}
	return -1, nonZeroEnd
}
