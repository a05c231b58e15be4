package engine

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/pop"
	"github.com/karmanmq/karman/engine/queue"
)

// Message-granularity consumption (RocketMQ 5 "pop").
//
// A pop hands a consumer of a group up to Max messages of a topic, from any
// of its queues, and makes each invisible to the rest of the group for the
// invisible duration. Ack retires a message; ChangeInvisible moves its
// deadline (a short one is a negative acknowledgement). A message whose
// deadline passes is delivered again, in place, with its attempt count
// raised; one that would pass the group's max attempts goes to the group's
// dead-letter topic instead. Messages that do not pass the filter are
// acknowledged by the broker.
//
// FIFO groups deliver the messages of each message group (__SHARDINGKEY)
// in queue order, one at a time: the next message of a group is delivered
// only once the previous one is acknowledged or dead-lettered. Different
// message groups proceed in parallel.
//
// Pop state lives in memory per (group, topic, queue) and is persisted by a
// background flush every popFlushInterval and on Close; a crash of the
// process can lose the last interval, which makes those messages visible
// again (at-least-once delivery).

// Errors of message-granularity consumption.
var (
	ErrInvalidHandle = pop.ErrInvalidHandle
	ErrHandleExpired = errors.New("engine: receipt handle expired")
	// ErrAlreadyDone reports a handle whose message has been acknowledged
	// or dead-lettered since: an error matching it also matches
	// ErrHandleExpired, and a front-end may answer a repeated ack as a
	// success.
	ErrAlreadyDone = errors.New("engine: message already acknowledged")
)

const (
	popFlushInterval  = 20 * time.Millisecond
	maxInflight       = 4096 // per (group, topic, queue)
	fifoScanWindow    = 1024 // entries a FIFO pop examines per queue
	fifoFirstRun      = 64   // of them read at first
	minInvisible      = 10 * time.Millisecond
	maxInvisible      = 12 * time.Hour
	defaultInvisible  = 30 * time.Second
	popReadAhead      = 256 // consume-queue entries read at a time for a pop
	popKeyMetaHandles = "pop-handle-key"
)

// PopOptions describe one pop.
type PopOptions struct {
	Group string
	Topic string
	// Max is the most messages returned, 1..MaxPullMessages.
	Max int
	// Invisible is how long popped messages stay invisible. Default 30s.
	Invisible time.Duration
	// Filter selects messages; those it rejects are acknowledged. nil
	// passes everything.
	Filter Filter
	// Wait is how long to wait for a message when none is visible (long
	// polling); 0 returns at once.
	Wait time.Duration
	// MaxAttempts overrides the group's max delivery attempts when > 0.
	MaxAttempts int32
	// AttemptID identifies a receive attempt: a FIFO pop that repeats the
	// attempt id of the pop that blocked a message group gets that pop's
	// messages again instead of nothing (a client retrying a lost
	// response).
	AttemptID string
	// Buffer, when set, is where the records are read, back to back: it is
	// grown as needed and left holding them, so that a caller reusing it
	// spares an allocation per pop. The records are valid until the buffer
	// is reused. nil: a buffer of the pop's own.
	Buffer *[]byte

	arena *[]byte // Buffer, or the pop's own
	now   int64   // ms: the time of this round of the pop
}

// PoppedMessage is one delivered message.
type PoppedMessage struct {
	// Record is the stored record, with RECONSUMETIMES set to Attempt-1.
	Record   []byte
	Handle   string
	Attempt  int32
	Queue    int32
	Offset   int64
	Deadline time.Time // invisible until then
}

type popKey struct {
	group, topic string
	queue        int32
}

type popQueue struct {
	key   popKey
	mu    sync.Mutex
	st    *pop.Queue
	dirty bool
	// ahead are consume-queue entries read ahead of st.Cursor, in offset
	// order, so that pops read the queue's index a run at a time. Entries
	// never change once written; those below the cursor are skipped.
	ahead []queue.Entry
	// readAhead says pops read from ahead since the last trimIdlePops.
	readAhead bool
	// fifo says the last pop of the queue was a FIFO group's.
	fifo bool
	// dropped says the state was forgotten (its group or topic deleted):
	// it is not saved again.
	dropped bool
	dirties *dirtyQueues
}

// markDirty notes that the state changed since it was last saved; the
// caller holds pq.mu.
func (pq *popQueue) markDirty() {
	if !pq.dirty {
		pq.dirty = true
		pq.dirties.add(pq)
	}
}

// dirtyQueues lists the pop states changed since the last flush, so
// that a flush costs what changed, not every state ever loaded.
type dirtyQueues struct {
	mu sync.Mutex
	qs []*popQueue
}

