package grpc

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"golang.org/x/sync/errgroup"
)

// retryPause is how long a sender waits before repeating a request the
// server answered with TOO_MANY_REQUESTS.
const retryPause = time.Millisecond

// Produce implements bench.Generator.
func (g *Generator) Produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	w.EnsureDefaults()
	return g.produce(ctx, w)
}

// producer is one producer of a phase: its senders share its histogram
// and the count of messages it has left to send.
type producer struct {
	index int
	left  atomic.Int64
	mu    sync.Mutex
	hist  latency.Histogram
}

func (g *Generator) produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	conns, err := g.connect(ctx, g.connsFor(w.Producers), producerSettings(w.Topic))
	if err != nil {
		return bench.Measurement{}, err
	}
	defer conns.close()
	if _, err := g.queryRoute(ctx, conns.get(0), w.Topic); err != nil {
		return bench.Measurement{}, err
	}

	body := w.Body()
	host, _ := os.Hostname()
	producers := make([]*producer, w.Producers)
	var senders []*sender
	for i := range producers {
		p := &producer{index: i}
		p.left.Store(bench.Share(w.Count, w.Producers, i))
		producers[i] = p
		for range w.Inflight {
			senders = append(senders, newSender(p, conns.get(i), w.Topic, host, body))
		}
	}

	var acked, retries atomic.Int64
	grp, gctx := errgroup.WithContext(ctx)
	bench.Begin(ctx)
	start := time.Now()
	for _, s := range senders {
		grp.Go(func() error {
			n, r, err := s.run(gctx, g.o.RequestTimeout)
			acked.Add(n)
			retries.Add(r)
			return err
		})
	}
	err = grp.Wait()
	elapsed := time.Since(start)
	bench.End(ctx)
	if err != nil {
		return bench.Measurement{}, err
	}
	if acked.Load() != w.Count {
		return bench.Measurement{}, fmt.Errorf("grpc bench: %d of %d messages acknowledged", acked.Load(), w.Count)
	}
	var h latency.Histogram
	for _, p := range producers {
		h.Merge(&p.hist)
	}
	return bench.Measurement{Messages: acked.Load(), Elapsed: elapsed, Latency: &h, Retries: retries.Load()}, nil
}

// sender is one in-flight slot of a producer: a request built once, of
// which only the message id and the born time change per message.
type sender struct {
	p   *producer
	c   *conn
	req *sendRequest
	id  []byte // 34 hex digits: version, 8 random bytes, 8-byte counter
	seq uint64
}

func newSender(p *producer, c *conn, topic, host string, body []byte) *sender {
	s := &sender{p: p, c: c, req: newSendRequest(topic, host, body)}
	var r [8]byte
	binary.BigEndian.PutUint64(r[:], rand.Uint64())
	s.id = append(s.id, "01"...)
	s.id = append(s.id, hex.EncodeToString(r[:])...)
	s.id = append(s.id, "0000000000000000"...)
	return s
}

// prepare returns the request of the next message, born now.
func (s *sender) prepare(now time.Time) *encoded {
	s.seq++
	const digits = "0123456789ABCDEF"
	v := s.seq
	for k := len(s.id) - 1; k >= len(s.id)-16; k-- {
		s.id[k] = digits[v&0xF]
		v >>= 4
	}
	return s.req.encode(s.id, now)
}

// run sends the producer's messages until none are left; it returns how
// many were acknowledged and how many requests were repeated.
func (s *sender) run(ctx context.Context, timeout time.Duration) (acked, retries int64, err error) {
	resp := reply{entryStatus: fieldSendEntryStatus}
	for s.p.left.Add(-1) >= 0 {
		start := time.Now()
		req := s.prepare(start)
		for {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			err := s.c.ch.invoke(rctx, rmqpb.MessagingService_SendMessage_FullMethodName, req, &resp)
			cancel()
			if err != nil {
				return acked, retries, fmt.Errorf("grpc bench: send: %w", err)
			}
			if resp.code == rmqpb.Code_OK {
				break
			}
			if resp.code != rmqpb.Code_TOO_MANY_REQUESTS {
				return acked, retries, resp.err("send")
			}
			retries++
			select {
			case <-ctx.Done():
				return acked, retries, ctx.Err()
			case <-time.After(retryPause):
			}
		}
		d := time.Since(start)
		s.p.mu.Lock()
		s.p.hist.Record(d)
		s.p.mu.Unlock()
		acked++
	}
	return acked, retries, nil
}
