package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/karmanmq/karman/engine/commitlog"
	"github.com/karmanmq/karman/engine/epoch"
)

// Errors of replication. Each is wrapped with context; match with
// errors.Is.
var (
	// ErrNotMaster: the engine is a replica; writes go to its group's
	// master. Front-ends answer it with the code clients move on to
	// another broker for (remoting: SERVICE_NOT_AVAILABLE).
	ErrNotMaster = errors.New("engine: not the master of its broker group")
	// ErrNotReplica: replicated records offered to a master.
	ErrNotReplica = errors.New("engine: not a replica")
	// ErrStaleEpoch: replicated records of an epoch older than the newest
	// this engine knows, or a promotion to one: a deposed master speaks.
	ErrStaleEpoch = errors.New("engine: stale epoch")
	// ErrEpochMismatch: the epoch of replicated records starts elsewhere
	// than where this engine recorded it: the logs disagree, and the
	// replica must find the consistent point again.
	ErrEpochMismatch = errors.New("engine: epoch start does not match")
	// ErrNotAtEnd: replicated records offered for another offset than the
	// end of the log.
	ErrNotAtEnd = commitlog.ErrNotAtEnd
	// ErrLogTruncated: the log was cut back (Truncate) below a
	// follower's position; follow again from a known offset.
	ErrLogTruncated = errors.New("engine: commit log truncated")
)

// Errors of sync replication, returned by a Replicator and passed on by
// Send.
var (
	// ErrInSyncReplicasNotEnough: too few replicas are in sync for a
	// write to be acknowledged; it was refused before anything was
	// stored, and may be sent again.
	ErrInSyncReplicasNotEnough = errors.New("engine: in-sync replicas not enough")
	// ErrReplicaTimeout: the message is stored here but not enough
	// replicas confirmed it in time. Send returns its result with this
	// error: it may be delivered, and sending it again may duplicate it.
	ErrReplicaTimeout = errors.New("engine: replicas did not confirm the message in time")
)

// Replicator is the engine's view of sync replication in a broker group
// (package cluster/ha implements it). Send calls CheckWrite before it
// stores anything, and WaitReplicated with the end of the records it
// stored before it acknowledges them. Writes the engine makes itself
// (timers falling due, retries) do not wait.
type Replicator interface {
	// CheckWrite returns an error matching ErrInSyncReplicasNotEnough
	// when a write must be refused now.
	CheckWrite() error
	// WaitReplicated returns once enough members of the group hold the
	// log below end, or an error matching ErrReplicaTimeout (or ctx's).
	WaitReplicated(ctx context.Context, end int64) error
	// Confirmed returns the offset below which enough members hold the
	// log, at most end (the log's end now); end when writes do not wait
	// for replicas. A master indexes, and so lets consumers read, only
	// the log below it: a message a consumer has read is one a new
	// master will have. Call ReplicasAcked when it moves.
	Confirmed(end int64) int64
}

// ReplicasAcked tells a master's engine that its replicas hold more of
// the log (Replicator.Confirmed moved), so that it indexes it.
func (e *Engine) ReplicasAcked() { e.disp.notify() }

// readableEnd returns how far the dispatcher may index a log that ends at
// end. Without a Replicator, all of it. With one, what the group is sure
// to keep: on a master what enough members hold (Replicator.Confirmed),
// and on any member what it held when it opened, what it was promoted
// at and what it replicated from its master. So a demoted master's
// unconfirmed tail stays unread until the new master's log cuts it back
// or confirms it.
func (e *Engine) readableEnd(end int64) int64 {
	r := e.opts.Replicator
	if r == nil {
		return end
	}
	lim := e.repl.kept.Load()
	if e.repl.master.Load() {
		lim = max(lim, r.Confirmed(end))
	}
	return min(lim, end)
}

// Waiter is what a Replicator may also implement to say whether its
// WaitReplicated ever waits: an async master's never does.
type Waiter interface {
	// Waits reports whether WaitReplicated may block. The answer must
	// not change over the Replicator's life.
	Waits() bool
}

// WaitsForReplicas reports whether sends may wait for replicas
// (Options.Replicator is set and, when it implements Waiter, waits):
// front-ends that answer on their reading goroutine hand such sends
// off, as they do with FlushSync.
func (e *Engine) WaitsForReplicas() bool {
	r := e.opts.Replicator
	if r == nil {
		return false
	}
	if w, ok := r.(Waiter); ok {
		return w.Waits()
	}
	return true
}