func (d *dirtyQueues) add(pq *popQueue) {
	d.mu.Lock()
	d.qs = append(d.qs, pq)
	d.mu.Unlock()
}

// take returns the listed states and empties the list.
func (d *dirtyQueues) take() []*popQueue {
	d.mu.Lock()
	defer d.mu.Unlock()
	qs := d.qs
	d.qs = nil
	return qs
}

// ackWakes reports whether finishing a message of pq, whose lock the
// caller holds, can let a waiting pop deliver something: the next
// message of a FIFO message group, or any when the queue has as many
// messages in flight as it may. Other acknowledgements wake no one.
func (pq *popQueue) ackWakes() bool {
	return pq.fifo || len(pq.st.Inflight) >= maxInflight
}

// popQueue returns the pop state of key, loading it on first use.
func (e *Engine) popQueue(key popKey, q *queueState) (*popQueue, error) {
	if v, ok := e.pops.Load(key); ok {
		return v.(*popQueue), nil
	}
	st, err := e.loadPopState(key, q)
	if err != nil {
		return nil, err
	}
	v, _ := e.pops.LoadOrStore(key, &popQueue{key: key, st: st, dirties: &e.popDirty})
	return v.(*popQueue), nil
}

func (e *Engine) loadPopState(key popKey, q *queueState) (*pop.Queue, error) {
	data, ok, err := e.meta.PopState(key.group, key.topic, key.queue)
	if err != nil {
		return nil, err
	}
	if ok {
		st := &pop.Queue{}
		if err := st.UnmarshalBinary(data); err == nil {
			return st, nil
		}
		e.opts.Logger.Error("corrupt pop state; starting from the committed offset", "group", key.group, "topic", key.topic, "queue", key.queue)
	}
	off, err := e.meta.Offset(key.group, key.topic, key.queue)
	if err != nil {
		// A new group reads a queue from its start while the start is
		// still stored, as RocketMQ's brokers answer new consumers.
		min, merr := e.queueMin(q)
		if merr != nil {
			return nil, merr
		}
		off = q.end.Load()
		if min == 0 {
			off = 0
		}
	}
	return pop.NewQueue(off), nil
}

// Pop delivers up to opts.Max visible messages of opts.Topic to a consumer
// of opts.Group, waiting up to opts.Wait for one to arrive.
func (e *Engine) Pop(ctx context.Context, opts PopOptions) (popped []PoppedMessage, err error) {
	if err := e.checkPop(&opts); err != nil {
		return nil, err
	}
	defer func() {
		if len(popped) > 0 {
			n := 0
			for _, m := range popped {
				n += len(m.Record)
			}
			if t, terr := e.topic(opts.Topic); terr == nil {
				t.countOut(opts.Group, len(popped), n)
			}
			e.recordPops(ctx, opts.Group, opts.Topic, popped)
		}
	}()
	if err := e.checkPopMaster("pop"); err != nil {
		return nil, err
	}
	if err := e.refuseWrite(); err != nil {
		return nil, err // its state could not be saved
	}
	t, err := e.topic(opts.Topic)
	if err != nil {
		return nil, err
	}
	if !t.cfg.Load().Perm.Readable() {
		return nil, fmt.Errorf("%w: topic %s is not readable", ErrNoPermission, opts.Topic)
	}
	g, err := e.ensureGroup(opts.Group)
	if err != nil {
		return nil, err
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = g.Attempts()
	}
	var deadline <-chan time.Time
	if opts.Wait > 0 {
		tm := time.NewTimer(opts.Wait)
		defer tm.Stop()
		deadline = tm.C
	}
	if opts.Wait <= 0 {
		out, _, err := e.popOnce(ctx, t, g, &opts)
		return out, err
	}
	w := newPopWaiter()
	full := false
	defer func() { t.pops.leave(opts.Group, w, full) }()
	for {
		// Listed before looking, so that nothing arriving meanwhile is
		// missed: it wakes this pop or an older one.
		t.pops.add(opts.Group, w)
		out, next, err := e.popOnce(ctx, t, g, &opts)
		if err != nil || len(out) > 0 {
			full = len(out) == opts.Max
			return out, err
		}
		if next > 0 {
			// A message in flight becomes visible again then: the
			// group's timer wakes one of its waiters.
			t.pops.expireAt(opts.Group, next)
		}
		if e.popWaiting != nil {
			e.popWaiting()
		}
		select {
		case <-w.wake:
		case <-deadline:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.closing:
			return nil, ErrClosed
		}
	}
}

