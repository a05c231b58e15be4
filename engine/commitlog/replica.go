package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
)

// ErrNotAtEnd means frames were offered for an offset other than the end
// of the log (or the next segment's base): a replica and its master
// disagree on where the replica's log ends. Nothing was written.
var ErrNotAtEnd = errors.New("commitlog: frames not at the end of the log")

// ReadFrames appends to dst the record frames, exactly as stored (headers
// and padding included), that start at off, all in one segment, at most
// max bytes of them (but at least one frame, whatever its size), and
// returns where the log goes on after them. A replica stores them with
// AppendFrames at the same offset.
//
// At the end of a segment (a marker or a tail too short for one) it
// returns no frame and the next segment's base; at the end of the log no
// frame and off. off must be a record boundary, as for Scan. A frame that
// does not verify at off is an *CorruptError; one after the first valid
// frames ends the batch, so that the next call reports it. Offsets that
// are gone or out of range are *OffsetError.
func (l *Log) ReadFrames(off int64, dst []byte, max int) ([]byte, int64, error) {
	if l.closed.Load() {
		return dst, off, ErrClosed
	}
	end := l.end.Load()
	if off < 0 || off > end {
		return dst, off, &OffsetError{Op: "read frames", Offset: off, Min: l.MinOffset(), End: end, Err: ErrOffsetOutOfRange}
	}
	if off%frameAlign != 0 {
		return dst, off, &CorruptError{Offset: off, Reason: "offset is not a frame boundary"}
	}
	if off == end {
		return dst, off, nil
	}
	s, err := l.acquireAt("read frames", off, end)
	if err != nil {
		return dst, off, err
	}
	defer s.release()
	limit := int(min(l.segSize, end-s.base))
	start := int(off - s.base)
	pos := start
	for pos < limit {
		f := decodeFrame(s.data, pos, s.base+int64(pos), limit)
		switch f.kind {
		case frameRecord:
			if pos > start && pos-start+f.size > max {
				return append(dst, s.data[start:pos]...), s.base + int64(pos), nil
			}
			pos += f.size
			continue
		case frameMarker, frameTail:
			if pos == start {
				return dst, s.base + l.segSize, nil
			}
		default:
			if pos == start {
				return dst, off, &CorruptError{Offset: off, Reason: f.reason}
			}
		}
		break
	}
	return append(dst, s.data[start:pos]...), s.base + int64(pos), nil
}

// CheckFrames verifies that data is a sequence of whole record frames
// whose first byte is at log offset off, as ReadFrames returns them: each
// has the record magic, a length that fits, a checksum that verifies at
// its offset and zero padding. It returns the number of frames, or a
// *CorruptError naming the first offset that does not verify. It never
// panics, whatever data holds.
func CheckFrames(off int64, data []byte) (int, error) {
	if off < 0 || off%frameAlign != 0 {
		return 0, &CorruptError{Offset: off, Reason: "offset is not a frame boundary"}
	}
	n := 0
	for pos := 0; pos < len(data); n++ {
		at := off + int64(pos)
		rest := data[pos:]
		if len(rest) < headerSize {
			return n, &CorruptError{Offset: at, Reason: "truncated frame header"}
		}
		if binary.LittleEndian.Uint32(rest) != recordMagic {
			return n, &CorruptError{Offset: at, Reason: "bad magic"}
		}
		length := binary.LittleEndian.Uint32(rest[8:])
		if uint64(length) > uint64(len(rest)-headerSize) {
			return n, &CorruptError{Offset: at, Reason: "truncated record"}
		}
		size := int(FrameSize(int(length)))
		if size > len(rest) {
			return n, &CorruptError{Offset: at, Reason: "truncated padding"}
		}
		if crc32.Update(offsetCRC(at), castagnoli, rest[8:headerSize+int(length)]) != binary.LittleEndian.Uint32(rest[4:]) {
			return n, &CorruptError{Offset: at, Reason: "checksum mismatch"}
		}
		for _, b := range rest[headerSize+int(length) : size] {
			if b != 0 {
				return n, &CorruptError{Offset: at, Reason: "non-zero padding"}
			}
		}
		pos += size
	}
	return n, nil
}

// AppendFrames stores data, record frames as ReadFrames returns them from
// a master's log, at offset off, which must be the end of this log or,
// to move on to the next segment as the master did, that segment's base
// (the current one is ended with a marker, as the master's was). Every
// frame is verified first (see CheckFrames) and the frames must fit in
// the segment; otherwise nothing is stored and the error is a
// *CorruptError, ErrTooLarge or ErrNotAtEnd. It returns the new end.
// Flushing is as for Append.
func (l *Log) AppendFrames(off int64, data []byte) (int64, error) {
	if _, err := CheckFrames(off, data); err != nil {
		return l.end.Load(), err
	}
	end, err := l.writeFrames(off, data)
	if err != nil {
		return end, err
	}
	if l.opts.Flush == FlushSync && len(data) > 0 {
		return end, l.waitFlushed(end)
	}
	return end, nil
}

