package commitlog

import (
	"fmt"
	"os"
	"slices"
)

// recovery finds the end of the log at Open; see "Recovery" in the package
// documentation.
type recovery struct {
	l     *Log
	segs  []*segment // all segments, contiguous, oldest first
	files []*os.File // their open files, to find holes
	end   int64      // result: the recovered end offset

	// The data region of segment dataSeg known to hold [dataFrom, dataTo)
	// (frameAt).
	dataSeg, dataFrom, dataTo int
}

// run recovers the log and returns the offset it started verifying from.
func (r *recovery) run() (from int64, err error) {
	l := r.l
	if len(r.segs) == 0 {
		return 0, nil
	}
	first := r.segs[0].base
	last := r.segs[len(r.segs)-1].base + l.segSize
	ck, ok, why := l.ck.read(l.segSize)
	switch {
	case !ok:
	case ck.offset < first:
		ok, why = false, fmt.Sprintf("checkpoint %d is before the first segment", ck.offset)
	case ck.offset > last:
		ok, why = false, fmt.Sprintf("checkpoint %d is past the last segment", ck.offset)
	}
	from = first
	cleanEnd := int64(-1) // where a clean shutdown left the end
	if ok {
		from = ck.offset
		if ck.clean {
			cleanEnd = ck.offset
		}
	} else {
		l.logger.Warn("commitlog: checkpoint not usable; scanning from the first segment",
			"reason", why, "from", first)
	}

	i := int((from - first) / l.segSize)
	pos := int(from - first - int64(i)*l.segSize)
	for {
		if i == len(r.segs) {
			// The last segment is full (or ends with a marker).
			r.end = last
			return from, nil
		}
		seg := r.segs[i]
		f := r.frameAt(i, pos)
		switch f.kind {
		case frameRecord:
			pos += f.size
			continue
		case frameMarker, frameTail:
			i, pos = i+1, 0
			continue
		}
		if at := seg.base + int64(pos); at == cleanEnd && i == len(r.segs)-1 && f.reason == reasonZero {
			// Close left the log here, and wrote nothing after it:
			// no need to look further.
			r.end = at
			return from, nil
		}
		j, q, nonZeroEnd := r.findLater(i, pos)
		if j >= 0 {
			l.noteCorruption(Corruption{Start: seg.base + int64(pos), End: r.segs[j].base + int64(q), Reason: f.reason})
			i, pos = j, q
			continue
		}
		r.end = seg.base + int64(pos)
		return from, r.truncate(i, pos, nonZeroEnd, f.reason)
	}
}

// frameAt decodes the frame at pos of segment i without reading the holes
// of its file: they read as zeros, but a file system that backs a mapping
// with memory (tmpfs) allocates a page for a hole that is read, and when
// it is full the read raises SIGBUS.
func (r *recovery) frameAt(i, pos int) frame {
	seg := r.segs[i]
	if len(seg.data)-pos < headerSize {
		return frame{kind: frameTail}
	}
	if pos >= r.dataTo || r.dataSeg != i || pos < r.dataFrom {
		r.dataSeg, r.dataFrom = i, pos
		r.dataTo = int(dataEnd(r.files[i], int64(pos), int64(len(seg.data))))
	}
	lim := r.dataTo
	if lim < pos+headerSize && !slices.ContainsFunc(seg.data[pos:lim], func(b byte) bool { return b != 0 }) {
		return frame{reason: reasonZero}
	}
	return decodeFrame(seg.data, pos, seg.base+int64(pos), lim)
}

// findLater returns the first valid frame after the invalid one at (i, pos):
// segment j, position q; j is -1 if there is none. It also returns the end
// of the last non-zero word in segment i from pos, or -1 if there is none.
func (r *recovery) findLater(i, pos int) (j, q, nonZeroEnd int) {
	q, nonZeroEnd = r.search(i, pos)
	if q >= 0 {
		return i, q, nonZeroEnd
	}
	for j = i + 1; j < len(r.segs); j++ {
		if q, _ = r.search(j, 0); q >= 0 {
			return j, q, nonZeroEnd
		}
	}
	return -1, -1, nonZeroEnd
}

// search looks for a valid frame in segment i from position from, skipping
// the holes of its file.
func (r *recovery) search(i, from int) (q, nonZeroEnd int) {
	seg, size := r.segs[i], int(r.l.segSize)
	q, nonZeroEnd = -1, -1
	// Reading ahead would pull the holes that follow into the page cache,
	// where the file system then reports them as data: keep to the pages
	// actually looked at.
	adviseRandom(seg.data, true)
	defer adviseRandom(seg.data, false)
	dataRanges(r.files[i], int64(from), int64(size), func(a, b int64) bool {
		// Frames are valid only within the data region: past it, reading
		// the bytes of a frame that claims to be longer could fault.
		p, z := findFrame(seg.data, seg.base, max(int(a), from), int(b), int(b))
		nonZeroEnd = max(nonZeroEnd, z)
		if p >= 0 {
			q = p
			return false
		}
		return true
	})
	return q, nonZeroEnd
}

// truncate ends the log at (i, pos): deletes the later segments, newest
// first, then zeroes the non-zero bytes of segment i from pos and syncs
// them, so that nothing after the end can be read as a record again.
func (r *recovery) truncate(i, pos, nonZeroEnd int, reason string) error {
	l := r.l
	removed := 0
	for k := len(r.segs) - 1; k > i; k-- {
		s := r.segs[k]
		if err := os.Remove(s.path); err != nil {
			return fmt.Errorf("commitlog: open: remove segment after the end: %w", err)
		}
		segs := r.segs[:k:k]
		l.segs.Store(&segs)
		r.segs = segs
		l.diskBytes.Add(-l.segSize)
		s.release()
		removed++
	}
	if removed > 0 {
		if err := syncDir(l.dir); err != nil {
			return fmt.Errorf("commitlog: open: %w", err)
		}
		l.logger.Warn("commitlog: removed segments after the end of the log", "segments", removed, "end", r.end)
	}
	if nonZeroEnd > pos {
		seg := r.segs[i]
		clear(seg.data[pos:nonZeroEnd])
		if err := l.msync(seg.data[pos&^(pageSize-1) : nonZeroEnd]); err != nil {
			return fmt.Errorf("commitlog: open: sync truncated tail: %w", err)
		}
		l.logger.Warn("commitlog: truncated torn tail", "offset", r.end, "bytes", nonZeroEnd-pos, "reason", reason)
	}
	return nil
}