func (e *Engine) checkPop(o *PopOptions) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if err := message.ValidateGroup(o.Group); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidGroup, err)
	}
	if o.Max <= 0 || o.Max > MaxPullMessages {
		return fmt.Errorf("%w: pop of %d messages (want 1..%d)", ErrInvalidArgument, o.Max, MaxPullMessages)
	}
	if o.Invisible == 0 {
		o.Invisible = defaultInvisible
	}
	if o.Invisible < minInvisible || o.Invisible > maxInvisible {
		return fmt.Errorf("%w: invisible duration %s outside %s..%s", ErrInvalidArgument, o.Invisible, minInvisible, maxInvisible)
	}
	return nil
}

// ensureGroup returns a group's configuration, creating it with defaults
// when consumers may create groups.
func (e *Engine) ensureGroup(name string) (meta.Group, error) {
	g, err := e.meta.Group(name)
	if err == nil || !errors.Is(err, ErrGroupNotFound) || !e.opts.AutoCreateGroups {
		return g, err
	}
	g, _, err = e.meta.CreateGroup(meta.Group{Name: name})
	return g, err
}

// popOnce tries every readable queue once, starting at a random one. It
// returns the messages and the earliest in-flight deadline seen (0 for
// none).
func (e *Engine) popOnce(ctx context.Context, t *topicState, g meta.Group, o *PopOptions) ([]PoppedMessage, int64, error) {
	// Each round: a pop that waited may wake on a demoted master.
	if err := e.checkPopMaster("pop"); err != nil {
		return nil, 0, err
	}
	qs := *t.queues.Load()
	n := min(int(t.cfg.Load().ReadQueues), len(qs))
	var out []PoppedMessage // made at the first message: most rounds of a waiting pop find none
	o.now = time.Now().UnixMilli()
	o.arena = o.Buffer
	if o.arena == nil {
		o.arena = new([]byte)
	}
	*o.arena = (*o.arena)[:0]
	var next int64
	// First pass: skip queues another consumer is popping right now; come
	// back to them (and wait) only if the free ones were not enough.
	var busy []*popQueue
	start := rand.IntN(n)
	for i := 0; i < n && len(out) < o.Max; i++ {
		q := qs[(start+i)%n]
		pq, err := e.popQueue(popKey{g.Name, o.Topic, q.id}, q)
		if err != nil {
			return out, 0, err
		}
		if !pq.mu.TryLock() {
			busy = append(busy, pq)
			continue
		}
		out, next, err = e.popLocked(ctx, q, pq, g, o, out, next)
		if err != nil {
			return out, 0, err
		}
	}
	for _, pq := range busy {
		if len(out) == o.Max {
			break
		}
		pq.mu.Lock()
		var err error
		out, next, err = e.popLocked(ctx, qs[pq.key.queue], pq, g, o, out, next)
		if err != nil {
			return out, 0, err
		}
	}
	return out, next, nil
}

// popLocked pops from one queue whose lock the caller holds, releases the
// lock, and folds the queue's next deadline into next.
func (e *Engine) popLocked(ctx context.Context, q *queueState, pq *popQueue, g meta.Group, o *PopOptions, out []PoppedMessage, next int64) ([]PoppedMessage, int64, error) {
	defer pq.mu.Unlock()
	pq.fifo = g.FIFO
	var d int64
	var err error
	from := len(out)
	if g.FIFO {
		out, d, err = e.popFIFO(ctx, q, pq, o, out)
	} else {
		out, d, err = e.popQueueOnce(ctx, q, pq, o, out)
	}
	if len(e.hooks.Deliver) > 0 && len(out) > from {
		if err != nil {
			// Not past the hooks: not delivered.
			handBack(pq, out[from:], o.now)
			out = out[:from]
		} else {
			out, err = e.popHooks(ctx, q, pq, o, out, from)
		}
	}
	if d > 0 && (next == 0 || d < next) {
		next = d
	}
	return out, next, err
}

// popQueueOnce pops from one queue of a concurrent group, whose lock the
// caller holds: expired messages first, then new ones.
func (e *Engine) popQueueOnce(ctx context.Context, q *queueState, pq *popQueue, o *PopOptions, out []PoppedMessage) ([]PoppedMessage, int64, error) {
	st := pq.st
	now := o.now
	for _, off := range st.Expired(now) {
		if len(out) == o.Max {
			break
		}
		var err error
		if out, err = e.redeliver(q, pq, off, now, o, out); err != nil {
			return out, 0, err
		}
	}
	end := q.end.Load()
	for len(out) < o.Max && st.Cursor < end && len(st.Inflight) < maxInflight {
		if err := ctx.Err(); err != nil {
			return out, 0, err
		}
		entries, err := e.entriesAhead(q, pq, end, min(o.Max-len(out), maxInflight-len(st.Inflight)))
		if err != nil {
			return out, 0, err
		}
		if len(entries) == 0 {
			st.Cursor = end // entries below were deleted by retention
			pq.markDirty()
			break
		}
		growArena(o.arena, entries)
		for _, en := range entries {
			st.Cursor = en.Offset + 1
			pq.markDirty()
			rec, ok, err := e.popRecord(q, en.CommitLogOffset, en.TagHash, o.Filter, o.arena)
			if err != nil {
				return out, 0, err
			}
			if !ok {
				st.Finish(en.Offset)
				continue
			}
			f := &pop.Inflight{Attempt: firstAttempt(rec)}
			out = e.deliver(q, pq, en.Offset, f, rec, now, o, out)
		}
	}
	return out, st.NextDeadline(now), nil
}

