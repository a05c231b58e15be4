package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/latency"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Options.
const (
	DefaultStream    = "BENCH"
	DefaultConsumer  = "bench"
	DefaultConsumers = 8
)

// preloadInflight is the minimum number of publishes in flight per
// producer while pre-loading.
const preloadInflight = 64

// fetchWait bounds one Fetch once the stream has run dry.
const fetchWait = 2 * time.Second

// Options configure a Generator.
type Options struct {
	// URL of the NATS server. Required.
	URL string
	// Stream is the name of the stream the phases create. Default
	// DefaultStream.
	Stream string
	// Consumers is the number of pullers when the workload leaves it 0.
	// Default DefaultConsumers (the queue count of a Karman topic).
	Consumers int
	// Connections is the number of connections the producers (or
	// pullers) of a phase share; 0, the default, gives each its own.
	Connections int
}

// Generator drives a NATS server through the JetStream API. It implements
// bench.Generator.
type Generator struct{ o Options }

// New returns a Generator for the server at o.URL.
func New(o Options) (*Generator, error) {
	if o.URL == "" {
		return nil, errors.New("jetstream: no server URL")
	}
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.Consumers <= 0 {
		o.Consumers = DefaultConsumers
	}
	if o.Connections < 0 {
		return nil, fmt.Errorf("jetstream: connections %d: want 0 (one each) or more", o.Connections)
	}
	return &Generator{o: o}, nil
}

// subject turns a topic into a subject: NATS subjects may not hold
// spaces, and '.' separates tokens, which is harmless.
func subject(topic string) string { return strings.ReplaceAll(topic, " ", "_") }

// connsFor returns the number of connections for workers goroutines.
func (g *Generator) connsFor(workers int) int {
	if g.o.Connections > 0 {
		return min(g.o.Connections, workers)
	}
	return workers
}

// connect opens n connections with a JetStream context each.
func (g *Generator) connect(n, maxPending int) ([]*nats.Conn, []jetstream.JetStream, error) {
	ncs := make([]*nats.Conn, 0, n)
	jss := make([]jetstream.JetStream, 0, n)
	for range n {
		nc, err := nats.Connect(g.o.URL, nats.Name("karman-bench"))
		if err != nil {
			closeAll(ncs)
			return nil, nil, fmt.Errorf("jetstream: connect: %w", err)
		}
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending))
		if err != nil {
			nc.Close()
			closeAll(ncs)
			return nil, nil, fmt.Errorf("jetstream: %w", err)
		}
		ncs = append(ncs, nc)
		jss = append(jss, js)
	}
	return ncs, jss, nil
}

func closeAll(ncs []*nats.Conn) {
	for _, nc := range ncs {
		nc.Close()
	}
}

// freshStream deletes the stream if it exists and creates it empty.
func (g *Generator) freshStream(ctx context.Context, topic string) error {
	nc, err := nats.Connect(g.o.URL)
	if err != nil {
		return fmt.Errorf("jetstream: connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if err := js.DeleteStream(ctx, g.o.Stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("jetstream: delete stream %s: %w", g.o.Stream, err)
	}
	cfg := jetstream.StreamConfig{
		Name:      g.o.Stream,
		Subjects:  []string{subject(topic)},
		Storage:   jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy,
		Replicas:  1,
	}
	// The server may still be removing the files of the stream just
	// deleted: creating it again then fails for a moment.
	for tries := 1; ; tries++ {
		_, err = js.CreateStream(ctx, cfg)
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != errStoreFailed || tries == createTries {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(createPause):
		}
	}
	if err != nil {
		return fmt.Errorf("jetstream: create stream %s: %w", g.o.Stream, err)
	}
	return nil
}

// errStoreFailed is JetStream's "error creating store for stream".
const errStoreFailed jetstream.ErrorCode = 10049

// createTries and createPause bound the retries of a stream's creation
// while the server removes the files of the one deleted before.
const (
	createTries = 100
	createPause = 20 * time.Millisecond
)

// Produce implements bench.Generator.
func (g *Generator) Produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	w.EnsureDefaults()
	if err := g.freshStream(ctx, w.Topic); err != nil {
		return bench.Measurement{}, err
	}
	return g.produce(ctx, w)
}

func (g *Generator) produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	// A shared connection carries the in-flight publishes of all its
	// producers.
	conns := g.connsFor(w.Producers)
	ncs, jss, err := g.connect(conns, (w.Producers+conns-1)/conns*w.Inflight+1)
	if err != nil {
		return bench.Measurement{}, err
	}
	defer closeAll(ncs)

	body := w.Body()
	subj := subject(w.Topic)
	hists := make([]latency.Histogram, w.Producers)
	var acked atomic.Int64
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	bench.Begin(ctx)
	start := time.Now()
	for i := range w.Producers {
		n := bench.Share(w.Count, w.Producers, i)
		wg.Go(func() {
			var (
				done int64
				err  error
			)
			if w.Inflight <= 1 {
				done, err = publishSync(ctx, jss[i%conns], subj, body, n, &hists[i])
			} else {
				done, err = publishAsync(ctx, jss[i%conns], subj, body, n, w.Inflight, &hists[i])
			}
			acked.Add(done)
			if err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	bench.End(ctx)
	if err := context.Cause(ctx); err != nil {
		return bench.Measurement{}, err
	}
	var h latency.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	if acked.Load() != w.Count {
		return bench.Measurement{}, fmt.Errorf("jetstream: %d of %d messages acknowledged", acked.Load(), w.Count)
	}
	return bench.Measurement{Messages: acked.Load(), Elapsed: elapsed, Latency: &h}, nil
}

func publishSync(ctx context.Context, js jetstream.JetStream, subj string, body []byte, n int64, h *latency.Histogram) (int64, error) {
	for i := range n {
		t0 := time.Now()
		if _, err := js.Publish(ctx, subj, body); err != nil {
			return i, fmt.Errorf("jetstream: publish: %w", err)
		}
		h.Record(time.Since(t0))
	}
	return n, nil
}

// pending is one asynchronous publish waiting for its acknowledgement.
type pending struct {
	f  jetstream.PubAckFuture
	t0 time.Time
}

// publishAsync keeps up to inflight publishes outstanding. Acks of one
// connection come back in order, so a collector waits for them first in,
// first out and frees a slot for each.
func publishAsync(ctx context.Context, js jetstream.JetStream, subj string, body []byte, n int64, inflight int, h *latency.Histogram) (int64, error) {
	slots := make(chan struct{}, inflight)
	queue := make(chan pending, inflight)
	var (
		acked int64
		cerr  error
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for p := range queue {
			select {
			case <-p.f.Ok():
				h.Record(time.Since(p.t0))
				acked++
			case err := <-p.f.Err():
				if cerr == nil {
					cerr = fmt.Errorf("jetstream: async publish: %w", err)
				}
			case <-ctx.Done():
				if cerr == nil {
					cerr = context.Cause(ctx)
				}
			}
			<-slots
		}
	}()
	var err error
	for range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
		if err != nil {
			break
		}
		t0 := time.Now()
		f, perr := js.PublishAsync(subj, body)
		if perr != nil {
			err = fmt.Errorf("jetstream: async publish: %w", perr)
			break
		}
		queue <- pending{f, t0} // never blocks: slots bounds it
	}
	close(queue)
	<-done
	if err == nil {
		err = cerr
	}
	return acked, err
}
