package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/bench/remoting"
)

// Defaults of Options.
const (
	DefaultProducerGroup = "karman_bench_go_producer"
	DefaultConsumerGroup = "karman_bench_go_consumer"
)

// preloadInflight is the minimum number of sends in flight per producer
// while pre-loading.
const preloadInflight = 64

// sendTimeout bounds one send, retries included.
const sendTimeout = 30 * time.Second

// Options configure a Generator.
type Options struct {
	// NameServer is the "host:port" of the name server. Required.
	NameServer string
	// Connections is the number of client instances (one connection to
	// each broker apiece) the producers share; 0 gives each producer its
	// own.
	Connections int
	// ProducerGroup and ConsumerGroup name the groups used. Defaults
	// DefaultProducerGroup and DefaultConsumerGroup.
	ProducerGroup string
	ConsumerGroup string
	// Queues is the queue count of topics the generator creates. Default
	// remoting.DefaultQueues.
	Queues int32
	// AccessKey and SecretKey, when AccessKey is set, are the clients'
	// primitive.Credentials (for a server with authentication on).
	AccessKey, SecretKey string
}

// Generator drives a broker through the RocketMQ Go client. It implements
// bench.Generator.
type Generator struct {
	o     Options
	admin *remoting.Generator
	runs  atomic.Int64 // makes instance and group names unique per phase
}

// New connects the administrative side to the name server.
func New(ctx context.Context, o Options) (*Generator, error) {
	if o.NameServer == "" {
		return nil, errors.New("rocketmq: no name server address")
	}
	if o.ProducerGroup == "" {
		o.ProducerGroup = DefaultProducerGroup
	}
	if o.ConsumerGroup == "" {
		o.ConsumerGroup = DefaultConsumerGroup
	}
	rlog.SetLogLevel("error")
	admin, err := remoting.New(ctx, remoting.Options{NameServer: o.NameServer, Queues: o.Queues, AccessKey: o.AccessKey, SecretKey: o.SecretKey})
	if err != nil {
		return nil, err
	}
	return &Generator{o: o, admin: admin}, nil
}

// Close releases the administrative connection.
func (g *Generator) Close() error { return g.admin.Close() }

