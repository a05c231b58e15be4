package remoting

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Produce implements bench.Generator.
func (g *Generator) Produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	w.EnsureDefaults()
	queues, _, err := g.EnsureTopic(ctx, w.Topic)
	if err != nil {
		return bench.Measurement{}, err
	}
	if len(queues) == 0 {
		return bench.Measurement{}, fmt.Errorf("remoting: topic %s has no writable queue", w.Topic)
	}
	return g.produce(ctx, w, queues)
}

// producer is one producer of a phase: its slots share its histogram and
// the count of messages it has left to send.
type producer struct {
	index int
	left  atomic.Int64
	mu    sync.Mutex
	hist  latency.Histogram
}

func (g *Generator) produce(ctx context.Context, w bench.Workload, queues []Queue) (bench.Measurement, error) {
	cs, err := g.connect(ctx, addrsOf(queues), g.connsFor(w.Producers))
	if err != nil {
		return bench.Measurement{}, err
	}
	defer cs.close()

	body := w.Body()
	producers := make([]*producer, w.Producers)
	for i := range producers {
		producers[i] = &producer{index: i}
		producers[i].left.Store(bench.Share(w.Count, w.Producers, i))
	}
	// Build every sender before the clock starts.
	senders := make([]*sender, len(producers))
	for i := range producers {
		senders[i] = newSender(g.o.ProducerGroup, w.Topic, body, queues, i)
		senders[i].sign = g.signer()
	}

	var acked, retries atomic.Int64
	grp := newGroup(ctx)
	bench.Begin(ctx)
	start := time.Now()
	for i, p := range producers {
		grp.Go(func(ctx context.Context) error {
			run := senders[i].run
			if w.Inflight > 1 {
				run = func(ctx context.Context, p *producer, cs *conns) (int64, int64, error) {
					return senders[i].runAsync(ctx, p, cs, w.Inflight)
				}
			}
			n, r, err := run(ctx, p, cs)
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
	var h latency.Histogram
	for _, p := range producers {
		h.Merge(&p.hist)
	}
	if acked.Load() != w.Count {
		return bench.Measurement{}, fmt.Errorf("remoting: %d of %d messages acknowledged", acked.Load(), w.Count)
	}
	return bench.Measurement{Messages: acked.Load(), Elapsed: elapsed, Latency: &h, Retries: retries.Load()}, nil
}

// sender sends the messages of one producer: a SEND_MESSAGE command built
// once, of which only the queue, the born time and the UNIQ_KEY change
// per message.
type sender struct {
	cmd    wire.Command
	h      wire.SendMessageRequestHeader // cmd's header, encoded from here
	queues []Queue
	next   int
	props  []byte              // "UNIQ_KEY\x01" + 32 hex digits + "\x02"
	sign   func(*wire.Command) // nil: unsigned
	seqAt  int                 // where the counter's 16 hex digits start in props
	seq    uint64
}

const uniqKeyPrefix = "UNIQ_KEY\x01"

func newSender(group, topic string, body []byte, queues []Queue, id int) *sender {
	s := &sender{queues: queues, next: id % len(queues)}
	// The first 16 hex digits identify the producer, the last 16 count
	// its messages: unique within and across runs.
	var idb [8]byte
	binary.BigEndian.PutUint64(idb[:], rand.Uint64())
	s.props = append(s.props, uniqKeyPrefix...)
	s.props = hex.AppendEncode(s.props, idb[:])
	s.seqAt = len(s.props)
	s.props = append(s.props, "0000000000000000\x02"...)

	q := queues[s.next]
	s.h = wire.SendMessageRequestHeader{
		ProducerGroup:         group,
		Topic:                 topic,
		DefaultTopic:          templateTopic,
		DefaultTopicQueueNums: 4,
		QueueID:               q.ID,
		BornTimestamp:         time.Now().UnixMilli(),
		Properties:            string(s.props),
		MaxReconsumeTimes:     new(int32),
		BrokerName:            q.Broker,
	}
	// The header is encoded from s.h whenever the command is sent (the
	// same JSON as from the map, without building and sorting one).
	s.cmd = *wire.NewRequest(wire.SendMessage, nil)
	s.cmd.Version = goClientVersion
	s.cmd.SetHeader(&s.h)
	s.cmd.Body = body
	return s
}

// prepare points the command at the next queue and gives it a new
// UNIQ_KEY and the born time now; it returns the queue.
func (s *sender) prepare(now time.Time) Queue {
	i := s.next
	s.next++
	if s.next == len(s.queues) {
		s.next = 0
	}
	q := s.queues[i]
	s.h.QueueID = q.ID
	s.h.BrokerName = q.Broker
	s.h.BornTimestamp = now.UnixMilli()
	s.seq++
	const digits = "0123456789ABCDEF"
	v := s.seq
	for k := s.seqAt + 15; k >= s.seqAt; k-- {
		s.props[k] = digits[v&0xF]
		v >>= 4
	}
	s.h.Properties = string(s.props)
	if s.sign != nil {
		// A signed command carries its fields in ExtFields, to sign them.
		s.cmd.SetHeader(&s.h)
		s.sign(&s.cmd)
	}
	return q
}

// run sends the producer's messages until none are left; it returns how
// many it had acknowledged and how many requests it repeated.
func (s *sender) run(ctx context.Context, p *producer, cs *conns) (acked, retries int64, err error) {
	for p.left.Add(-1) >= 0 {
		start := time.Now()
		q := s.prepare(start)
		c := cs.get(q.Addr, p.index)
		for {
			resp, err := c.Invoke(ctx, &s.cmd)
			if err != nil {
				return acked, retries, err
			}
			code, remark := resp.ResponseCode(), resp.Remark
			c.Recycle(resp)
			if code == wire.Success {
				break
			}
			if !retriable(code) {
				return acked, retries, fmt.Errorf("remoting: send to %s/%d: %s %s", q.Broker, q.ID, code, remark)
			}
			retries++
			select {
			case <-ctx.Done():
				return acked, retries, ctx.Err()
			case <-time.After(retryPause):
			}
		}
		d := time.Since(start)
		p.mu.Lock()
		p.hist.Record(d)
		p.mu.Unlock()
		acked++
	}
	return acked, retries, nil
}

// asyncSend is one of the sends a producer keeps outstanding with
// InvokeAsync. Its done method runs on the connection's reading
// goroutine and hands the send back to the producer.
type asyncSend struct {
	p    *producer
	c    *peer.Peer // the connection it went out on
	q    Queue
	t0   time.Time
	back chan<- *asyncSend

	used  bool // sent at least once: ok, retry or err says how it ended
	ok    bool
	retry bool
	err   error
}

func (a *asyncSend) done(resp *wire.Command, err error) {
	a.ok, a.retry, a.err = false, false, err
	if err == nil {
		switch code := resp.ResponseCode(); {
		case code == wire.Success:
			d := time.Since(a.t0)
			a.p.mu.Lock()
			a.p.hist.Record(d)
			a.p.mu.Unlock()
			a.ok = true
		case retriable(code):
			a.retry = true
		default:
			a.err = fmt.Errorf("remoting: send to %s/%d: %s %s", a.q.Broker, a.q.ID, code, resp.Remark)
		}
		a.c.Recycle(resp)
	}
	a.back <- a // never blocks: the channel has room for every send
}

// runAsync sends the producer's messages with inflight sends outstanding
// at a time, the way the Go client's SendAsync does: this goroutine
// builds and queues each send, and callbacks on the connection's reading
// goroutine take the acknowledgements. It returns how many messages it
// had acknowledged and how many requests it repeated.
func (s *sender) runAsync(ctx context.Context, p *producer, cs *conns, inflight int) (acked, retries int64, err error) {
	back := make(chan *asyncSend, inflight)
	for range inflight {
		back <- &asyncSend{p: p, back: back}
	}
	for idle := 0; idle < inflight; {
		var a *asyncSend
		select {
		case a = <-back:
		case <-ctx.Done():
			return acked, retries, ctx.Err()
		}
		switch {
		case !a.used:
		case a.err != nil:
			return acked, retries, a.err
		case a.ok:
			acked++
		case a.retry:
			retries++
			p.left.Add(1) // send it again
			select {
			case <-ctx.Done():
				return acked, retries, ctx.Err()
			case <-time.After(retryPause):
			}
		}
		if p.left.Add(-1) < 0 {
			idle++
			continue
		}
		a.used = true
		a.t0 = time.Now()
		a.q = s.prepare(a.t0)
		a.c = cs.get(a.q.Addr, p.index)
		if err := a.c.InvokeAsync(ctx, &s.cmd, a.done); err != nil {
			return acked, retries, err
		}
	}
	return acked, retries, nil
}

// retriable reports whether a request answered with code should be
// repeated after a pause.
func retriable(code wire.ResponseCode) bool {
	switch code {
	case wire.SystemBusy, wire.FlowControl, wire.ServiceNotAvailable:
		return true
	}
	return false
}
