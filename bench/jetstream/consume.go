package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/latency"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Consume implements bench.Generator.
func (g *Generator) Consume(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	w.EnsureDefaults()
	if err := g.freshStream(ctx, w.Topic); err != nil {
		return bench.Measurement{}, err
	}
	pre := w
	pre.Inflight = max(w.Inflight, preloadInflight)
	if _, err := g.produce(bench.Unobserved(ctx), pre); err != nil {
		return bench.Measurement{}, fmt.Errorf("jetstream: pre-load: %w", err)
	}

	pullers := w.Consumers
	if pullers == 0 {
		pullers = g.o.Consumers
	}
	ncs, jss, err := g.connect(g.connsFor(pullers), 1)
	if err != nil {
		return bench.Measurement{}, err
	}
	var closeOnce sync.Once
	closeConns := func() { closeOnce.Do(func() { closeAll(ncs) }) }
	defer closeConns()
	if _, err := jss[0].CreateOrUpdateConsumer(ctx, g.o.Stream, jetstream.ConsumerConfig{
		Durable:       DefaultConsumer,
		AckPolicy:     jetstream.AckNonePolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}); err != nil {
		return bench.Measurement{}, fmt.Errorf("jetstream: create consumer: %w", err)
	}
	// The consumers read the whole stream: it must hold what was
	// published, once.
	st, err := jss[0].Stream(ctx, g.o.Stream)
	if err != nil {
		return bench.Measurement{}, fmt.Errorf("jetstream: stream %s: %w", g.o.Stream, err)
	}
	if info, err := st.Info(ctx); err != nil {
		return bench.Measurement{}, fmt.Errorf("jetstream: stream %s: %w", g.o.Stream, err)
	} else if int64(info.State.Msgs) != w.Count {
		return bench.Measurement{}, fmt.Errorf("jetstream: stream %s holds %d messages after the pre-load of %d", g.o.Stream, info.State.Msgs, w.Count)
	}
	consumers := make([]jetstream.Consumer, pullers)
	for i := range consumers {
		if consumers[i], err = jss[i%len(jss)].Consumer(ctx, g.o.Stream, DefaultConsumer); err != nil {
			return bench.Measurement{}, fmt.Errorf("jetstream: consumer: %w", err)
		}
	}

	var (
		got     atomic.Int64
		lastAt  atomic.Int64
		allDone = make(chan struct{})
		doneOne sync.Once
		failed  atomic.Pointer[error]
		wg      sync.WaitGroup
	)
	hists := make([]latency.Histogram, pullers)
	bench.Begin(ctx)
	start := time.Now()
	for i, c := range consumers {
		wg.Go(func() {
			for got.Load() < w.Count {
				t0 := time.Now()
				batch, err := c.Fetch(w.Batch, jetstream.FetchMaxWait(fetchWait))
				if err != nil {
					if got.Load() < w.Count && !errors.Is(err, nats.ErrConnectionClosed) {
						failed.CompareAndSwap(nil, &err)
						doneOne.Do(func() { close(allDone) })
					}
					return
				}
				// A batch short of w.Batch stays open until its expiry:
				// count each message as it arrives, and take the request's
				// latency at its last message, not at the expiry.
				var last time.Time
				for range batch.Messages() {
					last = time.Now()
					if got.Add(1) == w.Count {
						lastAt.Store(int64(last.Sub(start)))
						doneOne.Do(func() { close(allDone) })
					}
				}
				if !last.IsZero() {
					hists[i].Record(last.Sub(t0))
				}
			}
		})
	}
	select {
	case <-allDone:
	case <-ctx.Done():
	}
	// Pullers still waiting in Fetch return once their connection closes.
	closeConns()
	wg.Wait()
	bench.End(ctx)
	if e := failed.Load(); e != nil {
		return bench.Measurement{}, fmt.Errorf("jetstream: fetch: %w", *e)
	}
	if err := ctx.Err(); err != nil {
		return bench.Measurement{}, err
	}
	if got.Load() != w.Count {
		return bench.Measurement{}, fmt.Errorf("jetstream: fetched %d of %d messages", got.Load(), w.Count)
	}
	var h latency.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	return bench.Measurement{Messages: got.Load(), Elapsed: time.Duration(lastAt.Load()), Latency: &h, Consumers: pullers}, nil
}
