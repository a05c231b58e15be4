package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine/commitlog"
)

// ErrOffsetGone: a commit-log offset below the first one retention kept.
// Errors matching it are *OffsetGoneError, which says where the log now
// starts.
var ErrOffsetGone = errors.New("engine: commit-log offset no longer retained")

// OffsetGoneError reports a commit-log offset that retention has deleted.
// It matches ErrOffsetGone.
type OffsetGoneError struct {
	Offset int64 // the offset asked for
	First  int64 // the first offset still stored
}

func (e *OffsetGoneError) Error() string {
	return fmt.Sprintf("engine: commit-log offset %d no longer retained; the log starts at %d", e.Offset, e.First)
}

// Is makes the error match ErrOffsetGone.
func (e *OffsetGoneError) Is(target error) bool { return target == ErrOffsetGone }

// LogRecord is one record of the commit log, as stored.
type LogRecord struct {
	// Offset is where the record starts in the commit log.
	Offset int64
	// Next is where the log goes on after it: the offset to follow from
	// to read what comes after this record.
	Next int64
	// Data is the stored record (decode with message.DecodeStored). It is
	// valid until the Follower's next call of Next.
	Data []byte
}

// Bounds of the records one Follower.Next returns (it returns at least
// one record, whatever its size).
const (
	FollowMaxRecords = 1024
	FollowMaxBytes   = 4 << 20
)

// Follower reads the commit log in order from an offset, waiting for
// appends at its end: what connectors and replication build on. It keeps
// its position in memory only; a follower that must resume after a
// restart stores the Next of the last record it handled and follows from
// there. A Follower is not safe for concurrent use; any number of them
// may follow one engine.
type Follower struct {
	e    *Engine
	pos  int64
	cuts int64 // the engine's truncations when pos was last checked
	buf  []byte
	recs []LogRecord
}

// LogRange returns the commit log's first retained offset and its end
// (where the next record will be appended): the offsets Follow accepts
// besides those of records.
func (e *Engine) LogRange() (first, end int64) {
	return e.log.MinOffset(), e.log.EndOffset()
}

// Follow returns a Follower that reads every record of the commit log
// from offset from on: records of every topic, the engine's own (timer,
// transaction and retry topics) included, in log order. from must be a
// record boundary: the first offset (LogRange), the log's end, a
// record's commit-log offset (SendResult.CommitLogOffset,
// LogRecord.Offset) or a LogRecord's Next. An offset retention has
// deleted gets an *OffsetGoneError; one past the end or not on a frame
// boundary an error matching ErrInvalidArgument.
//
// Follow does not block. The follower sees a record once the engine has
// dispatched (indexed) it, as consumers do: at most DispatchDelay after
// its append.
func (e *Engine) Follow(from int64) (*Follower, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	first, end := e.LogRange()
	switch {
	case from < 0 || from > end:
		return nil, fmt.Errorf("%w: commit-log offset %d outside the log [%d, %d]", ErrInvalidArgument, from, first, end)
	case from < first:
		return nil, &OffsetGoneError{Offset: from, First: first}
	}
	return &Follower{e: e, pos: from, cuts: e.repl.cuts.Load()}, nil
}

// Position returns the offset the next record read will start at, or
// where the log goes on past the last one read.
func (f *Follower) Position() int64 { return f.pos }

// errFollowFull stops a scan of the log once a batch is full.
var errFollowFull = errors.New("engine: follow batch full")

// Next returns the next records of the log, in order, at most
// FollowMaxRecords of them and FollowMaxBytes together (at least one).
// When the follower has read everything dispatched, it waits for the
// next append, without polling, until ctx ends (ctx's error) or the
// engine closes (ErrClosed). Records retention deletes before the
// follower reads them get an *OffsetGoneError; follow again from its
// First to go on past the gap. The records returned are valid until the
// next call of Next.
func (f *Follower) Next(ctx context.Context) ([]LogRecord, error) {
	e := f.e
	for {
		if err := e.checkOpen(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cuts := e.repl.cuts.Load(); cuts != f.cuts {
			if e.repl.cutBelow(f.cuts, f.pos) {
				return nil, fmt.Errorf("%w below %d, where the follower was", ErrLogTruncated, f.pos)
			}
			f.cuts = cuts
		}
		if limit := e.disp.pos.Load(); f.pos < limit {
			recs, err := f.read(limit)
			if err != nil || len(recs) > 0 {
				return recs, err
			}
			if f.pos < limit {
				continue // only corrupt regions or segment ends were passed
			}
		}
		// Every dispatched record is read: wait for the dispatcher to
		// move past the position.
		cut := func() bool { return e.repl.cuts.Load() != f.cuts }
		if err := e.disp.waitUntil(ctx, f.pos+1, cut); err != nil {
			return nil, err
		}
	}
}

// read copies the records from f.pos below limit, up to the batch
// bounds, and moves f.pos past them.
func (f *Follower) read(limit int64) ([]LogRecord, error) {
	f.buf = f.buf[:0]
	f.recs = f.recs[:0]
	type span struct{ at, end int }
	var spans [FollowMaxRecords]span
	n := 0
	pos, err := f.e.log.Scan(f.pos, func(off, next int64, payload []byte) error {
		if off >= limit || n == FollowMaxRecords || (n > 0 && len(f.buf)+len(payload) > FollowMaxBytes) {
			return errFollowFull
		}
		at := len(f.buf)
		f.buf = append(f.buf, payload...)
		spans[n] = span{at, len(f.buf)}
		f.recs = append(f.recs, LogRecord{Offset: off, Next: next})
		n++
		return nil
	})
	switch {
	case err == nil || errors.Is(err, errFollowFull):
	case errors.Is(err, commitlog.ErrOffsetGone):
		return nil, &OffsetGoneError{Offset: f.pos, First: f.e.log.MinOffset()}
	case errors.Is(err, commitlog.ErrCorrupt):
		return nil, fmt.Errorf("%w: commit-log offset %d is not a record boundary: %w", ErrInvalidArgument, f.pos, err)
	case errors.Is(err, commitlog.ErrClosed):
		return nil, ErrClosed
	default:
		return nil, fmt.Errorf("engine: follow the commit log from %d: %w", f.pos, err)
	}
	for i := range f.recs {
		s := spans[i]
		f.recs[i].Data = f.buf[s.at:s.end:s.end]
	}
	f.pos = pos
	return f.recs, nil
}
