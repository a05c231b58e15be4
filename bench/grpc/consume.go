package grpc

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Receive settings: messages stay invisible long enough never to come
// back during a run, and an empty receive waits briefly.
const (
	invisibleTime = 60 * time.Second
	pollTime      = 5 * time.Second
)

// preloadInflight is the minimum number of sends in flight per producer
// while pre-loading.
const preloadInflight = 64

// Consume implements bench.Generator.
func (g *Generator) Consume(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	w.EnsureDefaults()
	pre := w
	pre.Inflight = max(w.Inflight, preloadInflight)
	if _, err := g.produce(bench.Unobserved(ctx), pre); err != nil {
		return bench.Measurement{}, fmt.Errorf("grpc bench: pre-load: %w", err)
	}
	return g.receive(ctx, w)
}

// receive runs the receivers until w.Count messages have been received
// and acknowledged.
func (g *Generator) receive(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	receivers := w.Consumers
	if receivers == 0 {
		receivers = int(g.o.Queues)
	}
	group := fmt.Sprintf("%s_%s", g.o.ConsumerGroup, g.run)
	conns, err := g.connect(ctx, g.connsFor(receivers), consumerSettings(group, w.Topic))
	if err != nil {
		return bench.Measurement{}, err
	}
	defer conns.close()

	// A receiver acknowledges what it received while it asks for more,
	// as a push consumer does, with at most one acknowledgement in
	// flight: the builder of a receive is acknowledged while the next
	// receive fills the other.
	type receiver struct {
		c    *conn
		acks [2]*ackBuilder
		hist latency.Histogram
	}
	rs := make([]*receiver, receivers)
	for i := range rs {
		rs[i] = &receiver{c: conns.get(i), acks: [2]*ackBuilder{newAckBuilder(group, w.Topic), newAckBuilder(group, w.Topic)}}
	}
	req, err := encode(&rmqpb.ReceiveMessageRequest{
		Group:              &rmqpb.Resource{Name: group},
		MessageQueue:       &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: w.Topic}},
		FilterExpression:   &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
		BatchSize:          int32(w.Batch),
		InvisibleDuration:  durationpb.New(invisibleTime),
		LongPollingTimeout: durationpb.New(pollTime),
	})
	if err != nil {
		return bench.Measurement{}, err
	}

	var got, retries atomic.Int64
	var lastAt atomic.Int64 // nanoseconds after start of the last message
	done, stop := context.WithCancel(ctx)
	defer stop()
	grp, gctx := errgroup.WithContext(done)
	bench.Begin(ctx)
	start := time.Now()
	acked := func(n int) {
		if got.Add(int64(n)) >= w.Count {
			lastAt.CompareAndSwap(0, int64(time.Since(start)))
			stop()
		}
	}
	for _, r := range rs {
		grp.Go(func() (err error) {
			var pending chan error // the acknowledgement in flight
			defer func() {
				if pending != nil {
					if aerr := <-pending; err == nil {
						err = aerr
					}
				}
				if err != nil && gctx.Err() != nil && got.Load() >= w.Count {
					err = nil
				}
			}()
			for turn := 0; got.Load() < w.Count; {
				a := r.acks[turn%2]
				t0 := time.Now()
				if err := g.receiveOnce(gctx, r.c, req, a); err != nil {
					return err
				}
				r.hist.Record(time.Since(t0))
				switch a.code {
				case rmqpb.Code_OK, rmqpb.Code_MESSAGE_NOT_FOUND:
				case rmqpb.Code_TOO_MANY_REQUESTS:
					retries.Add(1)
					continue
				default:
					return fmt.Errorf("grpc bench: receive: %s %s", a.code, a.msg)
				}
				if a.entries == 0 {
					continue
				}
				if pending != nil {
					err := <-pending
					pending = nil
					if err != nil {
						return err
					}
				}
				pending = make(chan error, 1)
				go func(done chan<- error) {
					err := g.ack(gctx, r.c, a)
					if err == nil {
						acked(a.entries)
					}
					done <- err
				}(pending)
				turn++
			}
			return nil
		})
	}
	err = grp.Wait()
	bench.End(ctx)
	if err != nil && !(errors.Is(err, context.Canceled) && got.Load() >= w.Count) {
		return bench.Measurement{}, err
	}
	elapsed := time.Duration(lastAt.Load())
	if elapsed == 0 {
		elapsed = time.Since(start)
	}
	if got.Load() < w.Count {
		return bench.Measurement{}, fmt.Errorf("grpc bench: received %d of %d messages", got.Load(), w.Count)
	}
	var h latency.Histogram
	for _, r := range rs {
		h.Merge(&r.hist)
	}
	return bench.Measurement{Messages: got.Load(), Elapsed: elapsed, Latency: &h, Retries: retries.Load(), Consumers: receivers}, nil
}

// receiveOnce runs one ReceiveMessage with the encoded request req,
// leaving in ack the acknowledgement of what it delivered and its status.
func (g *Generator) receiveOnce(ctx context.Context, c *conn, req *encoded, ack *ackBuilder) error {
	rctx, cancel := context.WithTimeout(ctx, g.o.RequestTimeout+pollTime)
	defer cancel()
	ack.reset()
	if err := c.ch.serverStream(rctx, rmqpb.MessagingService_ReceiveMessage_FullMethodName, req, ack); err != nil {
		return fmt.Errorf("grpc bench: receive: %w", err)
	}
	return nil
}

// ack sends the acknowledgement a receive built.
func (g *Generator) ack(ctx context.Context, c *conn, a *ackBuilder) error {
	actx, cancel := context.WithTimeout(ctx, g.o.RequestTimeout)
	defer cancel()
	resp := reply{entryStatus: fieldAckEntryStatus}
	if err := c.ch.invoke(actx, rmqpb.MessagingService_AckMessage_FullMethodName, a.request(), &resp); err != nil {
		return fmt.Errorf("grpc bench: ack: %w", err)
	}
	return resp.err("ack")
}
