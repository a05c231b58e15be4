package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/karmanmq/karman/engine/commitlog"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/queue"
)

// A Filter selects the messages a pull returns. A nil Filter passes every
// message.
type Filter interface {
	// MatchTagHash is a cheap first pass on the tag hash kept in the
	// consume queue (0 when the message has no tag). It may accept messages
	// that Match then rejects, never the reverse.
	MatchTagHash(hash int64) bool
	// Match decides on the message's encoded properties (see
	// message.LookupProperty).
	Match(properties []byte) bool
}

// maxPullScan bounds how many queue entries one filtered pull examines, so
// a selective filter cannot make a pull scan a whole queue.
const maxPullScan = 4096

// MaxPullMessages is the most messages one pull returns.
const MaxPullMessages = 1024

// PullResult is what a pull returns.
type PullResult struct {
	// Records are the messages found, each a RocketMQ stored-format record
	// (decode with message.DecodeStored). They are laid out back to back in
	// one buffer, in queue order.
	Records [][]byte
	// NextOffset is where the next pull of this queue should start: past
	// every entry examined, matching or not.
	NextOffset int64
	// MinOffset and MaxOffset bound the queue: [MinOffset, MaxOffset).
	MinOffset, MaxOffset int64

	buf *[]byte // backing buffer of Records, from pullBuffers
}

// pullBuffers recycles the buffers records are read into.
var pullBuffers = sync.Pool{New: func() any { return new([]byte) }}

// Bytes returns Records as one slice: they lie back to back in one
// buffer. It must not be used after Release.
func (r *PullResult) Bytes() []byte {
	if len(r.Records) == 0 || r.buf == nil {
		return nil
	}
	return *r.buf
}

// Release hands the result's buffer back for reuse by later pulls. Records
// must not be used after it. Calling it is optional (without it the buffer
// is garbage collected) and it may be called more than once.
func (r *PullResult) Release() {
	if r.buf == nil {
		return
	}
	if cap(*r.buf) <= 4<<20 {
		*r.buf = (*r.buf)[:0]
		pullBuffers.Put(r.buf)
	}
	r.buf = nil
	r.Records = nil
}

// Pull returns up to max messages of (topic, queueID) from offset on that
// pass f. It does not wait: with nothing to return it returns an empty
// result whose NextOffset says where to continue (use WaitForArrival to
// wait). An offset outside the queue's bounds gets an *OffsetRangeError; an
// offset equal to MaxOffset is simply caught up.
//
// Light queues are pulled like topics, with queue id 0; their records carry
// the light queue's offsets.
func (e *Engine) Pull(ctx context.Context, topic string, queueID int32, offset int64, max int, f Filter) (*PullResult, error) {
	q, err := e.readQueue(topic, queueID)
	if err != nil {
		return nil, err
	}
	var t *topicState
	if !IsLightQueue(topic) {
		if t, err = e.topic(topic); err != nil {
			return nil, err
		}
		if !t.cfg.Load().Perm.Readable() {
			return nil, fmt.Errorf("%w: topic %s is not readable", ErrNoPermission, topic)
		}
	}
	if max <= 0 || max > MaxPullMessages {
		return nil, fmt.Errorf("%w: pull of %d messages (want 1..%d)", ErrInvalidArgument, max, MaxPullMessages)
	}
	minOff, err := e.queueMin(q)
	if err != nil {
		return nil, err
	}
	res := &PullResult{NextOffset: offset, MinOffset: minOff, MaxOffset: q.end.Load()}
	if offset < res.MinOffset || offset > res.MaxOffset {
		return res, &OffsetRangeError{Topic: topic, Queue: queueID, Offset: offset, Min: res.MinOffset, Max: res.MaxOffset}
	}
	err = e.readEntries(ctx, q, res, max, f)
	if len(e.hooks.Deliver) > 0 && err == nil && len(res.Records) > 0 {
		if err := e.pullHooks(ctx, topic, queueID, res); err != nil {
			res.Release()
			return nil, err
		}
	}
	if t != nil && len(res.Records) > 0 {
		n := 0
		for _, r := range res.Records {
			n += len(r)
		}
		group := ""
		if c, ok := hook.FromContext(ctx); ok {
			group = c.Group
		}
		t.countOut(group, len(res.Records), n)
		e.recordPull(ctx, group, topic, queueID, res.Records)
	}
	return res, err
}

