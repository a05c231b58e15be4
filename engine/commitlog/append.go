package commitlog

import (
	"fmt"
)

// Stamper fixes up each record just before it is copied into the log. The
// engine uses it to write the record's commit-log offset, queue offset and
// store time into the encoded message.
type Stamper interface {
	// Stamp is called for record i of the batch (rec is recs[i]) with the
	// offset its frame will have. It is called under the append lock, in
	// log order, so it must be quick and must not call the Log. It may
	// change the bytes of rec but not its length.
	Stamp(i int, rec []byte, offset int64)
}

// Append stores recs as one contiguous batch in one segment and writes the
// offset of each record's frame to offs[i] (offs may be nil if the caller
// does not need them; otherwise it must have room for len(recs) offsets).
// s may be nil.
//
// In FlushAsync mode Append returns once the batch is in the log; with
// FlushSync it returns only once the batch is durable, or with the error
// that prevented it. Either way the records are visible to readers (and so
// may be durable) before Append returns. Append does not allocate.
//
// A record larger than MaxPayload, or a batch whose frames do not fit in
// one segment, fails with an error matching ErrTooLarge and stores nothing.
func (l *Log) Append(recs [][]byte, s Stamper, offs []int64) error {
	if len(recs) == 0 {
		return nil
	}
	if offs != nil && len(offs) < len(recs) {
		return fmt.Errorf("commitlog: append: offs has room for %d offsets, the batch has %d records", len(offs), len(recs))
	}
	var total int64
	for i, rec := range recs {
		if len(rec) > l.maxPayload {
			return errorf(ErrTooLarge, "append: record %d has %d bytes, the limit is %d", i, len(rec), l.maxPayload)
		}
		total += FrameSize(len(rec))
	}
	if total > l.segSize {
		return errorf(ErrTooLarge, "append: batch of %d records needs %d bytes, a segment holds %d", len(recs), total, l.segSize)
	}
	end, err := l.write(recs, s, offs, int(total))
	if err != nil {
		return err
	}
	if l.opts.Flush == FlushSync {
		return l.waitFlushed(end)
	}
	return nil
}

// write copies the batch into the log under the writer lock and returns
// the new end offset.
func (l *Log) write(recs [][]byte, s Stamper, offs []int64, total int) (end int64, err error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if err := l.failure(); err != nil {
		return 0, err
	}
	if l.pos+total > int(l.segSize) {
		if err := l.roll(); err != nil {
			return 0, err
		}
	}
	if err := l.reserveFor(l.active.base + int64(l.pos+total)); err != nil {
		return 0, err
	}
	if l.writeThrough {
		return l.writeFile(recs, s, offs, total)
	}
	seg, start := l.active, l.pos
	done := false
	defer func() {
		if !done {
			// s panicked or the batch changed: drop the frames written so
			// far, which were never published, so that they cannot surface
			// later.
			clear(seg.data[start : start+total])
		}
	}()
	if err := putBatch(seg.data[start:start+total], seg.base+int64(start), recs, s, offs); err != nil {
		return 0, err
	}
	done = true
	l.pos = start + total
	end = seg.base + int64(l.pos)
	l.end.Store(end)
	return end, nil
}

// putBatch writes the frames of recs into dst, which is exactly their size
// and lies at log offset off, stamping each record just before it is
// copied and writing each frame's offset to offs[i] (when offs is not nil).
func putBatch(dst []byte, off int64, recs [][]byte, s Stamper, offs []int64) error {
	pos := 0
	for i, rec := range recs {
		at := off + int64(pos)
		if s != nil {
			s.Stamp(i, rec, at)
		}
		if pos+int(FrameSize(len(rec))) > len(dst) {
			// recs changed under us (the Stamper replaced a record).
			return fmt.Errorf("commitlog: append: record %d changed size during the append", i)
		}
		pos += putRecord(dst, pos, at, rec)
		if offs != nil {
			offs[i] = at
		}
	}
	return nil
}

// roll moves the writer to the next segment, ending the current one with a
// marker. Called with wmu held.
func (l *Log) roll() error {
	old := l.active
	next, err := l.nextSegment(old.base + l.segSize)
	l.newSegment()
	if err != nil {
		return err
	}
	if err := l.endSegment(); err != nil {
		l.discardSegment(next)
		return err
	}
	old.lastWrite.Store(l.now().UnixNano())

	l.segMu.Lock()
	cur := *l.segs.Load()
	segs := make([]*segment, len(cur), len(cur)+1)
	copy(segs, cur)
	segs = append(segs, next)
	l.segs.Store(&segs)
	l.segMu.Unlock()

	l.active, l.pos = next, 0
	// Publish only after the list holds next (see segmentAt).
	l.end.Store(next.base)
	l.requestPrealloc(next.base + l.segSize)
	if err := l.openFile(); err != nil {
		// The writer is in a segment it cannot write: no append can
		// succeed any more.
		l.fail(err)
		return err
	}
	return nil
}

// endSegment ends the active segment with a marker, if there is room for
// one. Called with wmu held.
func (l *Log) endSegment() error {
	if int(l.segSize)-l.pos < headerSize {
		return nil
	}
	off := l.active.base + int64(l.pos)
	if err := l.reserveFor(off + headerSize); err != nil {
		return err
	}
	if !l.writeThrough {
		putMarker(l.active.data, l.pos, off)
		return nil
	}
	var h [headerSize]byte
	encodeMarker(h[:], int(l.segSize)-l.pos, off)
	return l.pwrite(h[:], l.pos)
}

// newSegment calls Options.OnNewSegment, if set.
func (l *Log) newSegment() {
	if l.opts.OnNewSegment != nil {
		l.opts.OnNewSegment()
	}
}

// nextSegment returns the segment for base: the preallocated one if it is
// ready (waiting for it if it is being made), else a new one.
func (l *Log) nextSegment(base int64) (*segment, error) {
	if l.prePending {
		r := <-l.preRes
		l.prePending = false
		if r.err == nil && r.seg.base == base {
			return r.seg, nil
		}
		if r.seg != nil {
			l.discardSegment(r.seg)
		}
		if r.err != nil {
			l.logger.Warn("commitlog: preallocating a segment failed; retrying", "base", base, "err", r.err)
		}
	}
	return l.createSegment(base)
}

// createSegment creates the segment at base and counts its bytes. An
// error that says the file system is full matches ErrNoSpace.
func (l *Log) createSegment(base int64) (*segment, error) {
	if h := l.opts.hooks; h != nil && h.create != nil {
		if err := h.create(base); err != nil {
			return nil, spaceErrorf(err, "create segment %s", segmentName(base))
		}
	}
	s, err := createSegmentFile(l.dir, base, l.segSize, l.now())
	if err != nil {
		if isNoSpace(err) {
			return nil, &spaceError{msg: err.Error(), err: err}
		}
		return nil, err
	}
	l.diskBytes.Add(l.segSize)
	return s, nil
}

// requestPrealloc asks the preallocator for the segment at base. Called
// with wmu held (or before the log is shared).
func (l *Log) requestPrealloc(base int64) {
	if l.prePending {
		return
	}
	l.prePending = true
	l.preReq <- base
}

// preallocLoop creates segments ahead of need, one at a time, so that the
// writer rarely waits for a file to be created when it rolls.
func (l *Log) preallocLoop() {
	defer l.background.Done()
	for {
		select {
		case <-l.stop:
			return
		case base := <-l.preReq:
			s, err := l.createSegment(base)
			l.preRes <- preallocated{seg: s, err: err}
		}
	}
}
