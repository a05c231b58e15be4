package enginebench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// wakeupGrace is how long a wake-up phase waits, after its last send, for
// the consumers to receive everything.
const wakeupGrace = 10 * time.Second

// seqSize is the size of the sequence number at the start of a wake-up
// message's body.
const seqSize = 8

// wakeup is the shared state of a wake-up phase. The producer writes the
// sequence number of each message into the first bytes of its body and,
// just before sending it, stores the monotonic time since began at that
// index of sent; a consumer holding the message reads it back. It is safe
// for concurrent use.
type wakeup struct {
	began    time.Time
	sent     []atomic.Int64 // time.Duration since began
	got      []atomic.Bool
	received atomic.Int64
	done     chan struct{} // closed once every message was received
}

func newWakeup(n int) *wakeup {
	return &wakeup{
		began: time.Now(),
		sent:  make([]atomic.Int64, n),
		got:   make([]atomic.Bool, n),
		done:  make(chan struct{}),
	}
}

// finished reports whether every message was received.
func (w *wakeup) finished() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// receive records the latency of the stored record rec, received at now
// (a time since began).
func (w *wakeup) receive(rec []byte, now time.Duration, h *latency.Histogram) error {
	hd, err := message.PeekStored(rec)
	if err != nil {
		return fmt.Errorf("enginebench: wake-up message: %w", err)
	}
	if len(hd.Body) < seqSize {
		return fmt.Errorf("enginebench: wake-up message of %d bytes has no sequence number", len(hd.Body))
	}
	seq := binary.BigEndian.Uint64(hd.Body)
	if seq >= uint64(len(w.sent)) {
		return fmt.Errorf("enginebench: wake-up message %d of %d", seq, len(w.sent))
	}
	if w.got[seq].Swap(true) {
		return fmt.Errorf("enginebench: wake-up message %d received twice", seq)
	}
	h.Record(now - time.Duration(w.sent[seq].Load()))
	if w.received.Add(1) == int64(len(w.sent)) {
		close(w.done)
	}
	return nil
}

// wakeupPop measures how soon a consumer waiting in Pop gets a message
// sent to an empty topic.
func (b *bench) wakeupPop(ctx context.Context) (*Result, error) {
	topic := b.topic + "_wakeup"
	consume := func(ctx context.Context, _ int, w *wakeup, h *latency.Histogram) error {
		opts := engine.PopOptions{Group: b.group, Topic: topic, Max: b.o.Batch, Invisible: popInvisible, Wait: time.Second}
		for !w.finished() {
			got, err := b.eng.Pop(ctx, opts)
			now := time.Since(w.began)
			if err != nil {
				return fmt.Errorf("enginebench: pop: %w", err)
			}
			for i := range got {
				if err := w.receive(got[i].Record, now, h); err != nil {
					return err
				}
			}
			for i := range got {
				if err := b.eng.Ack(ctx, b.group, got[i].Handle); err != nil {
					return fmt.Errorf("enginebench: ack: %w", err)
				}
			}
		}
		return nil
	}
	return b.wakeupPhase(ctx, "wakeup_pop", topic, b.o.Consumers, engine.AnyQueue, consume)
}

// wakeupPull measures how soon a consumer waiting in WaitForArrival, then
// pulling, gets a message sent to an empty queue. Each consumer waits on
// its own queue and the producer sends to those queues in turn.
func (b *bench) wakeupPull(ctx context.Context) (*Result, error) {
	topic := b.topic + "_wakeup"
	consumers := min(b.o.Consumers, int(b.o.Queues))
	consume := func(ctx context.Context, c int, w *wakeup, h *latency.Histogram) error {
		q := int32(c)
		var off int64
		for !w.finished() {
			if err := b.eng.WaitForArrival(ctx, topic, q, off); err != nil {
				return fmt.Errorf("enginebench: wait on queue %d at %d: %w", q, off, err)
			}
			res, err := b.eng.Pull(ctx, topic, q, off, b.o.Batch, nil)
			now := time.Since(w.began)
			if err != nil {
				return fmt.Errorf("enginebench: pull queue %d at %d: %w", q, off, err)
			}
			for _, rec := range res.Records {
				if err := w.receive(rec, now, h); err != nil {
					return err
				}
			}
			off = res.NextOffset
			res.Release()
		}
		return nil
	}
	return b.wakeupPhase(ctx, "wakeup_pull", topic, consumers, int32(consumers), consume)
}

// wakeupPhase creates topic, starts consumers goroutines running consume,
// and sends WakeupCount messages one at a time, WakeupInterval apart: to
// queue i%queues when queues > 0, else to any queue.
func (b *bench) wakeupPhase(ctx context.Context, phase, topic string, consumers int, queues int32,
	consume func(ctx context.Context, c int, w *wakeup, h *latency.Histogram) error) (*Result, error) {
	if err := b.eng.CreateTopic(meta.Topic{Name: topic, ReadQueues: b.o.Queues, WriteQueues: b.o.Queues, Perm: meta.PermRW}); err != nil {
		return nil, fmt.Errorf("enginebench: create topic: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := &firstErr{cancel: cancel}

	cpu := cpuTime()
	w := newWakeup(b.o.WakeupCount)
	hists := make([]latency.Histogram, consumers)
	var wg sync.WaitGroup
	for c := range consumers {
		wg.Go(func() {
			err := consume(ctx, c, w, &hists[c])
			if err != nil && !(w.finished() && errors.Is(err, context.Canceled)) {
				fail.set(err)
			}
		})
	}
	if err := b.wakeupSend(ctx, topic, queues, w); err != nil {
		fail.set(err)
	} else {
		grace := time.NewTimer(wakeupGrace)
		select {
		case <-w.done:
		case <-ctx.Done():
		case <-grace.C:
			fail.set(fmt.Errorf("enginebench: %s: received %d of %d messages %s after the last send", phase, w.received.Load(), b.o.WakeupCount, wakeupGrace))
		}
		grace.Stop()
	}
	elapsed, cpu := time.Since(w.began), cpuTime()-cpu
	cancel() // wakes the consumers still waiting
	wg.Wait()
	if fail.err != nil {
		return nil, fail.err
	}
	if !w.finished() {
		return nil, ctx.Err()
	}

	var h latency.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	r := &Result{Phase: phase, Batch: b.o.Batch, Consumers: consumers, IntervalUs: round(micros(b.o.WakeupInterval)), Flush: b.o.Flush.String()}
	summarize(r, &h, int64(b.o.WakeupCount), max(b.o.Size, seqSize), elapsed, cpu)
	return r, nil
}

// wakeupSend sends the messages of a wake-up phase, recording in w the
// time just before each send.
func (b *bench) wakeupSend(ctx context.Context, topic string, queues int32, w *wakeup) error {
	body := make([]byte, max(b.o.Size, seqSize))
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	pause := time.NewTimer(0)
	defer pause.Stop()
	var m message.Message
	for i := range w.sent {
		due := w.began.Add(time.Duration(i+1) * b.o.WakeupInterval)
		if d := time.Until(due); d > 0 {
			pause.Reset(d)
			select {
			case <-pause.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		q := engine.AnyQueue
		if queues > 0 {
			q = int32(i) % queues
		}
		binary.BigEndian.PutUint64(body, uint64(i))
		m = message.Message{Topic: topic, Body: body, BornTimestamp: time.Now().UnixMilli()}
		w.sent[i].Store(int64(time.Since(w.began)))
		if _, err := b.eng.SendToQueue(ctx, &m, q); err != nil {
			return fmt.Errorf("enginebench: send wake-up message %d: %w", i, err)
		}
	}
	return nil
}
