package enginebench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
)

// timerHeader is the size of what starts the body of a timer message: its
// sequence number and its due time in ms since the epoch, both big-endian.
const timerHeader = 16

// deliverStall is how long the deliver phase waits for another arrival,
// once every message is due, before it fails.
const deliverStall = 10 * time.Second

// timerRun is the shared state of a schedule run: which message falls due
// when, and what the consumers have received. It is safe for concurrent
// use.
//
// Due times are wall-clock milliseconds, as the engine takes them; they
// are turned into times since began (captured once, with both clocks), and
// arrivals are measured on the monotonic clock since began. The engine
// delivers a message once the wall clock has reached its due time, so an
// arrival before it is an early delivery (unless the wall clock was
// stepped during the run).
type timerRun struct {
	began   time.Time
	beganNs int64 // began on the wall clock, ns since the epoch
	lead    time.Duration
	window  time.Duration
	count   int64
	size    int // body size, at least timerHeader

	seen     *seenSet     // a bit per sequence number, in "queue" 0
	received atomic.Int64 // messages received
	last     atomic.Int64 // latest arrival, as a time.Duration since began
	done     chan struct{}

	ctx      context.Context // ends when the run stops
	fail     *firstErr
	hists    []latency.Histogram // lateness, per consumer
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// dueMs returns when message seq falls due, in ms since the epoch: lead
// after the start plus its share of the window (the first message at its
// start, the last at its end), rounded up to a whole millisecond.
func (r *timerRun) dueMs(seq int64) int64 {
	ns := r.beganNs + int64(r.lead)
	if r.count > 1 {
		ns += int64(float64(r.window) * float64(seq) / float64(r.count-1))
	}
	return (ns + 999_999) / 1_000_000
}

// sinceBegan turns a wall-clock time in ms since the epoch into a time
// since began.
func (r *timerRun) sinceBegan(ms int64) time.Duration {
	return time.Duration(ms*1_000_000 - r.beganNs)
}

// finished reports whether every message was received.
func (r *timerRun) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// receive checks the delivered record rec, received at now (a time since
// began), and records its lateness in h.
func (r *timerRun) receive(rec []byte, now time.Duration, h *latency.Histogram) error {
	hd, err := message.PeekStored(rec)
	if err != nil {
		return fmt.Errorf("enginebench: delivered timer message: %w", err)
	}
	if len(hd.Body) != r.size {
		return fmt.Errorf("enginebench: delivered timer message of %d bytes, sent %d", len(hd.Body), r.size)
	}
	seq := int64(binary.BigEndian.Uint64(hd.Body))
	due := int64(binary.BigEndian.Uint64(hd.Body[8:]))
	if seq < 0 || seq >= r.count || due != r.dueMs(seq) {
		return fmt.Errorf("enginebench: delivered timer message claims to be number %d due at %d ms", seq, due)
	}
	late := now - r.sinceBegan(due)
	if late < 0 {
		return fmt.Errorf("enginebench: timer message %d arrived %s before its due time", seq, -late)
	}
	if err := r.seen.mark(0, seq); err != nil {
		return fmt.Errorf("enginebench: timer message %d delivered twice", seq)
	}
	h.Record(late)
	for {
		l := r.last.Load()
		if int64(now) <= l || r.last.CompareAndSwap(l, int64(now)) {
			break
		}
	}
	if r.received.Add(1) == r.count {
		close(r.done)
	}
	return nil
}

// consume waits on queue q of topic and pulls whatever arrives until every
// message was received.
func (r *timerRun) consume(ctx context.Context, e *engine.Engine, topic string, q int32, batch int, h *latency.Histogram) error {
	var off int64
	for !r.finished() {
		if err := e.WaitForArrival(ctx, topic, q, off); err != nil {
			return fmt.Errorf("enginebench: wait on queue %d at %d: %w", q, off, err)
		}
		res, err := e.Pull(ctx, topic, q, off, batch, nil)
		now := time.Since(r.began)
		if err != nil {
			return fmt.Errorf("enginebench: pull queue %d at %d: %w", q, off, err)
		}
		for _, rec := range res.Records {
			if err := r.receive(rec, now, h); err != nil {
				res.Release()
				return err
			}
		}
		off = res.NextOffset
		res.Release()
	}
	return nil
}

// stop ends the consumers and waits for them.
func (r *timerRun) stop() {
	r.stopOnce.Do(func() {
		r.fail.cancel()
		r.wg.Wait()
	})
}

// stopTimers stops the consumers of a schedule run, if one started.
func (b *bench) stopTimers() {
	if b.timers != nil {
		b.timers.stop()
	}
}

// schedulePhase starts one consumer per queue of the benchmark topic,
// waiting for deliveries, then sends Count timer messages from Producers
// goroutines, Send per message, and waits until the engine has indexed
// them. Producer p sends messages p, p+Producers, ..., so every producer
// covers the whole window.
func (b *bench) schedulePhase(ctx context.Context) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	began := time.Now()
	r := &timerRun{
		began:   began,
		beganNs: began.UnixNano(),
		lead:    b.o.ScheduleLead,
		window:  b.o.ScheduleWindow,
		count:   b.o.Count,
		size:    max(b.o.Size, timerHeader),
		seen:    makeSeenSet([]int64{b.o.Count}),
		done:    make(chan struct{}),
		ctx:     ctx,
		fail:    &firstErr{cancel: cancel},
		hists:   make([]latency.Histogram, b.o.Queues),
	}
	b.timers = r
	for q := range b.o.Queues {
		r.wg.Go(func() {
			err := r.consume(ctx, b.eng, b.topic, q, b.o.Batch, &r.hists[q])
			if err != nil && !(r.finished() && errors.Is(err, context.Canceled)) {
				r.fail.set(err)
			}
		})
	}

	hists := make([]latency.Histogram, b.o.Producers)
	var wg sync.WaitGroup
	cpu := cpuTime()
	for p := range b.o.Producers {
		wg.Go(func() {
			if err := b.scheduleMessages(ctx, r, int64(p), &hists[p]); err != nil {
				r.fail.set(err)
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(began), cpuTime()-cpu
	if r.fail.err != nil {
		r.stop()
		return nil, r.fail.err
	}
	indexed := time.Now()
	if err := b.eng.WaitDispatched(ctx); err != nil {
		r.stop()
		return nil, fmt.Errorf("enginebench: wait for dispatch: %w", err)
	}
	dispatch := round(float64(time.Since(indexed).Microseconds()) / 1e3)
	if took, first := time.Since(began), r.sinceBegan(r.dueMs(0)); took >= first {
		r.stop()
		return nil, fmt.Errorf("enginebench: sending took %s and indexing %.0fms, past the first due time %s after the start: raise --schedule-lead",
			elapsed.Round(time.Millisecond), dispatch, first.Round(time.Millisecond))
	}

	var h latency.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	res := &Result{Phase: "schedule", Batch: 1, Producers: b.o.Producers, Flush: b.o.Flush.String(), DispatchMs: &dispatch}
	summarize(res, &h, b.o.Count, r.size, elapsed, cpu)
	return res, nil
}

// scheduleMessages sends messages first, first+Producers, ... of r, each
// with its due time in TIMER_DELIVER_MS.
func (b *bench) scheduleMessages(ctx context.Context, r *timerRun, first int64, h *latency.Histogram) error {
	body := make([]byte, r.size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	// The engine does not keep or change a message's properties.
	props := map[string]string{}
	var m message.Message
	for seq := first; seq < r.count; seq += int64(b.o.Producers) {
		due := r.dueMs(seq)
		binary.BigEndian.PutUint64(body, uint64(seq))
		binary.BigEndian.PutUint64(body[8:], uint64(due))
		props[message.PropertyTimerDeliverMS] = strconv.FormatInt(due, 10)
		m = message.Message{Topic: b.topic, Body: body, BornTimestamp: time.Now().UnixMilli(), Properties: props}
		began := time.Now()
		_, err := b.eng.Send(ctx, &m)
		h.Record(time.Since(began))
		if err != nil {
			return fmt.Errorf("enginebench: send timer message %d: %w", seq, err)
		}
	}
	return nil
}

// deliverPhase waits from the first due time until the consumers of the
// schedule phase received every message, then checks that the topic
// holds each exactly once.
func (b *bench) deliverPhase(ctx context.Context) (*Result, error) {
	r := b.timers
	defer r.stop()
	firstDue, lastDue := r.sinceBegan(r.dueMs(0)), r.sinceBegan(r.dueMs(r.count-1))
	pause := time.NewTimer(firstDue - time.Since(r.began))
	select {
	case <-pause.C:
	case <-r.ctx.Done():
	}
	pause.Stop()
	cpu := cpuTime()

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	progress, got := firstDue, int64(-1) // when received last changed, to what
wait:
	for {
		select {
		case <-r.done:
			break wait
		case <-r.ctx.Done():
			break wait
		case <-tick.C:
			now := time.Since(r.began)
			if n := r.received.Load(); n != got {
				progress, got = now, n
			} else if now-max(progress, lastDue) > deliverStall {
				r.fail.set(fmt.Errorf("enginebench: deliver: %d of %d timer messages arrived, none in the %s since", n, r.count, deliverStall))
			}
		}
	}
	cpu = cpuTime() - cpu
	r.stop()
	if r.fail.err != nil {
		return nil, r.fail.err
	}
	if !r.finished() {
		return nil, ctx.Err()
	}
	if marked := r.seen.count(); marked != r.count {
		return nil, fmt.Errorf("enginebench: deliver: received %d distinct timer messages of %d", marked, r.count)
	}
	if err := b.eng.WaitDispatched(ctx); err != nil {
		return nil, fmt.Errorf("enginebench: wait for dispatch: %w", err)
	}
	if stored, err := b.stored(b.topic); err != nil {
		return nil, err
	} else if stored != r.count {
		return nil, fmt.Errorf("enginebench: deliver: the topic holds %d messages, scheduled %d", stored, r.count)
	}

	var h latency.Histogram
	for i := range r.hists {
		h.Merge(&r.hists[i])
	}
	res := &Result{Phase: "deliver", Batch: b.o.Batch, Consumers: int(b.o.Queues), WindowMs: round(float64(r.window.Microseconds()) / 1e3), Flush: b.o.Flush.String()}
	summarize(res, &h, r.count, r.size, time.Duration(r.last.Load())-firstDue, cpu)
	return res, nil
}

// stored returns the number of messages in all queues of topic.
func (b *bench) stored(topic string) (int64, error) {
	var n int64
	for q := range b.o.Queues {
		lo, err := b.eng.MinOffset(topic, q)
		if err != nil {
			return 0, fmt.Errorf("enginebench: queue %d: %w", q, err)
		}
		hi, err := b.eng.MaxOffset(topic, q)
		if err != nil {
			return 0, fmt.Errorf("enginebench: queue %d: %w", q, err)
		}
		n += hi - lo
	}
	return n, nil
}
