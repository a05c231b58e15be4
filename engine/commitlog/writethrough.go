package commitlog

import (
	"fmt"
	"os"
)

// Write-through appends (FlushSync).
//
// Appending by copying into the shared mapping is the cheapest way in when
// syncs are rare. When every append is followed by a sync, it is not: the
// kernel makes the pages a sync writes back read-only again, in every
// process mapping them (a TLB shootdown on each CPU), so that the next copy
// into the same page traps and the file system marks it dirty once more.
// With FlushSync the records of each round land on the pages of the last
// one, so each round pays those traps and shootdowns, and the syncs
// themselves take longer. Written with pwrite, the pages are never mapped
// writable: the kernel dirties them as part of the write, and a sync only
// writes them out. On a 2-CPU virtual machine this made a round of twelve
// 1 KiB records and an msync about a quarter faster and took 15% less CPU.
//
// The mapping stays, and readers still read through it: it shows the page
// cache the writes went to.

// openFile opens the active segment's file for writing, when appends
// write through. Called with wmu held (or before the log is shared).
func (l *Log) openFile() error {
	if !l.writeThrough {
		return nil
	}
	l.closeFile()
	f, err := os.OpenFile(l.active.path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("commitlog: open segment %s for writing: %w", segmentName(l.active.base), err)
	}
	l.file = f
	return nil
}

// closeFile closes the file openFile opened, if any.
func (l *Log) closeFile() {
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}

// writeFile is write for write-through appends: the frames are built in a
// buffer, stamped, and written with one pwrite.
func (l *Log) writeFile(recs [][]byte, s Stamper, offs []int64, total int) (int64, error) {
	seg, start := l.active, l.pos
	if cap(l.frames) < total {
		l.frames = make([]byte, total)
	}
	buf := l.frames[:total]
	if err := putBatch(buf, seg.base+int64(start), recs, s, offs); err != nil {
		return 0, err
	}
	if total > maxKeptFrames {
		l.frames = nil // a rare large batch does not stay in memory
	}
	if err := l.pwrite(buf, start); err != nil {
		return 0, err
	}
	l.pos = start + total
	end := seg.base + int64(l.pos)
	l.end.Store(end)
	return end, nil
}

// maxKeptFrames bounds the frame buffer kept between write-through
// appends.
const maxKeptFrames = 1 << 20

// pwrite writes b at pos of the active segment. A failed write fails the
// log: the bytes after its end are then unknown.
func (l *Log) pwrite(b []byte, pos int) error {
	if _, err := l.file.WriteAt(b, int64(pos)); err != nil {
		err = fmt.Errorf("commitlog: write segment %s at %d: %w", segmentName(l.active.base), pos, err)
		l.fail(err)
		l.logger.Error("commitlog: write failed; no more appends are accepted", "err", err)
		return err
	}
	return nil
}
