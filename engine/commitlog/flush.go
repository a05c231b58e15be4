package commitlog

import (
	"fmt"
	"time"
)

// Flush makes every record appended so far durable and writes the
// checkpoint.
func (l *Log) Flush() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.flush(true)
}

// flush syncs [FlushedOffset, EndOffset), publishes the new flushed offset
// and wakes the appenders it covers. It then writes the checkpoint if
// force is set or FlushInterval has passed since the last one. A sync
// failure is permanent.
func (l *Log) flush(force bool) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.ck == nil {
		return ErrClosed
	}
	if err := l.failure(); err != nil {
		return err
	}
	// Every appender counted in arrived wrote its records before it
	// counted itself, so before end is loaded: the sync covers them.
	arrived := l.arrivals.Load()
	from, to := l.flushed.Load(), l.end.Load()
	if to <= from {
		l.covered = arrived
	} else {
		start := time.Now()
		err := l.syncRange(from, to)
		l.lastSync = time.Since(start)
		l.lastGroup, l.lastLate = arrived-l.covered, l.arrivals.Load()-arrived
		l.covered = arrived
		if err == nil {
			if h := l.opts.hooks; h != nil && h.synced != nil {
				h.synced(to)
			}
		}
		l.flushMu.Lock()
		if err != nil {
			err = fmt.Errorf("commitlog: flush [%d, %d): %w", from, to, err)
			l.flushErr = err
			l.fail(err)
		} else {
			l.flushed.Store(to)
		}
		l.flushMu.Unlock()
		// Woken after the unlock, the appenders do not find the mutex
		// held. None can miss the wake-up: each that saw an older state
		// queued itself for it (flushCond.Wait) before unlocking.
		l.flushCond.Broadcast()
		if err != nil {
			l.logger.Error("commitlog: flush failed; no more appends are accepted", "err", err)
			return err
		}
	}
	flushed := l.flushed.Load()
	if flushed > l.ckOffset && (force || time.Since(l.ckTime) >= l.opts.FlushInterval) {
		if err := l.ck.write(checkpoint{offset: flushed}, l.segSize); err != nil {
			// The records are durable; a stale checkpoint only makes
			// recovery scan further.
			l.logger.Warn("commitlog: checkpoint not written", "err", err)
			return err
		}
		l.ckOffset, l.ckTime = flushed, time.Now()
	}
	return nil
}

// syncRange msyncs the log bytes [from, to), one segment at a time, from
// the page holding from. Segments deleted meanwhile are skipped.
func (l *Log) syncRange(from, to int64) error {
	for off := from; off < to; {
		stop := min(to, off-off%l.segSize+l.segSize)
		if s := l.segmentAt(off); s != nil && s.acquire() {
			a := int(off-s.base) &^ (pageSize - 1)
			err := l.msync(s.data[a:int(stop-s.base)])
			s.release()
			if err != nil {
				return err
			}
		}
		off = stop
	}
	return nil
}

func (l *Log) msync(b []byte) error {
	if h := l.opts.hooks; h != nil && h.msync != nil {
		return h.msync(b)
	}
	return msync(b)
}

// waitFlushed blocks until every record before end is durable (group
// commit: the flusher goroutine syncs for everyone waiting).
func (l *Log) waitFlushed(end int64) error {
	if l.flushed.Load() >= end {
		return nil
	}
	if l.arrivals.Add(1) >= l.gatherUntil.Load() {
		select {
		case l.kick <- struct{}{}:
		default: // a flush is already requested; it will cover end
		}
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	for l.flushed.Load() < end {
		if l.flushErr != nil {
			return l.flushErr
		}
		if l.flushDone {
			return ErrClosed
		}
		l.flushCond.Wait()
	}
	return nil
}

// flushLoop is the flusher goroutine: it flushes when an appender asks
// (FlushSync) and every FlushInterval (both modes).
func (l *Log) flushLoop() {
	defer l.background.Done()
	t := time.NewTicker(l.opts.FlushInterval)
	defer t.Stop()
	gt := time.NewTimer(time.Hour)
	gt.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.kick:
			if !l.gather(gt) {
				return
			}
			l.flush(false)
		case <-t.C:
			l.flush(true)
		}
	}
}

// gatherMax bounds how long a sync waits for more appenders.
const gatherMax = 2 * time.Millisecond

// gather waits before a sync that an appender asked for, so that the sync
// covers more appenders; it reports false when the log is closing.
//
// Appenders that each wait for their previous append (a producer with a
// network round trip between its acknowledgement and its next message)
// come back from a sync a little apart. A flusher that syncs as soon as
// the first is back covers it alone, and the others then wait for the
// rest of that sync and all of the next: syncs cover few appenders, or
// the appenders split into groups whose syncs take turns. Either way
// every cycle costs about two syncs. So the flusher expects as many
// appenders as the last sync covered plus those that arrived while it
// ran, and waits for them: until that many are waiting, or for as long as
// waitFor allows, whichever comes first. It does not wait when that many
// are waiting already, nor when the last sync covered only one appender
// and none arrived meanwhile (a lone appender); a wait that ends early
// teaches it to expect fewer next time.
func (l *Log) gather(t *time.Timer) bool {
	l.syncMu.Lock()
	expect := l.lastGroup + l.lastLate
	covered := l.covered
	lastSync := l.lastSync
	l.syncMu.Unlock()
	// Nobody waits when the kick came from appenders that the last
	// sync covered already.
	if expect <= 1 || lastSync <= 0 || l.arrivals.Load() <= covered {
		return true
	}
	until := covered + expect
	// Appenders kick the flusher only once until is reached (or when
	// they see no gathering): each checks gatherUntil after counting
	// itself, and this checks arrivals after setting it.
	l.gatherUntil.Store(until)
	defer l.gatherUntil.Store(0)
	arrived := l.arrivals.Load()
	if arrived >= until {
		return true
	}
	window := waitFor(lastSync, l.pace, until-arrived)
	if h := l.opts.hooks; h != nil && h.gatherWindow != nil {
		window = h.gatherWindow(window)
	}
	if window <= 0 {
		return true
	}
	start := time.Now()
	defer func() { l.notePace(time.Since(start), l.arrivals.Load()-arrived) }()
	t.Reset(window)
	defer t.Stop()
	for l.arrivals.Load() < until {
		select {
		case <-l.kick:
		case <-t.C:
			return true
		case <-l.stop:
			return false
		}
	}
	return true
}

// waitFor is how long a gather waits for missing appenders: three times
// as long as they should take to arrive one after another at pace (the
// pace seen in earlier gathers), but at least as long as the last sync
// took and at most gatherMax.
//
// The appenders a sync released come back one after another, as the CPUs
// get through their acknowledgements and their next requests, so the more
// of them a sync covered, the longer the last ones take. One that misses a
// sync waits for the whole of the next and is missing from it, so waiting
// a little long costs less than giving up early: with 16 synchronous
// producers on 2 CPUs this waited about three times as long as a sync and
// moved 7% more messages than waiting as long as a sync; with 4 or 8 the
// rate stayed the same (medians within 1%).
func waitFor(lastSync, pace time.Duration, missing int64) time.Duration {
	return min(max(lastSync, 3*time.Duration(missing)*pace), gatherMax)
}

// notePace updates the pace at which appenders came back during gathers
// with a gather that waited d while n arrived.
func (l *Log) notePace(d time.Duration, n int64) {
	if n <= 0 {
		return
	}
	p := d / time.Duration(n)
	if l.pace == 0 {
		l.pace = p
		return
	}
	l.pace = (3*l.pace + p) / 4
}