// entriesAhead returns up to want consume-queue entries of q from
// pq.st.Cursor on, below end, in order, and drops them from pq.ahead: the
// caller moves the cursor past those it uses. It reads the index
// popReadAhead entries at a time and keeps the rest for the next pops.
// No entries means there are none from the cursor to end (end must be
// past the cursor).
func (e *Engine) entriesAhead(q *queueState, pq *popQueue, end int64, want int) ([]queue.Entry, error) {
	pq.readAhead = true
	cursor := pq.st.Cursor
	i := 0
	for i < len(pq.ahead) && pq.ahead[i].Offset < cursor {
		i++
	}
	pq.ahead = pq.ahead[i:]
	if len(pq.ahead) == 0 || pq.ahead[0].Offset != cursor {
		// Nothing read ahead at the cursor (a reset may have moved it).
		n := int(min(end-cursor, popReadAhead))
		var err error
		pq.ahead, err = e.queues.Entries(q.topic, q.id, cursor, n, make([]queue.Entry, 0, n))
		if err != nil {
			pq.ahead = nil
			return nil, err
		}
	}
	n := 0
	for n < len(pq.ahead) && n < want && pq.ahead[n].Offset < end {
		n++
	}
	got := pq.ahead[:n:n]
	pq.ahead = pq.ahead[n:]
	if len(pq.ahead) == 0 {
		pq.ahead = nil
	}
	return got, nil
}

// trimIdlePops drops the entries read ahead for the pop states that no pop
// has read from since the last call: a group that stopped consuming with
// messages left would otherwise keep up to popReadAhead of them per queue
// for as long as the process runs. A pop that comes later reads them
// again.
func (e *Engine) trimIdlePops() {
	e.pops.Range(func(_, v any) bool {
		pq := v.(*popQueue)
		pq.mu.Lock()
		if !pq.readAhead {
			pq.ahead = nil
		}
		pq.readAhead = false
		pq.mu.Unlock()
		return true
	})
}

// growArena makes room in *arena for the records of entries.
func growArena(arena *[]byte, entries []queue.Entry) {
	need := 0
	for _, en := range entries {
		need += int(en.Size)
	}
	*arena = slices.Grow(*arena, need)
}

// redeliver hands out an expired message again, or dead-letters it when
// it has used up its attempts.
func (e *Engine) redeliver(q *queueState, pq *popQueue, off, now int64, o *PopOptions, out []PoppedMessage) ([]PoppedMessage, error) {
	f := pq.st.Inflight[off]
	rec, ok, err := e.popRecordAt(q, off, o.Filter, o.arena)
	if err != nil {
		return out, err
	}
	if !ok {
		pq.st.Finish(off)
		pq.markDirty()
		return out, nil
	}
	if f.Attempt >= o.MaxAttempts {
		if err := e.deadLetter(pq.key.group, rec, f.Attempt); err != nil {
			return out, err
		}
		pq.st.Finish(off)
		pq.markDirty()
		return out, nil
	}
	f.Attempt++
	return e.deliver(q, pq, off, f, rec, now, o, out), nil
}

// firstAttempt is the attempt number of a message's first pop: one more
// than the times it was consumed before it was stored, so that a message
// sent back by a queue-level consumer (stored in %RETRY%<group> with its
// count) goes on counting towards the group's max attempts.
func firstAttempt(rec []byte) int32 {
	return max(message.ReconsumeTimes(rec), 0) + 1
}

// deliver records a delivery of the message at off and appends it to out.
func (e *Engine) deliver(q *queueState, pq *popQueue, off int64, f *pop.Inflight, rec []byte, now int64, o *PopOptions, out []PoppedMessage) []PoppedMessage {
	f.Deadline = now + o.Invisible.Milliseconds()
	f.Nonce = rand.Uint32()
	f.AttemptID = o.AttemptID
	pq.st.Lease(off, f)
	pq.markDirty()
	message.SetReconsumeTimes(rec, f.Attempt-1)
	h := pop.Handle{Topic: q.topic, Queue: q.id, Offset: off, Nonce: f.Nonce, Deadline: f.Deadline}
	if out == nil {
		out = make([]PoppedMessage, 0, o.Max)
	}
	return append(out, PoppedMessage{
		Record:   rec,
		Handle:   e.handles.Load().Encode(h, pq.key.group),
		Attempt:  f.Attempt,
		Queue:    q.id,
		Offset:   off,
		Deadline: time.UnixMilli(f.Deadline),
	})
}

