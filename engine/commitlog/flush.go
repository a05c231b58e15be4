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
	from, to := l.flushed.Load(), l.end.Load()
	if to > from {
		err := l.syncRange(from, to)
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
		l.flushCond.Broadcast()
		l.flushMu.Unlock()
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
	select {
	case l.kick <- struct{}{}:
	default: // a flush is already requested; it will cover end
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
	for {
		select {
		case <-l.stop:
			return
		case <-l.kick:
			l.flush(false)
		case <-t.C:
			l.flush(true)
		}
	}
}
