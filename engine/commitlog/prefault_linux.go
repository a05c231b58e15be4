package commitlog

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Prefaulting: the first write to each page of a fresh segment traps into
// the kernel (or, written through, makes the kernel allocate and zero the
// page), which costs more than copying the record itself. A background
// goroutine therefore populates the pages just ahead of the writer: a
// window sized to about a second of the recent write rate (so idle logs
// prefault nothing and pages populated writable are overwritten soon after
// they are touched, before the kernel would write their zeros back). It
// also keeps the blocks ahead of the writer reserved (see reserve.go), at
// least minReserveWindow and as far as it prefaults, and never prefaults
// a page that is not: populating such a page would allocate its block
// itself, or fail on a full disk.
const (
	prefaultTick      = 50 * time.Millisecond
	prefaultMaxWindow = 64 << 20
	// minZeroWindow is how far ahead of the writer zeroAhead keeps the
	// blocks written even when the log is idle, so that the first syncs
	// of a burst find them so.
	minZeroWindow = 1 << 20
	// maxZeroWindow bounds it: every byte zeroed is written twice, and a
	// large first step would hold up the syncs of the records.
	maxZeroWindow = 4 << 20
)

func (l *Log) prefaultLoop() {
	defer l.background.Done()
	t := time.NewTicker(prefaultTick)
	defer t.Stop()
	last := l.end.Load()
	var done int64 // pages below are populated
	short := false // the last reservation failed
	reserve := func(to int64) {
		err := l.reserveAhead(to)
		if err != nil && !short {
			l.logger.Warn("commitlog: cannot reserve blocks ahead of the writer; appends fail once they reach them", "err", err)
		} else if err == nil && short {
			l.logger.Info("commitlog: blocks ahead of the writer reserved again")
		}
		short = err != nil
	}
	reserve(last + 2*minReserveWindow)
	zero := l.writeThrough && (l.opts.hooks == nil || !l.opts.hooks.manualZero)
	if zero {
		zero = l.zeroAhead(last + minZeroWindow)
	}
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		end := l.end.Load()
		rate := end - last // bytes per tick
		last = end
		window := min(rate*int64(time.Second/prefaultTick), prefaultMaxWindow)
		// Reserve in steps, not a little every tick: each reservation
		// changes the file's block map, and the next sync must then
		// commit the file system's journal (see writethrough.go).
		if ahead := max(window, minReserveWindow); l.reserved.Load()-end < ahead {
			reserve(end + 2*ahead)
		}
		if zero {
			zero = l.zeroAhead(end + min(max(window, minZeroWindow), maxZeroWindow))
		}
		if window <= 0 {
			continue
		}
		from := max(done, end)
		to := min(end+window, l.reserved.Load())
		if !l.prefault(from, to) {
			return
		}
		done = max(done, to)
	}
}

// prefault populates the pages of [from, to) that lie in the segment
// holding from. It returns false when the kernel cannot do it.
func (l *Log) prefault(from, to int64) bool {
	s := l.segmentAt(from)
	if s == nil || !s.acquire() {
		return true
	}
	defer s.release()
	a := (from - s.base) &^ int64(pageSize-1)
	b := min(to-s.base, int64(len(s.data)))
	if b <= a {
		return true
	}
	err := unix.Madvise(s.data[a:b], l.populate())
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		l.logger.Info("commitlog: this kernel cannot prefault pages; appends will take page faults")
		return false
	}
	return true
}

// populate is the advice that prefaults: writable pages for appends that
// copy into the mapping, readable ones for appends that write through
// (which must not find them mapped writable; see writeFile).
func (l *Log) populate() int {
	if l.writeThrough {
		return unix.MADV_POPULATE_READ
	}
	return unix.MADV_POPULATE_WRITE
}