// popRecordAt reads the record at queue offset off; ok is false when it is
// gone or the filter rejects it.
func (e *Engine) popRecordAt(q *queueState, off int64, f Filter, arena *[]byte) ([]byte, bool, error) {
	en, ok, err := e.queues.Get(q.topic, q.id, off)
	if err != nil || !ok {
		return nil, false, err
	}
	return e.popRecord(q, en.CommitLogOffset, en.TagHash, f, arena)
}

// popRecord reads a record for delivery, appending it to *arena (nil: a
// buffer of its own); ok is false when it is gone, corrupt, or rejected by
// the filter. Records already in the arena stay valid when it grows.
func (e *Engine) popRecord(q *queueState, clOffset, tagHash int64, f Filter, arena *[]byte) ([]byte, bool, error) {
	if f != nil && !f.MatchTagHash(tagHash) {
		return nil, false, nil
	}
	if arena == nil {
		arena = new([]byte)
	}
	start := len(*arena)
	buf, err := e.log.Read(clOffset, *arena)
	if err != nil {
		if e.skippable(err, clOffset) {
			return nil, false, nil
		}
		return nil, false, err
	}
	rec := buf[start:len(buf):len(buf)]
	if f != nil {
		h, err := message.PeekStored(rec)
		if err != nil || !f.Match(h.Properties) {
			*arena = buf[:start]
			return nil, false, nil
		}
	}
	*arena = buf
	return rec, true, nil
}

// Ack acknowledges the delivery named by handle.
func (e *Engine) Ack(ctx context.Context, group, handle string) error {
	if err := e.checkPopMaster("ack"); err != nil {
		return err
	}
	if err := e.refuseWrite(); err != nil {
		return err
	}
	pq, h, _, err := e.inflight(group, handle)
	if err != nil {
		return err
	}
	wake := pq.ackWakes()
	pq.st.Finish(h.Offset)
	pq.markDirty()
	pq.mu.Unlock()
	off := [1]int64{h.Offset}
	e.recordAcks(ctx, group, h.Topic, h.Queue, off[:])
	if wake {
		e.wakePop(h.Topic, group)
	}
	return nil
}

// AckBatch acknowledges the deliveries named by handles, as Ack does
// each, and returns what Ack would have for each: errs[i] is handles[i]'s
// error, nil when it was acknowledged. Handles of one queue that follow
// each other (those of one pop, mostly) are acknowledged under one lock,
// and waiting pops are woken (when an acknowledgement can give them
// something) once per run of them.
func (e *Engine) AckBatch(ctx context.Context, group string, handles []string) (errs []error) {
	errs = make([]error, len(handles))
	err := e.checkOpen()
	if err == nil {
		err = e.checkPopMaster("ack")
	}
	if err == nil {
		err = e.refuseWrite()
	}
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	type decoded struct {
		i int
		h pop.Handle
	}
	hs := make([]decoded, 0, len(handles))
	var acked []int64 // offsets of a run acknowledged
	for i, text := range handles {
		h, err := e.handles.Load().Decode(text, group)
		if err != nil {
			errs[i] = err
			continue
		}
		hs = append(hs, decoded{i, h})
	}
	for len(hs) > 0 {
		run := 1
		for run < len(hs) && hs[run].h.Topic == hs[0].h.Topic && hs[run].h.Queue == hs[0].h.Queue {
			run++
		}
		pq, err := e.handleQueue(group, hs[0].h)
		if err != nil {
			for _, d := range hs[:run] {
				errs[d.i] = err
			}
			hs = hs[run:]
			continue
		}
		acked = acked[:0]
		pq.mu.Lock()
		wake := pq.ackWakes()
		for _, d := range hs[:run] {
			if _, err := checkInflight(pq, d.h); err != nil {
				errs[d.i] = err
				continue
			}
			pq.st.Finish(d.h.Offset)
			pq.markDirty()
			acked = append(acked, d.h.Offset)
		}
		pq.mu.Unlock()
		e.recordAcks(ctx, group, hs[0].h.Topic, hs[0].h.Queue, acked)
		if len(acked) > 0 && wake {
			e.wakePop(hs[0].h.Topic, group)
		}
		hs = hs[run:]
	}
	return errs
}