// WaitAppended returns once the commit log ends past off (something was
// appended or replicated at or after off), or ctx ends, or the engine
// closes (ErrClosed). Unlike Follow it does not wait for the dispatcher:
// a master streams records to its replicas as soon as they are written.
func (e *Engine) WaitAppended(ctx context.Context, off int64) error {
	for {
		ch := e.appended.Wait()
		if e.log.EndOffset() > off {
			return nil
		}
		if err := e.checkOpen(); err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-e.closing:
			return ErrClosed
		}
	}
}

// replicated waits for the replicas to hold s's records, when a
// Replicator asks for it.
func (e *Engine) replicated(ctx context.Context, s *sendState) error {
	r := e.opts.Replicator
	if r == nil || len(s.offs) == 0 {
		return nil
	}
	last := len(s.offs) - 1
	return r.WaitReplicated(ctx, s.offs[last]+commitlog.FrameSize(len(s.recs[last])))
}

// Role is what an engine is in its broker group.
type Role int32

const (
	// RoleMaster takes writes: sends, and the records the engine writes
	// itself (timers falling due, transaction decisions, retries).
	RoleMaster Role = iota
	// RoleReplica takes only the master's records (Replicate); it
	// dispatches them as a master does, so consumers can read from it
	// and it can take over (Promote) at once.
	RoleReplica
)

// String returns "master" or "replica".
func (r Role) String() string {
	if r == RoleReplica {
		return "replica"
	}
	return "master"
}

// replication is the engine's state as a member of a broker group.
type replication struct {
	// mu orders role changes with writes: every append to the log holds
	// it for reading, Promote, Demote and Truncate hold it for writing,
	// so none of them races with a write of the other role.
	mu   sync.RWMutex
	role Role // under mu
	// master mirrors role == RoleMaster for the dispatcher, which must
	// not take mu (Promote holds it while waiting for the dispatcher).
	master atomic.Bool
	// kept is the end of the log this member knows the group keeps
	// (see readableEnd).
	kept   atomic.Int64
	epochs *epoch.File
	// cuts counts truncations, so followers notice them; cutAt holds
	// each one's offset, in order.
	cuts  atomic.Int64
	cutMu sync.Mutex
	cutAt []int64
}

// cutBelow reports whether a truncation after the first n cut the log
// below pos.
func (r *replication) cutBelow(n int64, pos int64) bool {
	r.cutMu.Lock()
	defer r.cutMu.Unlock()
	for _, at := range r.cutAt[min(n, int64(len(r.cutAt))):] {
		if at < pos {
			return true
		}
	}
	return false
}

// Role returns the engine's current role.
func (e *Engine) Role() Role {
	e.repl.mu.RLock()
	defer e.repl.mu.RUnlock()
	return e.repl.role
}

// Epochs returns the epochs of the log, oldest first: each the epoch of a
// master and the offset its records start at. A log written by no
// cluster master has none.
func (e *Engine) Epochs() []epoch.Entry { return e.repl.epochs.Entries() }

// checkMaster returns ErrNotMaster on a replica. Called with repl.mu held.
func (e *Engine) checkMaster() error {
	if e.repl.role != RoleMaster {
		return fmt.Errorf("%w: this broker is a replica, send to the master", ErrNotMaster)
	}
	return nil
}

// checkPopMaster returns ErrNotMaster on a replica for op, a call that
// changes a consumer group's pop state (pop, ack, change invisible time,
// dead-letter): that state is the master's, and replicas get it with
// its metadata, so a change made on a replica would be lost and its
// receipt handles acknowledge nowhere. Pulls are served by replicas.
func (e *Engine) checkPopMaster(op string) error {
	if !e.repl.master.Load() {
		return fmt.Errorf("%w: this broker is a replica, which does not support %s; use the master", ErrNotMaster, op)
	}
	return nil
}

// Promote makes the engine the master of epoch n: it waits for the
// dispatcher to index everything received, records epoch n as starting
// at the log's end (durably, before any write of the epoch), resumes
// the queue offsets from the index and then takes writes. A master may
// be promoted again to a newer epoch. n must be newer than every epoch
// recorded (ErrStaleEpoch).
func (e *Engine) Promote(ctx context.Context, n uint32) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	e.repl.mu.Lock()
	defer e.repl.mu.Unlock()
	if last, ok := e.repl.epochs.Last(); ok && n <= last.Epoch {
		return fmt.Errorf("%w: promotion to epoch %d, the log is at epoch %d", ErrStaleEpoch, n, last.Epoch)
	}
	end := e.log.EndOffset()
	// The new epoch starts from this log: all of it is the group's now.
	e.repl.kept.Store(max(e.repl.kept.Load(), end))
	e.disp.notify()
	if err := e.disp.waitFor(ctx, end); err != nil {
		return fmt.Errorf("engine: promote: %w", err)
	}
	if err := e.repl.epochs.Append(epoch.Entry{Epoch: n, Start: end}); err != nil {
		return fmt.Errorf("engine: promote: %w", err)
	}
	if e.repl.role == RoleReplica {
		// Receipt handles are checked with the key the master's metadata
		// brought, so that its handles acknowledge here.
		if err := e.loadHandleKey(); err != nil {
			return fmt.Errorf("engine: promote: %w", err)
		}
		// The replica's queues were filled by the dispatcher, which
		// moves their ends; sends assign from next.
		e.topics.Range(func(_, v any) bool {
			for _, q := range *v.(*topicState).queues.Load() {
				q.next = q.end.Load()
			}
			return true
		})
		e.repl.role = RoleMaster
		e.repl.master.Store(true)
	}
	if e.sched != nil {
		e.sched.Scheduled(0) // timers due while a replica fall due now
	}
	e.opts.Logger.Info("engine promoted to master", "epoch", n, "start", end)
	return nil
}