// startProducers starts n client instances.
func (g *Generator) startProducers(n int) ([]rmq.Producer, error) {
	run := g.runs.Add(1)
	ps := make([]rmq.Producer, 0, n)
	for i := range n {
		p, err := rmq.NewProducer(
			producer.WithNsResolver(primitive.NewPassthroughResolver([]string{g.o.NameServer})),
			producer.WithGroupName(g.o.ProducerGroup),
			producer.WithInstanceName(fmt.Sprintf("bench-%d-%d", run, i)),
			producer.WithRetry(2),
			producer.WithSendMsgTimeout(sendTimeout),
			producer.WithCredentials(primitive.Credentials{AccessKey: g.o.AccessKey, SecretKey: g.o.SecretKey}),
		)
		if err == nil {
			err = p.Start()
		}
		if err != nil {
			shutdown(ps)
			return nil, fmt.Errorf("rocketmq: start producer: %w", err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func shutdown(ps []rmq.Producer) {
	for _, p := range ps {
		_ = p.Shutdown()
	}
}

// Produce implements bench.Generator.
func (g *Generator) Produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	w.EnsureDefaults()
	if _, _, err := g.admin.EnsureTopic(ctx, w.Topic); err != nil {
		return bench.Measurement{}, err
	}
	return g.produce(ctx, w, true)
}

// produce runs the producers; warm makes each client instance send one
// unmeasured message first, so the route is loaded before the clock
// starts.
func (g *Generator) produce(ctx context.Context, w bench.Workload, warm bool) (bench.Measurement, error) {
	instances := w.Producers
	if g.o.Connections > 0 {
		instances = min(g.o.Connections, w.Producers)
	}
	ps, err := g.startProducers(instances)
	if err != nil {
		return bench.Measurement{}, err
	}
	defer shutdown(ps)
	for _, p := range ps {
		if !warm {
			break
		}
		if _, err := p.SendSync(ctx, primitive.NewMessage(w.Topic, []byte("warm-up"))); err != nil {
			return bench.Measurement{}, fmt.Errorf("rocketmq: warm-up send: %w", err)
		}
	}

	body := w.Body()
	hists := make([]latency.Histogram, w.Producers)
	var acked atomic.Int64
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	bench.Begin(ctx)
	start := time.Now()
	for i := range w.Producers {
		p := ps[i%len(ps)]
		n := bench.Share(w.Count, w.Producers, i)
		wg.Go(func() {
			var (
				done int64
				err  error
			)
			if w.Inflight <= 1 {
				done, err = sendSync(ctx, p, w.Topic, body, n, &hists[i])
			} else {
				done, err = sendAsync(ctx, p, w.Topic, body, n, w.Inflight, &hists[i])
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
	if acked.Load() != w.Count {
		return bench.Measurement{}, fmt.Errorf("rocketmq: %d of %d messages acknowledged", acked.Load(), w.Count)
	}
	var h latency.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	return bench.Measurement{Messages: acked.Load(), Elapsed: elapsed, Latency: &h}, nil
}

func sendSync(ctx context.Context, p rmq.Producer, topic string, body []byte, n int64, h *latency.Histogram) (int64, error) {
	for i := range n {
		t0 := time.Now()
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, body))
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("send status %v", res.Status)
		}
		if err != nil {
			return i, fmt.Errorf("rocketmq: send: %w", err)
		}
		h.Record(time.Since(t0))
	}
	return n, nil
}

// sendAsync keeps up to inflight sends outstanding; callbacks run on the
// client's goroutines, so they share the histogram under a lock.
func sendAsync(ctx context.Context, p rmq.Producer, topic string, body []byte, n int64, inflight int, h *latency.Histogram) (int64, error) {
	slots := make(chan struct{}, inflight)
	var (
		mu    sync.Mutex
		acked int64
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	for range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			fail(context.Cause(ctx))
		}
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop {
			break
		}
		t0 := time.Now()
		wg.Add(1)
		err := p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
			d := time.Since(t0)
			if err == nil && res.Status != primitive.SendOK {
				err = fmt.Errorf("send status %v", res.Status)
			}
			if err != nil {
				fail(fmt.Errorf("rocketmq: async send: %w", err))
			} else {
				mu.Lock()
				h.Record(d)
				acked++
				mu.Unlock()
			}
			<-slots
			wg.Done()
		}, primitive.NewMessage(topic, body))
		if err != nil {
			wg.Done()
			<-slots
			fail(fmt.Errorf("rocketmq: async send: %w", err))
			break
		}
	}
	wg.Wait()
	return acked, first
}

// Consume implements bench.Generator.
func (g *Generator) Consume(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	w.EnsureDefaults()
	_, read, err := g.admin.EnsureTopic(ctx, w.Topic)
	if err != nil {
		return bench.Measurement{}, err
	}
	begin, err := g.admin.MaxOffsets(ctx, w.Topic, read)
	if err != nil {
		return bench.Measurement{}, err
	}
	pre := w
	pre.Inflight = max(w.Inflight, preloadInflight)
	if _, err := g.produce(bench.Unobserved(ctx), pre, false); err != nil {
		return bench.Measurement{}, fmt.Errorf("rocketmq: pre-load: %w", err)
	}
	want := w.Count
	end, err := g.admin.WaitIndexed(ctx, w.Topic, read, begin, want)
	if err != nil {
		return bench.Measurement{}, err
	}

	// One pull consumer per queue: the client's PullFrom is not safe for
	// concurrent use (it rewrites the consumer's fields on every call).
	pcs := make([]rmq.PullConsumer, 0, len(read))
	defer func() {
		for _, pc := range pcs {
			_ = pc.Shutdown()
		}
	}()
	run := g.runs.Add(1)
	for i := range read {
		pc, err := rmq.NewPullConsumer(
			consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{g.o.NameServer})),
			consumer.WithGroupName(g.o.ConsumerGroup),
			consumer.WithInstance(fmt.Sprintf("bench-%d-%d", run, i)),
			consumer.WithCredentials(primitive.Credentials{AccessKey: g.o.AccessKey, SecretKey: g.o.SecretKey}),
		)
		if err != nil {
			return bench.Measurement{}, fmt.Errorf("rocketmq: pull consumer: %w", err)
		}
		// Assigning no queue keeps the consumer's own background pulling
		// idle; PullFrom reads any queue of the topic.
		if err := pc.Assign(w.Topic, nil); err != nil {
			return bench.Measurement{}, fmt.Errorf("rocketmq: assign: %w", err)
		}
		if err := pc.Start(); err != nil {
			return bench.Measurement{}, fmt.Errorf("rocketmq: start pull consumer: %w", err)
		}
		pcs = append(pcs, pc)
	}

	var got atomic.Int64
	hists := make([]latency.Histogram, len(read))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var lastAt atomic.Int64
	bench.Begin(ctx)
	start := time.Now()
	for i, q := range read {
		mq := &primitive.MessageQueue{Topic: w.Topic, BrokerName: q.Broker, QueueId: int(q.ID)}
		wg.Go(func() {
			for off := begin[i]; off < end[i]; {
				t0 := time.Now()
				res, err := pcs[i].PullFrom(ctx, mq, off, w.Batch)
				if err != nil {
					cancel(fmt.Errorf("rocketmq: pull %s at %d: %w", mq, off, err))
					return
				}
				now := time.Now()
				hists[i].Record(now.Sub(t0))
				if res.Status == primitive.PullFound {
					if got.Add(int64(len(res.GetMessageExts()))) >= want {
						lastAt.Store(int64(now.Sub(start)))
					}
				}
				if res.NextBeginOffset <= off && res.Status == primitive.PullFound {
					cancel(fmt.Errorf("rocketmq: pull %s at %d: next offset %d does not advance", mq, off, res.NextBeginOffset))
					return
				}
				off = res.NextBeginOffset
			}
		})
	}
	wg.Wait()
	bench.End(ctx)
	if err := context.Cause(ctx); err != nil {
		return bench.Measurement{}, err
	}
	if got.Load() != want {
		return bench.Measurement{}, fmt.Errorf("rocketmq: pulled %d of %d messages", got.Load(), want)
	}
	var h latency.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	return bench.Measurement{Messages: w.Count, Elapsed: time.Duration(lastAt.Load()), Latency: &h, Consumers: len(read)}, nil
}