// wakePop wakes a pop of group waiting on topic: a message became
// visible or a FIFO message group was unblocked.
func (e *Engine) wakePop(topic, group string) {
	if v, ok := e.topics.Load(topic); ok {
		v.(*topicState).pops.wakeOne(group)
	}
}

// expirePops makes a pop of group waiting on topic look again at
// deadline (ms since the epoch), when a message in flight becomes
// visible.
func (e *Engine) expirePops(topic, group string, deadline int64) {
	if v, ok := e.topics.Load(topic); ok {
		v.(*topicState).pops.expireAt(group, deadline)
	}
}

// wakeGroupPops wakes every pop of group waiting on topic: the group's
// position moved.
func (e *Engine) wakeGroupPops(topic, group string) {
	if v, ok := e.topics.Load(topic); ok {
		v.(*topicState).pops.wakeAll(group)
	}
}

// DeliveryAttempt returns the delivery attempt (1 for the first delivery)
// of the in-flight message named by handle, so that a front-end can pick
// the redelivery delay of a message its consumer failed.
func (e *Engine) DeliveryAttempt(group, handle string) (int32, error) {
	pq, _, f, err := e.inflight(group, handle)
	if err != nil {
		return 0, err
	}
	defer pq.mu.Unlock()
	return f.Attempt, nil
}

// ChangeInvisible sets the message named by handle to become visible after
// d from now and returns the handle that names it from then on (the old one
// stops working).
func (e *Engine) ChangeInvisible(ctx context.Context, group, handle string, d time.Duration) (string, error) {
	if d < 0 || d > maxInvisible {
		return "", fmt.Errorf("%w: invisible duration %s outside 0..%s", ErrInvalidArgument, d, maxInvisible)
	}
	if err := e.checkPopMaster("change invisible time"); err != nil {
		return "", err
	}
	if err := e.refuseWrite(); err != nil {
		return "", err
	}
	pq, h, f, err := e.inflight(group, handle)
	if err != nil {
		return "", err
	}
	defer pq.mu.Unlock()
	deadline := time.Now().Add(d).UnixMilli()
	earlier := deadline < f.Deadline
	f.Deadline = deadline
	f.Nonce = rand.Uint32()
	pq.st.Lease(h.Offset, f)
	pq.markDirty()
	h.Nonce, h.Deadline = f.Nonce, f.Deadline
	r := Delivery{Kind: DeliveryInvisible, Topic: h.Topic, Queue: h.Queue, From: h.Offset, To: h.Offset, Attempt: f.Attempt, Delay: d}
	clientOf(ctx, &r)
	e.history.add(group, r)
	if earlier {
		// The group's waiting pops sleep until the earliest deadline they
		// saw: their timer moves to this one.
		e.expirePops(h.Topic, group, deadline)
	}
	return e.handles.Load().Encode(h, group), nil
}

// DeadLetter sends the message named by handle to the group's dead-letter
// topic and acknowledges it.
func (e *Engine) DeadLetter(ctx context.Context, group, handle string) error {
	if err := e.checkPopMaster("dead-letter"); err != nil {
		return err
	}
	pq, h, f, err := e.inflight(group, handle)
	if err != nil {
		return err
	}
	defer pq.mu.Unlock()
	q, err := e.readQueue(h.Topic, h.Queue)
	if err != nil {
		return err
	}
	rec, ok, err := e.popRecordAt(q, h.Offset, nil, nil)
	if err != nil {
		return err
	}
	if ok {
		if err := e.deadLetter(group, rec, f.Attempt); err != nil {
			return err
		}
	}
	pq.st.Finish(h.Offset)
	pq.markDirty()
	e.wakePop(h.Topic, group)
	return nil
}

// inflight resolves a handle to its in-flight entry and returns with the
// entry's queue locked.
func (e *Engine) inflight(group, handle string) (*popQueue, pop.Handle, *pop.Inflight, error) {
	if err := e.checkOpen(); err != nil {
		return nil, pop.Handle{}, nil, err
	}
	h, err := e.handles.Load().Decode(handle, group)
	if err != nil {
		return nil, h, nil, err
	}
	pq, err := e.handleQueue(group, h)
	if err != nil {
		return nil, h, nil, err
	}
	pq.mu.Lock()
	f, err := checkInflight(pq, h)
	if err != nil {
		pq.mu.Unlock()
		return nil, h, nil, err
	}
	return pq, h, f, nil
}

// handleQueue returns the pop state of the queue of a decoded handle.
func (e *Engine) handleQueue(group string, h pop.Handle) (*popQueue, error) {
	q, err := e.readQueue(h.Topic, h.Queue)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidHandle, err)
	}
	return e.popQueue(popKey{group, h.Topic, h.Queue}, q)
}

