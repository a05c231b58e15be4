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
// than W bytes ahead are, it reserves up to 2W ahead, where W is
// minReserveWindow (2 MiB) or, under load, as far as it prefaults (a
// second of appends, 64 MiB at most). It reserves in such steps, with one
// fallocate made without the writer lock (it changes no byte), and with
// FlushSync syncs the file right after, because a reservation changes the
// file's block map and the next sync must then commit the file system's
// journal too (see writethrough.go): that sync is then the prefaulter's,
// not the records'. An append that finds its bytes not yet reserved
// reserves them itself, at least reserveChunk (on systems without a
// prefaulter, the only way blocks get reserved). When the file system has no
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
	// reserveChunk is the least an append reserves when it must, and,
	// where blocks are reserved by writing zeros, the most the prefaulter
	// writes per hold of the writer lock.
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
	err := l.reserveHook(from, to)
	if err == nil && l.file == nil {
		err = os.ErrClosed
	}
	if err == nil {
		err = l.fallocate(l.file, from-seg.base, to-seg.base)
	}
	if errors.Is(err, errNoFallocate) {
		err = writeZeros(l.file, from-seg.base, to-seg.base)
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

// errNoFallocate says that the file system cannot reserve blocks without
// writing them.
var errNoFallocate = errors.New("commitlog: fallocate is not supported")

// fallocate is fallocate, remembering when it is not supported.
func (l *Log) fallocate(f *os.File, from, to int64) error {
	if l.noFallocate.Load() {
		return errNoFallocate
	}
	err := fallocate(f, from, to)
	if errors.Is(err, errNoFallocate) {
		l.noFallocate.Store(true)
	}
	return err
}

// reserveAhead reserves the blocks up to log offset to, at most to the
// end of the active segment. It returns the error of a reservation that
// failed, and nil once the log is closing.
func (l *Log) reserveAhead(to int64) error {
	if !l.noFallocate.Load() {
		err := l.fallocateAhead(to)
		if !errors.Is(err, errNoFallocate) {
			return err
		}
	}
	// Zeros are data: they are written under the writer lock, past the
	// writer's position, reserveChunk at a time.
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

// fallocateAhead is reserveAhead with fallocate: one call, made on a file
// of its own without the writer lock (fallocate changes no byte, so the
// writer may go on meanwhile, and even reserve the same blocks itself),
// then, with FlushSync, a sync of the file, so that the journal commit the
// new blocks need is not left to a sync of records. It returns
// errNoFallocate where fallocate is not supported.
func (l *Log) fallocateAhead(to int64) error {
	if !l.lockForZeros() {
		return nil
	}
	if l.closed.Load() || l.failure() != nil || l.file == nil {
		l.wmu.Unlock()
		return nil
	}
	seg, from := l.active, l.reserved.Load()
	l.wmu.Unlock()
	to = min((to+int64(pageSize)-1)&^int64(pageSize-1), seg.base+l.segSize)
	if to <= from {
		return nil
	}
	err := l.reserveHook(from, to)
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(seg.path, os.O_WRONLY, 0)
	}
	if err == nil {
		defer f.Close()
		err = l.fallocate(f, from-seg.base, to-seg.base)
	}
	if errors.Is(err, errNoFallocate) {
		return err
	}
	if err == nil && l.writeThrough {
		err = datasync(f)
	}
	if err != nil {
		return spaceErrorf(err, "reserve blocks [%d, %d) of segment %s", from, to, segmentName(seg.base))
	}
	if !l.lockForZeros() {
		return nil
	}
	if l.active == seg && l.reserved.Load() < to {
		l.reserved.Store(to)
	}
	l.wmu.Unlock()
	return nil
}

// reserveHook returns the error the tests' reserve hook makes reserving
// [from, to) fail with, if any.
func (l *Log) reserveHook(from, to int64) error {
	if h := l.opts.hooks; h != nil && h.reserve != nil {
		return h.reserve(from, to)
	}
	return nil
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
