package commitlog

import (
	"fmt"
	"os"
	"time"
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

// openFile opens the active segment's file for writing: to reserve its
// blocks and, when appends write through, to write them. Nothing past the
// writer's position counts as reserved until reserve says so. Called with
// wmu held (or before the log is shared).
func (l *Log) openFile() error {
	l.closeFile()
	l.reserved.Store(l.active.base + int64(l.pos))
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

// Writing ahead with zeros (FlushSync).
//
// The blocks ahead of the writer are reserved with fallocate (see
// reserve.go), so they start out unwritten. The first write to such a block turns it into a written one,
// a change of the file's block map, and the next sync then has to commit
// the file system's journal as well as write the data: on ext4 that made
// syncs of freshly written records take a third longer or more (210–340
// µs against 165 µs at the median: a small program writing twelve
// 1,208-byte records and syncing, 3,000 rounds). Blocks that already hold
// zeros that reached the disk sync as plain data. So with FlushSync the
// prefaulter keeps the blocks just ahead of the writer written with zeros
// and synced, in the background, before records land on them: a few MiB,
// the price being that those bytes are written twice. `karman bench
// produce --flush sync` gained 10% with 16 producers and 35% with 4.

// zeroChunk is how much zeroAhead writes per hold of the writer lock.
const zeroChunk = 128 << 10

var zeroBlock [zeroChunk]byte

// lockForZeros takes the writer lock for zeroAhead and reserveAhead, or
// reports false once
// the log is closing: Close holds the lock while it waits for the
// background goroutines, the prefaulter among them, so a plain Lock could
// wait forever.
func (l *Log) lockForZeros() bool {
	for !l.wmu.TryLock() {
		select {
		case <-l.stop:
			return false
		case <-time.After(zeroRetry):
		}
	}
	return true
}

// zeroRetry is how long lockForZeros waits before trying again.
const zeroRetry = 20 * time.Microsecond

// zeroAhead writes zeros from the writer's position (rounded up to a page)
// to to, at most to the end of the active segment, and syncs them. It
// never writes below the writer's position: each chunk is written under
// the writer lock, after checking it. It writes only over reserved blocks,
// reserving them first when needed; when that fails (the disk is full) it
// stops for this time. It returns false once it cannot write (the log
// closed or failed, or a write failed), so that the caller stops trying.
func (l *Log) zeroAhead(to int64) bool {
	if !l.writeThrough {
		return false
	}
	var seg *segment
	var from, done int64 // zeros written in seg: [from, done)
	for {
		if !l.lockForZeros() {
			return false
		}
		if l.closed.Load() || l.failure() != nil || l.file == nil {
			l.wmu.Unlock()
			return false
		}
		if seg != nil && seg != l.active {
			l.wmu.Unlock()
			break // the writer moved to the next segment: sync what was written
		}
		seg = l.active
		start := max(l.zeroed, seg.base+int64((l.pos+pageSize-1)&^(pageSize-1)))
		stop := min(to, seg.base+l.segSize, start+zeroChunk)
		if start >= stop {
			l.wmu.Unlock()
			break
		}
		if stop > l.reserved.Load() && l.reserve(max(stop, l.reserved.Load()+reserveChunk)) != nil {
			l.wmu.Unlock()
			break // no room: the prefaulter says so, and the writer will
		}
		_, err := l.file.WriteAt(zeroBlock[:stop-start], start-seg.base)
		if err == nil {
			l.zeroed = stop
		}
		l.wmu.Unlock()
		if err != nil {
			l.logger.Warn("commitlog: cannot write zeros ahead of the writer; syncs will be slower", "err", err)
			return false
		}
		if done == from {
			from = start
		}
		done = stop
	}
	if done == from || !seg.acquire() {
		return true
	}
	defer seg.release()
	a := int(from-seg.base) &^ (pageSize - 1)
	if err := l.msync(seg.data[a:int(done-seg.base)]); err != nil {
		l.logger.Warn("commitlog: cannot sync zeros ahead of the writer; syncs will be slower", "err", err)
		return false
	}
	return true
}
