package remoting

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Pull settings of the Go push consumer.
const (
	suspendMillis = 20000
	pullSysFlag   = wire.PullFlagSuspend | wire.PullFlagSubscription
)

// indexWait bounds the wait for the broker to index the pre-load.
const indexWait = 2 * time.Minute

// preloadInflight is the minimum number of sends in flight per producer
// while pre-loading.
const preloadInflight = 64

// Consume implements bench.Generator.
func (g *Generator) Consume(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	w.EnsureDefaults()
	write, read, err := g.EnsureTopic(ctx, w.Topic)
	if err != nil {
		return bench.Measurement{}, err
	}
	if len(write) == 0 || len(read) == 0 {
		return bench.Measurement{}, fmt.Errorf("remoting: topic %s needs writable and readable queues", w.Topic)
	}
	begin, err := g.MaxOffsets(ctx, w.Topic, read)
	if err != nil {
		return bench.Measurement{}, err
	}

	pre := w
	pre.Inflight = max(w.Inflight, preloadInflight)
	if _, err := g.produce(bench.Unobserved(ctx), pre, write); err != nil {
		return bench.Measurement{}, fmt.Errorf("remoting: pre-load: %w", err)
	}
	end, err := g.WaitIndexed(ctx, w.Topic, read, begin, w.Count)
	if err != nil {
		return bench.Measurement{}, err
	}
	return g.pull(ctx, w, read, begin, end)
}

// pull reads every queue from begin to end: one puller per queue, or
// w.Consumers pullers sharing the queues out.
func (g *Generator) pull(ctx context.Context, w bench.Workload, queues []Queue, begin, end []int64) (bench.Measurement, error) {
	pullers := w.Consumers
	if pullers == 0 {
		pullers = len(queues)
	}
	pullers = min(pullers, len(queues))
	cs, err := g.connect(ctx, addrsOf(queues), g.connsFor(pullers))
	if err != nil {
		return bench.Measurement{}, err
	}
	defer cs.close()

	var want int64
	for i := range queues {
		want += end[i] - begin[i]
	}
	type puller struct {
		cursors []*cursor
		hist    latency.Histogram
	}
	ps := make([]*puller, pullers)
	for i := range ps {
		ps[i] = &puller{}
	}
	for i, q := range queues {
		p := ps[i%pullers]
		c := newCursor(g.o.ConsumerGroup, w.Topic, q, begin[i], end[i], w.Batch)
		c.sign = g.signer()
		p.cursors = append(p.cursors, c)
	}

	var (
		got, retries atomic.Int64
		lastAt       atomic.Int64 // nanoseconds after start of the last message
	)
	grp := newGroup(ctx)
	bench.Begin(ctx)
	start := time.Now()
	for i, p := range ps {
		grp.Go(func(ctx context.Context) error {
			// Round-robin over the puller's queues, one request at a time.
			for live := len(p.cursors); live > 0; {
				live = 0
				for _, c := range p.cursors {
					if c.done() {
						continue
					}
					live++
					t0 := time.Now()
					n, retried, err := c.pullOnce(ctx, cs.get(c.q.Addr, i))
					if err != nil {
						return err
					}
					now := time.Now()
					p.hist.Record(now.Sub(t0))
					if retried {
						retries.Add(1)
					}
					if n > 0 && got.Add(int64(n)) >= want {
						lastAt.Store(int64(now.Sub(start)))
					}
				}
			}
			return nil
		})
	}
	err = grp.Wait()
	bench.End(ctx)
	if err != nil {
		return bench.Measurement{}, err
	}
	elapsed := time.Duration(lastAt.Load())
	if elapsed == 0 {
		elapsed = time.Since(start)
	}
	if got.Load() != want {
		return bench.Measurement{}, fmt.Errorf("remoting: pulled %d of %d messages", got.Load(), want)
	}
	var h latency.Histogram
	for _, p := range ps {
		h.Merge(&p.hist)
	}
	return bench.Measurement{Messages: got.Load(), Elapsed: elapsed, Latency: &h, Retries: retries.Load(), Consumers: pullers}, nil
}

