package enginebench

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
)

const (
	// preloadBatch is the number of messages per SendBatch of the
	// pre-load.
	preloadBatch = 32
	// popInvisible is how long a popped message stays invisible: far
	// longer than a run, so nothing is delivered twice.
	popInvisible = 60 * time.Second
	// idleLimit is how long a consumer may find nothing while messages
	// are still unconsumed before the run fails.
	idleLimit = 10 * time.Second
)

// preload sends Count messages of Size bytes from Producers goroutines,
// preloadBatch per SendBatch, and waits until the engine has indexed them.
// Nothing is measured.
func (b *bench) preload(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := &firstErr{cancel: cancel}

	body := make([]byte, b.o.Size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	var wg sync.WaitGroup
	for p := range b.o.Producers {
		n := b.o.Count / int64(b.o.Producers)
		if int64(p) < b.o.Count%int64(b.o.Producers) {
			n++
		}
		wg.Go(func() {
			var h latency.Histogram
			if err := b.produce(ctx, n, preloadBatch, body, &h); err != nil {
				fail.set(fmt.Errorf("enginebench: pre-load: %w", err))
			}
		})
	}
	wg.Wait()
	if fail.err != nil {
		return fail.err
	}
	if err := b.eng.WaitDispatched(ctx); err != nil {
		return fmt.Errorf("enginebench: wait for dispatch: %w", err)
	}
	return nil
}

// seenSet records which (queue, offset) pairs were consumed, so that a
// phase can prove it consumed every message exactly once. It is safe for
// concurrent use.
type seenSet struct {
	queues [][]atomic.Uint64 // a bit per offset of each queue
	ends   []int64
}

// newSeenSet sizes a set for the current offsets of the benchmark topic's
// queues, which must start at 0 and hold want messages in all.
func (b *bench) newSeenSet(want int64) (*seenSet, error) {
	ends := make([]int64, b.o.Queues)
	var total int64
	for q := range b.o.Queues {
		lo, err := b.eng.MinOffset(b.topic, q)
		if err != nil {
			return nil, fmt.Errorf("enginebench: queue %d: %w", q, err)
		}
		if ends[q], err = b.eng.MaxOffset(b.topic, q); err != nil {
			return nil, fmt.Errorf("enginebench: queue %d: %w", q, err)
		}
		if lo != 0 {
			return nil, fmt.Errorf("enginebench: queue %d starts at %d, want 0", q, lo)
		}
		total += ends[q]
	}
	if total != want {
		return nil, fmt.Errorf("enginebench: the queues hold %d messages, pre-loaded %d", total, want)
	}
	return makeSeenSet(ends), nil
}

// makeSeenSet returns an empty set for queues holding offsets [0, ends[q]).
func makeSeenSet(ends []int64) *seenSet {
	s := &seenSet{queues: make([][]atomic.Uint64, len(ends)), ends: ends}
	for q, end := range ends {
		s.queues[q] = make([]atomic.Uint64, (end+63)/64)
	}
	return s
}

// mark records the message at (q, off) as consumed; it reports an error
// when the message is outside the queues or was consumed before.
func (s *seenSet) mark(q int32, off int64) error {
	if q < 0 || int(q) >= len(s.queues) || off < 0 || off >= s.ends[q] {
		return fmt.Errorf("enginebench: consumed queue %d offset %d, outside the pre-loaded messages", q, off)
	}
	bit := uint64(1) << (off % 64)
	if s.queues[q][off/64].Or(bit)&bit != 0 {
		return fmt.Errorf("enginebench: consumed queue %d offset %d twice", q, off)
	}
	return nil
}

// count returns the number of messages marked.
func (s *seenSet) count() int64 {
	var n int64
	for _, words := range s.queues {
		for i := range words {
			n += int64(bits.OnesCount64(words[i].Load()))
		}
	}
	return n
}

// pullPhase pulls every pre-loaded message from Consumers goroutines, each
// owning distinct queues, Batch messages per Pull.
func (b *bench) pullPhase(ctx context.Context) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := &firstErr{cancel: cancel}

	seen, err := b.newSeenSet(b.o.Count)
	if err != nil {
		return nil, err
	}
	consumers := min(b.o.Consumers, int(b.o.Queues))
	hists := make([]latency.Histogram, consumers)
	counts := make([]int64, consumers)
	var wg sync.WaitGroup
	began, cpu := time.Now(), cpuTime()
	for c := range consumers {
		wg.Go(func() {
			for q := int32(c); q < b.o.Queues; q += int32(consumers) {
				n, err := b.pullQueue(ctx, q, seen, &hists[c])
				counts[c] += n
				if err != nil {
					fail.set(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(began), cpuTime()-cpu
	if fail.err != nil {
		return nil, fail.err
	}

	var h latency.Histogram
	var total int64
	for i := range hists {
		h.Merge(&hists[i])
		total += counts[i]
	}
	// mark refused every message met twice; every pre-loaded one was met.
	if marked := seen.count(); total != b.o.Count || marked != b.o.Count {
		return nil, fmt.Errorf("enginebench: pulled %d messages (%d distinct), pre-loaded %d", total, marked, b.o.Count)
	}
	r := &Result{Phase: "pull", Batch: b.o.Batch, Consumers: consumers, Flush: b.o.Flush.String()}
	summarize(r, &h, total, b.o.Size, elapsed, cpu)
	return r, nil
}

// pullQueue pulls queue q from its first offset to its last, Batch
// messages per Pull, and returns the number of messages read.
func (b *bench) pullQueue(ctx context.Context, q int32, seen *seenSet, h *latency.Histogram) (int64, error) {
	end, err := b.eng.MaxOffset(b.topic, q)
	if err != nil {
		return 0, fmt.Errorf("enginebench: queue %d: %w", q, err)
	}
	var n, off int64
	for off < end {
		began := time.Now()
		res, err := b.eng.Pull(ctx, b.topic, q, off, b.o.Batch, nil)
		h.Record(time.Since(began))
		if err != nil {
			return n, fmt.Errorf("enginebench: pull queue %d at %d: %w", q, off, err)
		}
		if len(res.Records) == 0 || res.NextOffset <= off {
			return n, fmt.Errorf("enginebench: pull queue %d at %d made no progress (next %d, max %d)", q, off, res.NextOffset, end)
		}
		for _, rec := range res.Records {
			hd, err := message.PeekStored(rec)
			if err != nil {
				return n, fmt.Errorf("enginebench: pull queue %d at %d: %w", q, off, err)
			}
			if hd.QueueID != q {
				return n, fmt.Errorf("enginebench: pull of queue %d returned a record of queue %d", q, hd.QueueID)
			}
			if err := seen.mark(q, hd.QueueOffset); err != nil {
				return n, err
			}
		}
		n += int64(len(res.Records))
		off = res.NextOffset
		res.Release()
	}
	return n, nil
}

// popPhase pops and acknowledges every pre-loaded message from Consumers
// goroutines, Batch messages per Pop.
func (b *bench) popPhase(ctx context.Context) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := &firstErr{cancel: cancel}

	seen, err := b.newSeenSet(b.o.Count)
	if err != nil {
		return nil, err
	}
	var popped atomic.Int64
	pops := make([]latency.Histogram, b.o.Consumers)
	acks := make([]latency.Histogram, b.o.Consumers)
	var wg sync.WaitGroup
	began, cpu := time.Now(), cpuTime()
	for c := range b.o.Consumers {
		wg.Go(func() {
			if err := b.popConsumer(ctx, &popped, seen, &pops[c], &acks[c]); err != nil {
				fail.set(err)
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(began), cpuTime()-cpu
	if fail.err != nil {
		return nil, fail.err
	}

	var ph, ah latency.Histogram
	for i := range pops {
		ph.Merge(&pops[i])
		ah.Merge(&acks[i])
	}
	// mark refused every message met twice; every pre-loaded one was met.
	if n, marked := popped.Load(), seen.count(); n != b.o.Count || marked != b.o.Count || int64(ah.Count()) != n {
		return nil, fmt.Errorf("enginebench: popped %d messages (%d distinct) and acknowledged %d, pre-loaded %d", n, marked, ah.Count(), b.o.Count)
	}
	r := &Result{Phase: "pop", Batch: b.o.Batch, Consumers: b.o.Consumers, Flush: b.o.Flush.String()}
	summarize(r, &ph, b.o.Count, b.o.Size, elapsed, cpu)
	r.AckP50us = round(micros(ah.Quantile(0.50)))
	r.AckP99us = round(micros(ah.Quantile(0.99)))
	r.AckP999us = round(micros(ah.Quantile(0.999)))
	r.AckMaxUs = round(micros(ah.Max()))
	return r, nil
}

// popConsumer pops and acknowledges until popped reaches Count, recording
// the latency of every Pop into ph and of every Ack into ah.
func (b *bench) popConsumer(ctx context.Context, popped *atomic.Int64, seen *seenSet, ph, ah *latency.Histogram) error {
	opts := engine.PopOptions{Group: b.group, Topic: b.topic, Max: b.o.Batch, Invisible: popInvisible}
	var idleSince time.Time
	for popped.Load() < b.o.Count {
		began := time.Now()
		got, err := b.eng.Pop(ctx, opts)
		now := time.Now()
		ph.Record(now.Sub(began))
		if err != nil {
			return fmt.Errorf("enginebench: pop: %w", err)
		}
		if len(got) == 0 {
			// The last messages are with other consumers.
			if idleSince.IsZero() {
				idleSince = now
			} else if now.Sub(idleSince) > idleLimit {
				return fmt.Errorf("enginebench: pop found nothing for %s with %d of %d messages popped", idleLimit, popped.Load(), b.o.Count)
			}
			runtime.Gosched()
			continue
		}
		idleSince = time.Time{}
		popped.Add(int64(len(got)))
		for i := range got {
			if err := seen.mark(got[i].Queue, got[i].Offset); err != nil {
				return err
			}
		}
		prev := time.Now()
		for i := range got {
			err := b.eng.Ack(ctx, b.group, got[i].Handle)
			now := time.Now()
			ah.Record(now.Sub(prev))
			prev = now
			if err != nil {
				return fmt.Errorf("enginebench: ack queue %d offset %d: %w", got[i].Queue, got[i].Offset, err)
			}
		}
	}
	return nil
}