func (l *Log) writeFrames(off int64, data []byte) (int64, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if err := l.failure(); err != nil {
		return l.end.Load(), err
	}
	cur := l.active.base + int64(l.pos)
	next := l.active.base + l.segSize
	switch {
	case off == cur && (len(data) == 0 || int64(l.pos)+int64(len(data)) <= l.segSize):
	case off == next:
		// (A segment the master filled to the byte ends where the next
		// begins: cur == next, and the frames go to the next.)
		if err := l.roll(); err != nil {
			return l.end.Load(), err
		}
	default:
		return cur, errorf(ErrNotAtEnd, "append frames at %d: the log ends at %d", off, cur)
	}
	if len(data) == 0 {
		return l.end.Load(), nil
	}
	if int64(l.pos)+int64(len(data)) > l.segSize {
		return cur, errorf(ErrTooLarge, "append frames at %d: %d bytes do not fit in the %d left in the segment", off, len(data), l.segSize-int64(l.pos))
	}
	if err := l.reserveFor(off + int64(len(data))); err != nil {
		return cur, err
	}
	if l.writeThrough {
		if err := l.pwrite(data, l.pos); err != nil {
			return cur, err
		}
	} else {
		copy(l.active.data[l.pos:], data)
	}
	l.pos += len(data)
	end := l.active.base + int64(l.pos)
	l.end.Store(end)
	return end, nil
}

// Truncate cuts the log at off, a record boundary (a record's offset, the
// end of a segment's records or a segment's base) at or after MinOffset:
// every record from off on is gone and the next append goes to off. It
// is how a replica drops what its new master does not have. Truncating
// at EndOffset does nothing.
//
// The cut survives a crash at any point as a longer prefix or as the cut
// itself, never as a log with a hole: the checkpoint is moved back first,
// then the later segments are deleted (the last first), then the bytes of
// the cut segment from off on are zeroed and synced. Readers that hold
// offsets past the cut get errors for them (ErrOffsetOutOfRange, or
// ErrCorrupt while the bytes are being zeroed). Appends wait for it.
func (l *Log) Truncate(off int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.failure(); err != nil {
		return err
	}
	end := l.end.Load()
	if off == end {
		return nil
	}
	if first := l.MinOffset(); off < first || off > end {
		return &OffsetError{Op: "truncate", Offset: off, Min: first, End: end, Err: ErrOffsetOutOfRange}
	}
	if off%frameAlign != 0 {
		return &CorruptError{Offset: off, Reason: "truncate: offset is not a frame boundary"}
	}
	cut := l.segmentAt(off)
	if cut == nil {
		return &OffsetError{Op: "truncate", Offset: off, Min: l.MinOffset(), End: end, Err: ErrOffsetGone}
	}
	pos := int(off - cut.base)
	if pos > 0 {
		if f := decodeFrame(cut.data, pos, off, int(min(l.segSize, end-cut.base))); f.kind == frameInvalid {
			return &CorruptError{Offset: off, Reason: "truncate: no record starts here: " + f.reason}
		}
	}

	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.ck == nil {
		return ErrClosed
	}
	// (a) The checkpoint must not vouch for anything past the cut.
	ckOff := min(l.flushed.Load(), off)
	if err := l.ck.write(checkpoint{offset: ckOff}, l.segSize); err != nil {
		return fmt.Errorf("commitlog: truncate at %d: %w", off, err)
	}
	l.ckOffset = ckOff
	l.flushMu.Lock()
	l.flushed.Store(ckOff)
	l.flushMu.Unlock()

	// (b) Delete the segments after the cut one, the last first, so that
	// a crash leaves a contiguous log.
	l.segMu.Lock()
	segs := *l.segs.Load()
	i := int((cut.base - segs[0].base) / l.segSize)
	drop := segs[i+1:]
	kept := make([]*segment, i+1)
	copy(kept, segs[:i+1])
	l.segs.Store(&kept)
	l.segMu.Unlock()
	if len(drop) > 0 {
		l.closeFile()
	}
	var errs []error
	for j := len(drop) - 1; j >= 0; j-- {
		s := drop[j]
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		l.diskBytes.Add(-l.segSize)
		s.release()
	}
	if len(drop) > 0 {
		if err := syncDir(l.dir); err != nil {
			errs = append(errs, err)
		}
	}

	// (c) Zero what the cut segment holds from off on, and sync it.
	written := l.pos
	if cut != l.active {
		written = writtenExtent(cut.data, cut.base, pos)
	}
	if written > pos {
		clear(cut.data[pos:written])
		if err := l.msync(cut.data[pos&^(pageSize-1) : written]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		err := fmt.Errorf("commitlog: truncate at %d: %w", off, errors.Join(errs...))
		l.fail(err)
		return err
	}

	if cut != l.active {
		l.active = cut
		l.pos = pos
		if err := l.openFile(); err != nil {
			l.fail(err)
			return err
		}
	}
	l.pos = pos
	l.zeroed = off
	l.end.Store(off)
	l.logger.Warn("commitlog: truncated", "at", off, "was", end, "segmentsDeleted", len(drop))
	return nil
}

// writtenExtent returns where the written bytes of a segment that is not
// the active one end, looking from pos: past its end-of-segment marker,
// or the segment's end. Corrupt regions are passed over, as recovery
// would.
func writtenExtent(data []byte, base int64, pos int) int {
	for pos < len(data) {
		f := decodeFrame(data, pos, base+int64(pos), len(data))
		switch f.kind {
		case frameRecord:
			pos += f.size
			continue
		case frameMarker:
			return pos + headerSize
		case frameTail:
			return len(data)
		}
		q, _ := findFrame(data, base, pos+frameAlign, len(data), len(data))
		if q < 0 {
			// Nothing valid after pos: what follows is zeros or damage;
			// zero to the last non-zero word.
			_, nz := findFrame(data, base, pos, len(data), len(data))
			return max(pos, nz)
		}
		pos = q
	}
	return len(data)
}