// cursor pulls one queue from begin to end with a PULL_MESSAGE command
// built once.
type cursor struct {
	q       Queue
	offset  int64
	end     int64
	cmd     *wire.Command
	scratch []byte
	sign    func(*wire.Command) // nil: unsigned
}

func newCursor(group, topic string, q Queue, begin, end int64, batch int) *cursor {
	cmd := newRequest(wire.PullMessage, &wire.PullMessageRequestHeader{
		ConsumerGroup:        group,
		Topic:                topic,
		QueueID:              q.ID,
		QueueOffset:          begin,
		MaxMsgNums:           int32(batch),
		SysFlag:              pullSysFlag,
		SuspendTimeoutMillis: suspendMillis,
		Subscription:         "*",
		ExpressionType:       "TAG",
		BrokerName:           q.Broker,
	})
	return &cursor{q: q, offset: begin, end: end, cmd: cmd}
}

func (c *cursor) done() bool { return c.offset >= c.end }

// pullOnce sends one pull request from the cursor's offset and moves the
// cursor past what came back. It returns the messages received, and
// whether the broker asked for the request to be repeated.
func (c *cursor) pullOnce(ctx context.Context, p *peer.Peer) (int, bool, error) {
	ext := c.cmd.ExtFields
	c.scratch = strconv.AppendInt(c.scratch[:0], c.offset, 10)
	ext["queueOffset"] = string(c.scratch)
	// As the push consumer: commit what has been consumed with each pull.
	if c.offset > 0 {
		ext["sysFlag"] = strconv.Itoa(int(pullSysFlag | wire.PullFlagCommitOffset))
		ext["commitOffset"] = ext["queueOffset"]
	}
	if c.sign != nil {
		c.sign(c.cmd)
	}
	resp, err := p.Invoke(ctx, c.cmd)
	if err != nil {
		return 0, false, err
	}
	var h wire.PullMessageResponseHeader
	code := resp.ResponseCode()
	switch code {
	case wire.Success, wire.PullNotFound, wire.PullRetryImmediately, wire.PullOffsetMoved:
		if err := resp.DecodeHeader(&h); err != nil {
			return 0, false, fmt.Errorf("remoting: pull %s/%d: %w", c.q.Broker, c.q.ID, err)
		}
	default:
		if retriable(code) {
			return 0, true, nil
		}
		return 0, false, fmt.Errorf("remoting: pull %s/%d at %d: %s %s", c.q.Broker, c.q.ID, c.offset, code, resp.Remark)
	}
	n := 0
	if code == wire.Success {
		if n, err = countRecords(resp.Body); err != nil {
			return 0, false, fmt.Errorf("remoting: pull %s/%d at %d: %w", c.q.Broker, c.q.ID, c.offset, err)
		}
	}
	p.Recycle(resp)
	if h.NextBeginOffset < c.offset && code != wire.PullOffsetMoved {
		return 0, false, fmt.Errorf("remoting: pull %s/%d at %d: next offset %d goes back", c.q.Broker, c.q.ID, c.offset, h.NextBeginOffset)
	}
	c.offset = h.NextBeginOffset
	return n, code != wire.Success, nil
}

// countRecords counts the stored messages in a pull body by following
// their TOTALSIZE fields.
func countRecords(body []byte) (int, error) {
	n := 0
	for off := 0; off < len(body); n++ {
		if len(body)-off < 4 {
			return n, fmt.Errorf("pull body: %d trailing bytes", len(body)-off)
		}
		size := int(int32(binary.BigEndian.Uint32(body[off:])))
		if size < 4 || size > len(body)-off {
			return n, fmt.Errorf("pull body: message %d claims %d bytes, %d left", n, size, len(body)-off)
		}
		off += size
	}
	return n, nil
}