// readEntries fills res from the queue's entries starting at res.NextOffset.
func (e *Engine) readEntries(ctx context.Context, q *queueState, res *PullResult, max int, f Filter) error {
	res.buf = pullBuffers.Get().(*[]byte)
	var (
		room      [tailSize]queue.Entry // what a pull at the tail reads, without an allocation
		entries   = room[:0]
		buf       = (*res.buf)[:0]
		startRoom [tailSize]int
		starts    = startRoom[:0]
		scanned   int
		light     = IsLightQueue(q.topic)
	)
	defer func() { *res.buf = buf }()
	for len(starts) < max && scanned < maxPullScan && res.NextOffset < res.MaxOffset {
		if err := ctx.Err(); err != nil {
			return err
		}
		want := min(max-len(starts), maxPullScan-scanned)
		if f != nil {
			want = min(maxPullScan-scanned, 256)
		}
		var (
			err    error
			inTail bool
		)
		if entries, inTail = q.tail.read(res.NextOffset, want, entries[:0]); !inTail {
			entries, err = e.queues.Entries(q.topic, q.id, res.NextOffset, want, entries[:0])
			if err != nil {
				return err
			}
		}
		if len(entries) == 0 {
			break
		}
		if f == nil {
			need := 0
			for _, en := range entries {
				need += int(en.Size)
			}
			buf = slices.Grow(buf, need)
		}
		for _, en := range entries {
			if len(starts) == max || en.Offset >= res.MaxOffset {
				break
			}
			scanned++
			res.NextOffset = en.Offset + 1
			if f != nil && !f.MatchTagHash(en.TagHash) {
				continue
			}
			start := len(buf)
			buf, err = e.log.Read(en.CommitLogOffset, buf)
			if err != nil {
				buf = buf[:start]
				if e.skippable(err, en.CommitLogOffset) {
					continue
				}
				return err
			}
			if f != nil || light {
				h, err := message.PeekStored(buf[start:])
				if err != nil {
					buf = buf[:start]
					e.corrupt.Add(1)
					continue
				}
				if f != nil && !f.Match(h.Properties) {
					buf = buf[:start]
					continue
				}
				if light {
					message.SetQueue(buf[start:], 0, en.Offset)
				}
			}
			starts = append(starts, start)
		}
	}
	res.Records = make([][]byte, len(starts))
	for i, s := range starts {
		end := len(buf)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		res.Records[i] = buf[s:end:end]
	}
	return nil
}

// skippable reports whether a failed read of the record at clOffset should
// be skipped (the record is corrupt or retention deleted it) rather than
// fail the read.
func (e *Engine) skippable(err error, clOffset int64) bool {
	switch {
	case errors.Is(err, commitlog.ErrCorrupt):
		e.corrupt.Add(1)
		e.opts.Logger.Error("skipping corrupt record", "offset", clOffset, "err", err)
		return true
	case clOffset < e.log.MinOffset():
		return true
	}
	return false
}

// WaitForArrival returns once (topic, queueID) holds a message at offset,
// or with ctx's error when ctx ends first. It is the long-polling
// primitive: appends wake it, nothing polls.
func (e *Engine) WaitForArrival(ctx context.Context, topic string, queueID int32, offset int64) error {
	q, err := e.waitQueue(topic, queueID)
	if err != nil {
		return err
	}
	return q.wait(ctx, offset)
}

// MaxOffset returns one past the last pullable offset of (topic, queueID).
func (e *Engine) MaxOffset(topic string, queueID int32) (int64, error) {
	q, err := e.readQueue(topic, queueID)
	if err != nil {
		return 0, err
	}
	return q.end.Load(), nil
}

// MinOffset returns the first offset of (topic, queueID) still stored.
func (e *Engine) MinOffset(topic string, queueID int32) (int64, error) {
	q, err := e.readQueue(topic, queueID)
	if err != nil {
		return 0, err
	}
	return e.queueMin(q)
}

// queueMin returns the first offset of q whose message is still in the
// log, recomputing it after retention moved the log's start.
func (e *Engine) queueMin(q *queueState) (int64, error) {
	logMin := e.log.MinOffset()
	if q.minGen.Load() == logMin {
		return q.min.Load(), nil
	}
	// The queue's end is read before its index: the entries below it were
	// indexed before it moved, so an index without entries means they were
	// deleted. Read after, it could take an entry the dispatcher indexed
	// in between for deleted, and a new consumer would start past it.
	qEnd := q.end.Load()
	if e.queueMinRead != nil {
		e.queueMinRead()
	}
	first, end, err := e.queues.Bounds(q.topic, q.id)
	if err != nil {
		return 0, err
	}
	if end == 0 {
		first, end = qEnd, qEnd
	}
	// Entries are in commit-log order: binary search for the first whose
	// record is still retained.
	lo, hi := first, end
	for lo < hi {
		mid := lo + (hi-lo)/2
		en, ok, err := e.queues.Get(q.topic, q.id, mid)
		if err != nil {
			return 0, err
		}
		if ok && en.CommitLogOffset >= logMin {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo > first {
		if err := e.queues.DeleteBefore(q.topic, q.id, lo); err != nil {
			return 0, err
		}
	}
	q.min.Store(lo)
	q.minGen.Store(logMin)
	return lo, nil
}

// StoreTime returns the store time (ms since the epoch) of the message at
// offset of (topic, queueID), or an error matching ErrMessageNotFound when
// no message is stored there (any more, or yet).
func (e *Engine) StoreTime(topic string, queueID int32, offset int64) (int64, error) {
	q, err := e.readQueue(topic, queueID)
	if err != nil {
		return 0, err
	}
	first, err := e.queueMin(q)
	if err != nil {
		return 0, err
	}
	if offset >= first && offset < q.end.Load() {
		en, ok, err := e.queues.Get(q.topic, q.id, offset)
		if err != nil {
			return 0, err
		}
		if ok {
			return en.StoreTimestamp, nil
		}
	}
	return 0, fmt.Errorf("%w: %s/%d has no message at offset %d", ErrMessageNotFound, topic, queueID, offset)
}

// OffsetByTime returns the offset of the first message of (topic, queueID)
// stored at or after ts (ms since the epoch); MaxOffset when none is.
func (e *Engine) OffsetByTime(topic string, queueID int32, ts int64) (int64, error) {
	q, err := e.readQueue(topic, queueID)
	if err != nil {
		return 0, err
	}
	lo, err := e.queueMin(q)
	if err != nil {
		return 0, err
	}
	hi := q.end.Load()
	for lo < hi {
		mid := lo + (hi-lo)/2
		en, ok, err := e.queues.Get(q.topic, q.id, mid)
		if err != nil {
			return 0, err
		}
		if ok && en.StoreTimestamp >= ts {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}
