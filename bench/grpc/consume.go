package grpc

import (
	"context"
	"errors"
	"fmt"
	"io"
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

	type receiver struct {
		c    *conn
		hist latency.Histogram
	}
	rs := make([]*receiver, receivers)
	for i := range rs {
		rs[i] = &receiver{c: conns.get(i)}
	}
	req := &rmqpb.ReceiveMessageRequest{
		Group:              &rmqpb.Resource{Name: group},
		MessageQueue:       &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: w.Topic}},
		FilterExpression:   &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
		BatchSize:          int32(w.Batch),
		InvisibleDuration:  durationpb.New(invisibleTime),
		LongPollingTimeout: durationpb.New(pollTime),
	}

	var got, retries atomic.Int64
	var lastAt atomic.Int64 // nanoseconds after start of the last message
	done, stop := context.WithCancel(ctx)
	defer stop()
	grp, gctx := errgroup.WithContext(done)
	bench.Begin(ctx)
	start := time.Now()
	for _, r := range rs {
		grp.Go(func() error {
			for got.Load() < w.Count {
				t0 := time.Now()
				entries, code, err := g.receiveOnce(gctx, r.c, req, w.Topic)
				if err != nil {
					if gctx.Err() != nil && got.Load() >= w.Count {
						return nil
					}
					return err
				}
				now := time.Now()
				r.hist.Record(now.Sub(t0))
				switch code {
				case rmqpb.Code_OK, rmqpb.Code_MESSAGE_NOT_FOUND:
				case rmqpb.Code_TOO_MANY_REQUESTS:
					retries.Add(1)
					continue
				default:
					return fmt.Errorf("grpc bench: receive: %s", code)
				}
				if len(entries) == 0 {
					continue
				}
				if err := g.ack(gctx, r.c, group, w.Topic, entries); err != nil {
					return err
				}
				if got.Add(int64(len(entries))) >= w.Count {
					lastAt.CompareAndSwap(0, int64(time.Since(start)))
					stop()
				}
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

// receiveOnce runs one ReceiveMessage and returns the ack entries of the
// messages it delivered and the status code.
func (g *Generator) receiveOnce(ctx context.Context, c *conn, req *rmqpb.ReceiveMessageRequest, topic string) ([]*rmqpb.AckMessageEntry, rmqpb.Code, error) {
	rctx, cancel := context.WithTimeout(ctx, g.o.RequestTimeout+pollTime)
	defer cancel()
	stream, err := c.rpc.ReceiveMessage(c.ctx(rctx), req)
	if err != nil {
		return nil, 0, fmt.Errorf("grpc bench: receive: %w", err)
	}
	var (
		entries []*rmqpb.AckMessageEntry
		code    rmqpb.Code
	)
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return entries, code, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("grpc bench: receive: %w", err)
		}
		switch content := resp.GetContent().(type) {
		case *rmqpb.ReceiveMessageResponse_Status:
			code = content.Status.GetCode()
		case *rmqpb.ReceiveMessageResponse_Message:
			sys := content.Message.GetSystemProperties()
			entries = append(entries, &rmqpb.AckMessageEntry{MessageId: sys.GetMessageId(), ReceiptHandle: sys.GetReceiptHandle()})
		}
	}
}

// ack acknowledges entries with one AckMessage.
func (g *Generator) ack(ctx context.Context, c *conn, group, topic string, entries []*rmqpb.AckMessageEntry) error {
	actx, cancel := context.WithTimeout(ctx, g.o.RequestTimeout)
	defer cancel()
	resp, err := c.rpc.AckMessage(c.ctx(actx), &rmqpb.AckMessageRequest{
		Group:   &rmqpb.Resource{Name: group},
		Topic:   &rmqpb.Resource{Name: topic},
		Entries: entries,
	})
	if err != nil {
		return fmt.Errorf("grpc bench: ack: %w", err)
	}
	if code := resp.GetStatus().GetCode(); code != rmqpb.Code_OK {
		return fmt.Errorf("grpc bench: ack: %s %s", code, resp.GetStatus().GetMessage())
	}
	return nil
}
