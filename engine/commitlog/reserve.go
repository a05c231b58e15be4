package commitlog

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Reserving blocks ahead of the writer.
//
// A segment file is created at full size but sparse: it holds no blocks,
// so a fresh log costs the disk what it stores rather than two segments
// (the active one and the one made ahead). Blocks are reserved in front of
// the writer instead, with fallocate, and the writer never stores a byte
// into a page whose blocks are not reserved: a store through the mapping
// into a page the file system cannot back (a hole, on a full disk) kills
// the process with SIGBUS, and a write that fails half-way leaves bytes
// past the end that recovery would have to tell from records.
//
// The prefaulter keeps the blocks ahead of the writer reserved: when fewer
// than W bytes ahead are, it reserves up to 2W ahead, reserveChunk per
// hold of the writer lock, where W is minReserveWindow (2 MiB) or, under
// load, as far as it prefaults (a second of appends, 64 MiB at most). It
// reserves in such steps, not a little every tick, because each
// reservation changes the file's block map, and the sync after it must
// then commit the file system's journal too (see writethrough.go); in
// steps, few syncs pay for it. An append that finds its bytes not yet
// reserved reserves them itself, at least reserveChunk. When the file system has no
// room, the append fails with an error matching ErrNoSpace (and the file
// system's own error, syscall.ENOSPC), having written nothing: the log
// stays usable, and the same append succeeds once space is freed.
//
// Where fallocate is not supported (EOPNOTSUPP: some file systems; other
// operating systems), the blocks are reserved by writing zeros over them
// with pwrite, which allocates them or fails with ENOSPC just the same.
// Only bytes at or after the writer's position are reserved, so such
// zeros never land on a record. (A copy-on-write file system may still
// need new blocks when those are rewritten; none of the usual Linux ones
// for a broker's data, ext4 and XFS, does.)

const (
	// reserveChunk is the least an append reserves when it must, and the
	// most the prefaulter reserves per hold of the writer lock.
	reserveChunk = 4 << 20
	// minReserveWindow is how far ahead of the writer the prefaulter
	// keeps blocks reserved even when the log is idle (2 to 4 MiB ahead:
	// see above). With FlushSync it writes zeros at most as far ahead as
	// it reserves, so that those find their blocks reserved.
	minReserveWindow = 2 << 20
)

// reserve reserves the blocks of the active segment from the reserved
// offset up to log offset to (rounded up to a page, at most to the
// segment's end). Called with wmu held.
func (l *Log) reserve(to int64) error {
	seg := l.active
	from := l.reserved.Load()
	to = min((to+int64(pageSize)-1)&^int64(pageSize-1), seg.base+l.segSize)
	if to <= from {
		return nil
	}
	var err error
	if h := l.opts.hooks; h != nil && h.reserve != nil {
		err = h.reserve(from, to)
	}
	if err == nil && l.file == nil {
		err = os.ErrClosed
	}
	if err == nil {
		err = reserveBlocks(l.file, from-seg.base, to-seg.base)
	}
	if err != nil {
		return spaceErrorf(err, "reserve blocks [%d, %d) of segment %s", from, to, segmentName(seg.base))
	}
	l.reserved.Store(to)
	return nil
}

// reserveFor makes sure the writer may store the bytes of the active
// segment up to log offset need, reserving at least reserveChunk more when
// it must. When that fails it tells the owner (Options.OnNewSegment), who
// may free space. Called with wmu held.
func (l *Log) reserveFor(need int64) error {
	cur := l.reserved.Load()
	if need <= cur {
		return nil
	}
	if err := l.reserve(max(need, cur+reserveChunk)); err != nil {
		l.newSegment()
		return err
	}
	return nil
}

// reserveAhead reserves the blocks up to log offset to, at most to the
// end of the active segment, reserveChunk per hold of the writer lock. It
// returns the error of a reservation that failed, and nil once the log is
// closing.
func (l *Log) reserveAhead(to int64) error {
	for {
		if !l.lockForZeros() {
			return nil
		}
		if l.closed.Load() || l.failure() != nil || l.file == nil {
			l.wmu.Unlock()
			return nil
		}
		cur := l.reserved.Load()
		if cur >= min(to, l.active.base+l.segSize) {
			l.wmu.Unlock()
			return nil
		}
		err := l.reserve(min(to, cur+reserveChunk))
		l.wmu.Unlock()
		if err != nil {
			return err
		}
	}
}

// writeZeros writes zeros over f's bytes [from, to).
func writeZeros(f *os.File, from, to int64) error {
	for from < to {
		n := min(to-from, int64(len(zeroBlock)))
		if _, err := f.WriteAt(zeroBlock[:n], from); err != nil {
			return err
		}
		from += n
	}
	return nil
}

// spaceError is an error of the file system that concerns room for the
// log. When the file system is full (ENOSPC, EDQUOT) it matches
// ErrNoSpace as well as the file system's error.
type spaceError struct {
	msg string
	err error
}

func (e *spaceError) Error() string { return e.msg }

func (e *spaceError) Unwrap() []error {
	if isNoSpace(e.err) {
		return []error{ErrNoSpace, e.err}
	}
	return []error{e.err}
}

// spaceErrorf returns "commitlog: <format>: <err>" wrapping err, and
// ErrNoSpace when err says the file system is full.
func spaceErrorf(err error, format string, args ...any) error {
	return &spaceError{msg: "commitlog: " + fmt.Sprintf(format, args...) + ": " + err.Error(), err: err}
}

// isNoSpace reports whether err says the file system (or the user's
// quota) is full.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