// checkInflight returns the in-flight entry h names in pq, whose lock the
// caller holds, or why there is none.
func checkInflight(pq *popQueue, h pop.Handle) (*pop.Inflight, error) {
	f, ok := pq.st.Inflight[h.Offset]
	if ok && f.Nonce == h.Nonce {
		return f, nil
	}
	if !ok && (h.Offset < pq.st.AckedBelow || pq.st.Done.Has(h.Offset)) {
		return nil, fmt.Errorf("%w: %w: message %s/%d@%d", ErrHandleExpired, ErrAlreadyDone, h.Topic, h.Queue, h.Offset)
	}
	return nil, fmt.Errorf("%w: message %s/%d@%d was redelivered or its lease changed", ErrHandleExpired, h.Topic, h.Queue, h.Offset)
}

// deadLetter stores a copy of rec in the group's dead-letter topic.
func (e *Engine) deadLetter(group string, rec []byte, attempts int32) error {
	m, _, err := message.DecodeStored(rec)
	if err != nil {
		return fmt.Errorf("engine: dead-letter: %w", err)
	}
	dlq := message.DLQTopic(group)
	q, err := e.systemQueue(dlq)
	if err != nil {
		return err
	}
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	gaveUp := Delivery{Kind: DeliveryDeadLetter, Topic: m.Topic, Queue: m.QueueID, From: m.QueueOffset, To: m.QueueOffset, ID: historyID(m), Attempt: attempts}
	origin := m.Topic
	if rt := m.Properties[message.PropertyRetryTopic]; rt != "" {
		origin = rt
	}
	m.Properties[message.PropertyDLQOriginTopic] = origin
	m.Properties[message.PropertyDLQOriginMessageID] = m.ID()
	m.Properties[message.PropertyRetryTopic] = origin
	m.ReconsumeTimes = attempts
	m.Topic = dlq
	t, _ := e.topic(dlq) // counts the dead letter in, as retry does its topic's
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	msgs := [1]*message.Message{m}
	if err := e.store(s, t, q, msgs[:], "", nil); err != nil {
		return err
	}
	e.history.add(group, gaveUp)
	return nil
}

// flushPops persists every changed pop state.
func (e *Engine) flushPops(sync bool) error {
	return e.savePops(e.popDirty.take(), sync)
}

// savePops persists those of qs that changed since they were last saved.
func (e *Engine) savePops(qs []*popQueue, sync bool) error {
	var recs []meta.PopRecord
	var from []*popQueue // the state of each of recs
	for _, pq := range qs {
		pq.mu.Lock()
		if pq.dirty && !pq.dropped {
			data, _ := pq.st.MarshalBinary()
			recs = append(recs, meta.PopRecord{Group: pq.key.group, Topic: pq.key.topic, Queue: pq.key.queue, State: data, Offset: pq.st.AckedBelow})
			from = append(from, pq)
		}
		pq.dirty = false
		pq.mu.Unlock()
	}
	if len(recs) == 0 {
		return nil
	}
	if hook := e.popSaveHook.Load(); hook != nil {
		(*hook)()
	}
	e.popSaveMu.Lock()
	defer e.popSaveMu.Unlock()
	// A state dropped since it was read (its group or topic deleted, or
	// the master's state applied over it) must not be written back.
	live := recs[:0]
	for i, r := range recs {
		pq := from[i]
		pq.mu.Lock()
		if !pq.dropped {
			live = append(live, r)
		}
		pq.mu.Unlock()
	}
	if len(live) == 0 {
		return nil
	}
	if err := e.meta.SavePopStates(live, sync); err != nil {
		// Not saved: keep them for the next flush (the disk may be full
		// for a while; what was acknowledged must not be forgotten).
		for _, pq := range qs {
			pq.mu.Lock()
			if !pq.dropped {
				pq.markDirty()
			}
			pq.mu.Unlock()
		}
		return err
	}
	return nil
}

func (e *Engine) popFlushLoop() {
	defer e.wg.Done()
	t := time.NewTicker(popFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-e.closing:
			if err := e.flushPops(true); err != nil {
				e.opts.Logger.Error("saving pop state failed", "err", err)
			}
			return
		case <-t.C:
			// While the disk is full the monitor has said so once; the
			// states stay dirty and are saved when space returns.
			if err := e.flushPops(false); err != nil && !errors.Is(err, ErrDiskFull) {
				e.opts.Logger.Error("saving pop state failed", "err", err)
			}
		}
	}
}

// loadHandleKey reads (creating on first open) the key receipt handles are
// authenticated with, so handles stay valid across restarts.
func (e *Engine) loadHandleKey() error {
	key, ok, err := e.meta.Secret(popKeyMetaHandles)
	if err != nil {
		return err
	}
	if !ok {
		key = make([]byte, 32)
		cryptorand.Read(key)
		if err := e.meta.PutSecret(popKeyMetaHandles, key); err != nil {
			return err
		}
	}
	e.handles.Store(pop.NewSigner(key))
	return nil
}