// Demote makes the engine a replica: writes are refused with ErrNotMaster
// from the moment it returns, and no write started before is still in
// progress.
func (e *Engine) Demote() error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	e.repl.mu.Lock()
	defer e.repl.mu.Unlock()
	if e.repl.role != RoleReplica {
		e.repl.role = RoleReplica
		e.repl.master.Store(false)
		e.opts.Logger.Warn("engine demoted to replica", "end", e.log.EndOffset())
		// Pop state is the new master's from now on (its metadata
		// replaces it): save what changed, in case this engine is
		// promoted again before any arrives, and read it afresh then.
		if err := e.flushPops(false); err != nil {
			e.opts.Logger.Error("saving pop state on demotion failed", "err", err)
		}
		e.dropPops(func(popKey) bool { return true })
	}
	return nil
}

// ReadFrames appends to dst the commit log's frames from off, exactly as
// stored, at most max bytes of them (at least one frame) and all in one
// segment, and returns where the log goes on after them: what a master
// sends its replicas. At a segment's end it returns no frame and the next
// segment's base; at the log's end, no frame and off. Unlike Follow it
// does not wait for the dispatcher: records go to replicas as soon as
// they are appended (WaitAppended).
func (e *Engine) ReadFrames(off int64, dst []byte, max int) ([]byte, int64, error) {
	if err := e.checkOpen(); err != nil {
		return dst, off, err
	}
	frames, next, err := e.log.ReadFrames(off, dst, max)
	switch {
	case err == nil:
		return frames, next, nil
	case errors.Is(err, commitlog.ErrOffsetGone):
		return dst, off, &OffsetGoneError{Offset: off, First: e.log.MinOffset()}
	case errors.Is(err, commitlog.ErrClosed):
		return dst, off, ErrClosed
	}
	return dst, off, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
}

