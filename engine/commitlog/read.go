package commitlog

import "errors"

// Read verifies the record whose frame starts at off and appends its
// payload to dst. On error dst is returned unchanged and the error is
// ErrClosed, an *OffsetError (off below MinOffset or not below EndOffset)
// or a *CorruptError (no record that verifies starts at off: the record is
// damaged or off is not a record boundary). Read never returns bytes that
// fail their checksum. It does not allocate unless dst must grow.
func (l *Log) Read(off int64, dst []byte) ([]byte, error) {
	if l.closed.Load() {
		return dst, ErrClosed
	}
	end := l.end.Load()
	if off < 0 || off >= end {
		return dst, &OffsetError{Op: "read", Offset: off, Min: l.MinOffset(), End: end, Err: ErrOffsetOutOfRange}
	}
	if off%frameAlign != 0 {
		return dst, &CorruptError{Offset: off, Reason: "offset is not a frame boundary"}
	}
	s, err := l.acquireAt("read", off, end)
	if err != nil {
		return dst, err
	}
	defer s.release()
	pos := int(off - s.base)
	f := decodeFrame(s.data, pos, off, int(min(l.segSize, end-s.base)))
	switch f.kind {
	case frameRecord:
		return append(dst, s.data[pos+headerSize:pos+headerSize+f.length]...), nil
	case frameMarker, frameTail:
		return dst, &CorruptError{Offset: off, Reason: "offset is the end of a segment, not a record"}
	default:
		return dst, &CorruptError{Offset: off, Reason: f.reason}
	}
}

// Scan calls fn for each valid record from off up to the end of the log as
// it was when Scan started, in log order, and returns the offset where it
// stopped: that end, or the offset of the record for which fn returned an
// error (which Scan then returns). off must be a record boundary: a
// record's offset, a next offset passed to fn, or a value returned by
// EndOffset or an earlier Scan.
//
// fn gets the record's offset, the offset of the frame that follows it and
// the payload, which aliases the log's mapping: it is valid only during the
// call and must not be modified.
//
// End-of-segment markers are skipped. So are corrupt regions: Scan moves on
// to the next valid frame and reports each region (once per Log) to the
// logger, Options.OnCorruption and Corruptions. Scan fails with an
// *OffsetError matching ErrOffsetGone when off, or the segment it reaches,
// has been deleted by retention; MinOffset tells where to start again.
func (l *Log) Scan(off int64, fn func(off, next int64, payload []byte) error) (end int64, err error) {
	if l.closed.Load() {
		return off, ErrClosed
	}
	end = l.end.Load()
	if off < 0 || off > end {
		return off, &OffsetError{Op: "scan", Offset: off, Min: l.MinOffset(), End: end, Err: ErrOffsetOutOfRange}
	}
	if off%frameAlign != 0 {
		return off, &CorruptError{Offset: off, Reason: "offset is not a frame boundary"}
	}
	if fn == nil && off < end {
		return off, errors.New("commitlog: scan: nil callback")
	}
	for off < end {
		s, err := l.acquireAt("scan", off, end)
		if err != nil {
			return off, err
		}
		off, err = l.scanSegment(s, off, end, fn)
		s.release()
		if err != nil {
			return off, err
		}
	}
	return off, nil
}

// scanSegment scans segment s from off up to end or the end of s and
// returns where scanning continues.
func (l *Log) scanSegment(s *segment, off, end int64, fn func(off, next int64, payload []byte) error) (int64, error) {
	size := int(l.segSize)
	limit := int(min(l.segSize, end-s.base))
	pos := int(off - s.base)
	for pos < limit {
		at := s.base + int64(pos)
		f := decodeFrame(s.data, pos, at, limit)
		switch f.kind {
		case frameRecord:
			p := s.data[pos+headerSize : pos+headerSize+f.length : pos+headerSize+f.length]
			if err := fn(at, at+int64(f.size), p); err != nil {
				return at, err
			}
			pos += f.size
			continue
		case frameMarker, frameTail:
			// The next segment. (Only a checkpoint that lies could put
			// the end after a marker in the same segment; stop there.)
			return min(s.base+l.segSize, end), nil
		}
		q, _ := findFrame(s.data, s.base, pos+frameAlign, limit, limit)
		if q < 0 {
			q = limit
		}
		l.noteCorruption(Corruption{Start: at, End: s.base + int64(q), Reason: f.reason})
		pos = q
	}
	if pos >= size {
		return s.base + l.segSize, nil
	}
	return s.base + int64(pos), nil
}