// popFIFO pops from one queue of a FIFO group, whose lock the caller
// holds: per message group, the first message not yet done is delivered
// when no earlier message of the group is in flight.
func (e *Engine) popFIFO(ctx context.Context, q *queueState, pq *popQueue, o *PopOptions, out []PoppedMessage) ([]PoppedMessage, int64, error) {
	st := pq.st
	now := o.now
	stop := min(q.end.Load(), st.AckedBelow+fifoScanWindow)
	blocked := map[string]bool{}
	// The window is read a run at a time, each twice the one before, so
	// that a pop that fills up early reads little of it.
	var entries []queue.Entry
	for from, run := st.AckedBelow, int64(fifoFirstRun); from < stop && len(out) < o.Max && len(st.Inflight) < maxInflight; run *= 2 {
		var err error
		entries, err = e.queues.Entries(q.topic, q.id, from, int(min(stop-from, run)), entries[:0])
		if err != nil {
			return out, 0, err
		}
		if len(entries) == 0 {
			break
		}
		from = entries[len(entries)-1].Offset + 1
		if out, err = e.popFIFOEntries(q, pq, entries, stop, blocked, now, o, out); err != nil {
			return out, 0, err
		}
	}
	if err := ctx.Err(); err != nil {
		return out, 0, err
	}
	return out, st.NextDeadline(now), nil
}

// popFIFOEntries does popFIFO's work for a run of consume-queue
// entries, which end before stop.
func (e *Engine) popFIFOEntries(q *queueState, pq *popQueue, entries []queue.Entry, stop int64, blocked map[string]bool, now int64, o *PopOptions, out []PoppedMessage) ([]PoppedMessage, error) {
	st := pq.st
	for _, en := range entries {
		if len(out) == o.Max || en.Offset >= stop || len(st.Inflight) >= maxInflight {
			break
		}
		off := en.Offset
		if st.Done.Has(off) {
			continue
		}
		var err error
		if f, ok := st.Inflight[off]; ok {
			if out, err = e.fifoInflight(q, pq, en.CommitLogOffset, en.TagHash, off, f, blocked, now, o, out); err != nil {
				return out, err
			}
			continue
		}
		st.Cursor = max(st.Cursor, off+1)
		pq.markDirty()
		mark := len(*o.arena)
		rec, ok, err := e.popRecord(q, en.CommitLogOffset, en.TagHash, o.Filter, o.arena)
		if err != nil {
			return out, err
		}
		if !ok {
			st.Finish(off)
			continue
		}
		group := messageGroup(rec)
		if blocked[group] {
			*o.arena = (*o.arena)[:mark] // not delivered: its room is reused
			continue
		}
		blocked[group] = true
		out = e.deliver(q, pq, off, &pop.Inflight{Attempt: firstAttempt(rec), Group: group}, rec, now, o, out)
	}
	return out, nil
}

// fifoInflight handles an in-flight message met by a FIFO pop: it blocks
// its group while invisible; once expired it is delivered again (or
// dead-lettered after its last attempt); a repeated receive attempt gets
// it again at once.
func (e *Engine) fifoInflight(q *queueState, pq *popQueue, clOffset, tagHash, off int64, f *pop.Inflight, blocked map[string]bool, now int64, o *PopOptions, out []PoppedMessage) ([]PoppedMessage, error) {
	if blocked[f.Group] {
		return out, nil
	}
	expired := f.Deadline <= now
	retry := o.AttemptID != "" && f.AttemptID == o.AttemptID
	if !expired && !retry {
		blocked[f.Group] = true
		return out, nil
	}
	rec, ok, err := e.popRecord(q, clOffset, tagHash, o.Filter, o.arena)
	if err != nil {
		return out, err
	}
	if !ok {
		pq.st.Finish(off)
		pq.markDirty()
		return out, nil
	}
	if expired {
		if f.Attempt >= o.MaxAttempts {
			if err := e.deadLetter(pq.key.group, rec, f.Attempt); err != nil {
				return out, err
			}
			pq.st.Finish(off)
			pq.markDirty()
			return out, nil
		}
		f.Attempt++
	}
	blocked[f.Group] = true
	return e.deliver(q, pq, off, f, rec, now, o, out), nil
}

// messageGroup returns the FIFO message group of a stored record.
func messageGroup(rec []byte) string {
	h, err := message.PeekStored(rec)
	if err != nil {
		return ""
	}
	g, _ := message.LookupProperty(h.Properties, message.PropertyShardingKey)
	return string(g)
}