// Replicate stores frames, read with ReadFrames from the master's log at
// off, at the same offset of this replica's log, and returns the new end.
// ep is the epoch the frames belong to (its number and start, as the
// master recorded it): a newer epoch than the last one known is recorded
// durably before the frames, and must start at off, or at the log's end
// when off is the next segment's base (the master was promoted with too
// little room left in its segment for the epoch's first record); the same epoch must
// start where it was recorded (ErrEpochMismatch); an older one is refused
// (ErrStaleEpoch). The frames are verified first (their magic, length,
// checksum at their offset and padding); anything wrong stores nothing
// and matches ErrInvalidArgument. off must be the log's end, or the next
// segment's base where the master moved on to it (ErrNotAtEnd). The
// dispatcher then indexes the records as the master's did.
func (e *Engine) Replicate(ep epoch.Entry, off int64, frames []byte) (int64, error) {
	if err := e.checkOpen(); err != nil {
		return 0, err
	}
	e.repl.mu.RLock()
	defer e.repl.mu.RUnlock()
	if e.repl.role != RoleReplica {
		return e.log.EndOffset(), fmt.Errorf("%w: this broker is a master, it takes no replicated records", ErrNotReplica)
	}
	last, ok := e.repl.epochs.Last()
	switch {
	case !ok || ep.Epoch > last.Epoch:
		if ep.Start != off && !e.startsAtSegmentEnd(ep, off) {
			return e.log.EndOffset(), fmt.Errorf("%w: epoch %d starts at %d, its first records came at %d", ErrEpochMismatch, ep.Epoch, ep.Start, off)
		}
	case ep.Epoch < last.Epoch:
		return e.log.EndOffset(), fmt.Errorf("%w: records of epoch %d, the log is at epoch %d", ErrStaleEpoch, ep.Epoch, last.Epoch)
	case ep.Start != last.Start:
		return e.log.EndOffset(), fmt.Errorf("%w: epoch %d starts at %d here, at %d on the master", ErrEpochMismatch, ep.Epoch, last.Start, ep.Start)
	}
	if _, err := commitlog.CheckFrames(off, frames); err != nil {
		return e.log.EndOffset(), fmt.Errorf("%w: replicated frames: %w", ErrInvalidArgument, err)
	}
	if err := e.refuseWrite(); err != nil {
		return e.log.EndOffset(), err
	}
	if !ok || ep.Epoch > last.Epoch {
		if end := e.log.EndOffset(); off != end && off != e.nextSegment(end) {
			return end, fmt.Errorf("engine: replicate at %d: %w (the log ends at %d)", off, ErrNotAtEnd, end)
		}
		if err := e.repl.epochs.Append(ep); err != nil {
			return e.log.EndOffset(), fmt.Errorf("engine: replicate: %w", err)
		}
	}
	end, err := e.log.AppendFrames(off, frames)
	if err != nil {
		if errors.Is(err, commitlog.ErrCorrupt) || errors.Is(err, commitlog.ErrTooLarge) {
			err = fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		return end, fmt.Errorf("engine: replicate at %d: %w", off, e.diskError(err))
	}
	e.repl.kept.Store(end)
	e.disp.notify()
	e.appended.Broadcast()
	return end, nil
}

// startsAtSegmentEnd reports whether ep, a new epoch whose records come
// at off, starts where this log ends, inside a segment, and off is the
// next segment's base: the master was promoted at that end, and the
// epoch's first record did not fit in the rest of the segment (its
// transfer at the base may be empty: the master's log moved on to the
// next segment). The epoch is recorded where the master recorded it.
func (e *Engine) startsAtSegmentEnd(ep epoch.Entry, off int64) bool {
	return ep.Start == e.log.EndOffset() && ep.Start%e.opts.SegmentSize != 0 && off == e.nextSegment(ep.Start)
}

// nextSegment returns the base of the segment after the one holding off.
func (e *Engine) nextSegment(off int64) int64 {
	s := e.opts.SegmentSize
	return off - off%s + s
}

// Truncate cuts the commit log of a replica back to off, a record
// boundary: what a returning old master does before it copies its new
// master's log (see epoch.ConsistentPoint). Epochs that start at or
// after off are forgotten. When records past off were indexed, the
// index is rebuilt from the log (every retained record is dispatched
// again) and the queues resume from it; consumers that read past the cut
// find their offsets out of range. Followers past the cut get
// ErrLogTruncated. The cut is crash-safe (see commitlog.Log.Truncate).
func (e *Engine) Truncate(off int64) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	e.repl.mu.Lock()
	defer e.repl.mu.Unlock()
	if e.repl.role != RoleReplica {
		return fmt.Errorf("%w: only a replica truncates its log; demote it first", ErrNotReplica)
	}
	d := e.disp
	d.runMu.Lock()
	defer d.runMu.Unlock()
	if err := d.failure(); err != nil {
		return fmt.Errorf("engine: truncate: the dispatcher stopped: %w", err)
	}
	was := e.log.EndOffset()
	if off == was {
		// Nothing to cut, but an epoch recorded without records goes.
		if err := e.repl.epochs.TruncateFrom(off); err != nil {
			return fmt.Errorf("engine: truncate: %w", err)
		}
		return nil
	}
	if e.repl.kept.Load() > off {
		e.repl.kept.Store(off)
	}
	if err := e.log.Truncate(off); err != nil {
		if errors.Is(err, commitlog.ErrCorrupt) || errors.Is(err, commitlog.ErrOffsetOutOfRange) {
			err = fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		return fmt.Errorf("engine: truncate: %w", e.diskError(err))
	}
	e.repl.cutMu.Lock()
	e.repl.cutAt = append(e.repl.cutAt, off)
	e.repl.cutMu.Unlock()
	e.repl.cuts.Add(1)
	d.wakeAll()
	if err := e.repl.epochs.TruncateFrom(off); err != nil {
		return fmt.Errorf("engine: truncate: %w", err)
	}
	if d.pos.Load() > off {
		if err := d.wipe(); err != nil {
			return err
		}
		e.topics.Range(func(k, _ any) bool { e.topics.Delete(k); return true })
		e.lmqs.Range(func(k, _ any) bool { e.lmqs.Delete(k); return true })
		e.topicsGen.Add(1)
		e.dropPops(func(popKey) bool { return true })
		d.pos.Store(e.log.MinOffset())
		d.notify()
	}
	e.opts.Logger.Warn("engine: commit log truncated", "at", off, "was", was)
	return nil
}
