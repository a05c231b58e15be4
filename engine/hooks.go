package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
)

// Errors of the hook points (see package hook).
var (
	// ErrRejected: a hook rejected the batch (hook.Reject); the error
	// carries its reason. Nothing of a rejected send is stored. It is
	// hook.ErrRejected.
	ErrRejected = hook.ErrRejected
	// ErrHookFailed: a hook returned an error other than a rejection (a
	// plugin that cannot be reached, say); the call did nothing.
	ErrHookFailed = errors.New("engine: hook failed")
)

// newHooks sorts list into the kinds of hook each value implements.
func newHooks(list []any) (hook.Set, error) {
	s, err := hook.Sort(list)
	if err != nil {
		return hook.Set{}, fmt.Errorf("engine: %w", err)
	}
	return s, nil
}

// Hooks returns Options.Hooks sorted by kind, for the front-ends: they
// call its Authenticators and Authorizers on the requests they serve.
// The set is read-only.
func (e *Engine) Hooks() *hook.Set { return &e.hooks }

// hookError wraps the error a hook h returned during op.
func hookError(ctx context.Context, op string, h any, err error) error {
	switch {
	case errors.Is(err, ErrRejected):
		return fmt.Errorf("engine: %s: %w", op, err)
	case ctx.Err() != nil:
		// The caller gave up; the hook only said so.
		return fmt.Errorf("engine: %s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%w: %T on %s: %w", ErrHookFailed, h, op, err)
}

// beforeStore runs the store hooks on a batch sent to queueID and returns
// the messages to store: msgs with the properties the hooks left.
func (e *Engine) beforeStore(ctx context.Context, msgs []*message.Message, queueID int32) ([]*message.Message, error) {
	topic := msgs[0].Topic
	if err := message.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTopic, err)
	}
	copies := make([]message.Message, len(msgs))
	view := make([]*message.Message, len(msgs))
	for i, m := range msgs {
		if m.Topic != topic {
			return nil, fmt.Errorf("%w: %s and %s", ErrBatchMixedTargets, topic, m.Topic)
		}
		c := *m
		if c.Properties != nil {
			c.Properties = maps.Clone(c.Properties)
			c.EncodedProperties = nil
		}
		// Encoded properties stay encoded until a hook reads them into
		// Properties (or changes them): those no hook touched are
		// stored as they came, without decoding and encoding them again.
		copies[i] = c
		view[i] = &copies[i]
	}
	b := &hook.StoreBatch{Topic: topic, Queue: queueID, Messages: view}
	if c, ok := hook.FromContext(ctx); ok {
		b.Client = *c
	}
	for _, h := range e.hooks.Store {
		if err := h.BeforeStore(ctx, b); err != nil {
			return nil, hookError(ctx, "send to "+topic, h, err)
		}
	}
	// Keep the hooks' properties and nothing else of what they changed.
	for i, m := range msgs {
		props, encoded := copies[i].Properties, copies[i].EncodedProperties
		copies[i] = *m
		copies[i].Properties, copies[i].EncodedProperties = props, encoded
		view[i] = &copies[i]
	}
	return view, nil
}

// beforeDeliver runs the delivery hooks on the stored records recs of
// (topic, queueID) going to group, and returns the batch the hooks saw:
// its Dropped says which records not to deliver.
func (e *Engine) beforeDeliver(ctx context.Context, op, topic string, queueID int32, group string, recs [][]byte) (*hook.DeliverBatch, error) {
	b := &hook.DeliverBatch{Topic: topic, Queue: queueID, Group: group, Messages: make([]*message.Message, len(recs))}
	if c, ok := hook.FromContext(ctx); ok {
		b.Client = *c
	}
	for i, rec := range recs {
		m, _, err := message.DecodeStored(rec)
		if err != nil {
			// Not deliverable past a hook that cannot see it.
			e.corrupt.Add(1)
			e.opts.Logger.Error("dropping an undecodable record from a delivery", "topic", topic, "queue", queueID, "err", err)
			b.Messages[i] = &message.Message{Topic: topic, QueueID: queueID}
			b.Drop(i)
			continue
		}
		b.Messages[i] = m
	}
	for _, h := range e.hooks.Deliver {
		if err := h.BeforeDeliver(ctx, b); err != nil {
			return nil, hookError(ctx, op, h, err)
		}
	}
	return b, nil
}

// pullHooks runs the delivery hooks on the records of a pull of (topic,
// queueID) and takes the dropped ones out of res, keeping the rest back to
// back at the start of its buffer. res.NextOffset stays past them.
func (e *Engine) pullHooks(ctx context.Context, topic string, queueID int32, res *PullResult) error {
	group := ""
	if c, ok := hook.FromContext(ctx); ok {
		group = c.Group
	}
	b, err := e.beforeDeliver(ctx, fmt.Sprintf("pull of %s/%d", topic, queueID), topic, queueID, group, res.Records)
	if err != nil {
		return err
	}
	buf := *res.buf
	w, n := 0, 0
	for i, rec := range res.Records {
		if b.Dropped(i) {
			continue
		}
		size := copy(buf[w:], rec) // w never passes rec's start
		res.Records[n] = buf[w : w+size : w+size]
		w += size
		n++
	}
	clear(res.Records[n:])
	res.Records = res.Records[:n]
	*res.buf = buf[:w]
	return nil
}

// popHooks runs the delivery hooks on the messages a pop took from one
// queue, out[from:], whose pop state the caller holds locked. Dropped
// messages are finished, as filtered ones are; when a hook fails, the
// queue's messages are handed back and left out.
func (e *Engine) popHooks(ctx context.Context, q *queueState, pq *popQueue, o *PopOptions, out []PoppedMessage, from int) ([]PoppedMessage, error) {
	recs := make([][]byte, len(out)-from)
	for i := range recs {
		recs[i] = out[from+i].Record
	}
	b, err := e.beforeDeliver(ctx, fmt.Sprintf("pop of %s/%d for %s", q.topic, q.id, pq.key.group), q.topic, q.id, pq.key.group, recs)
	if err != nil {
		handBack(pq, out[from:], o.now)
		return out[:from], err
	}
	kept := out[:from]
	for i, p := range out[from:] {
		if b.Dropped(i) {
			pq.st.Finish(p.Offset)
			pq.markDirty()
			continue
		}
		kept = append(kept, p)
	}
	clear(out[len(kept):])
	return kept, nil
}

// handBack makes popped messages that will not be delivered visible again
// at once, as if this delivery had not happened: the next pop delivers
// them with the same attempt number. The caller holds pq.mu.
func handBack(pq *popQueue, ps []PoppedMessage, now int64) {
	for _, p := range ps {
		f := pq.st.Inflight[p.Offset]
		if f == nil {
			continue
		}
		f.Deadline = now
		f.Attempt--
		f.Nonce = rand.Uint32() // the handle given out is void
		pq.st.Lease(p.Offset, f)
	}
	pq.markDirty()
}
