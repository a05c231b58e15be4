package remoting

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// ErrNoRoute: the name server knows no route for the topic.
var ErrNoRoute = errors.New("remoting: topic has no route")

// templateTopic is the topic auto-created topics are modelled on; every
// broker registers it, so its route lists the brokers.
const templateTopic = "TBW102"

// routeWait bounds the wait for a created topic to appear in the route.
const routeWait = 15 * time.Second

// Queue is one queue of a topic.
type Queue struct {
	Broker string // broker name
	Addr   string // address of the broker's master
	ID     int32  // queue id
}

// Route returns the writable and the readable queues of topic, in broker
// then queue order. A topic the name server does not know fails with
// ErrNoRoute.
func (g *Generator) Route(ctx context.Context, topic string) (write, read []Queue, err error) {
	req := newRequest(wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: topic})
	resp, err := g.ns.Invoke(ctx, g.signed(req))
	if err != nil {
		return nil, nil, fmt.Errorf("remoting: route of %s: %w", topic, err)
	}
	switch resp.ResponseCode() {
	case wire.Success:
	case wire.TopicNotExist:
		return nil, nil, fmt.Errorf("%w: %s", ErrNoRoute, topic)
	default:
		return nil, nil, fmt.Errorf("remoting: route of %s: %s %s", topic, resp.ResponseCode(), resp.Remark)
	}
	rd, err := wire.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("remoting: route of %s: %w", topic, err)
	}
	masters := map[string]string{}
	for _, b := range rd.BrokerDatas {
		if a, ok := b.BrokerAddrs[wire.MasterID]; ok {
			masters[b.BrokerName] = a
		}
	}
	qds := slices.Clone(rd.QueueDatas)
	slices.SortFunc(qds, func(a, b wire.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	for _, qd := range qds {
		addr, ok := masters[qd.BrokerName]
		if !ok {
			continue
		}
		if qd.Perm&wire.PermWrite != 0 {
			for id := range qd.WriteQueueNums {
				write = append(write, Queue{qd.BrokerName, addr, id})
			}
		}
		if qd.Perm&wire.PermRead != 0 {
			for id := range qd.ReadQueueNums {
				read = append(read, Queue{qd.BrokerName, addr, id})
			}
		}
	}
	if len(write) == 0 && len(read) == 0 {
		return nil, nil, fmt.Errorf("%w: %s: no master broker with a writable or readable queue", ErrNoRoute, topic)
	}
	return write, read, nil
}

// EnsureTopic returns the queues of topic after creating it, with
// Options.Queues queues, on every master broker when it has no route
// yet.
func (g *Generator) EnsureTopic(ctx context.Context, topic string) (write, read []Queue, err error) {
	write, read, err = g.Route(ctx, topic)
	if !errors.Is(err, ErrNoRoute) {
		return write, read, err
	}
	tw, _, err := g.Route(ctx, templateTopic)
	if err != nil {
		return nil, nil, fmt.Errorf("remoting: find the brokers to create %s on: %w", topic, err)
	}
	done := map[string]bool{}
	for _, q := range tw {
		if done[q.Addr] {
			continue
		}
		done[q.Addr] = true
		if err := g.createTopic(ctx, q.Addr, topic); err != nil {
			return nil, nil, err
		}
	}
	// The brokers tell the name server about the new topic at once; wait
	// until it routes it.
	deadline := time.Now().Add(routeWait)
	for {
		write, read, err = g.Route(ctx, topic)
		if !errors.Is(err, ErrNoRoute) || time.Now().After(deadline) {
			return write, read, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (g *Generator) createTopic(ctx context.Context, addr, topic string) error {
	p, err := g.dial(ctx, addr)
	if err != nil {
		return err
	}
	defer p.Close()
	req := newRequest(wire.UpdateAndCreateTopic, &wire.CreateTopicRequestHeader{
		Topic:           topic,
		DefaultTopic:    templateTopic,
		ReadQueueNums:   g.o.Queues,
		WriteQueueNums:  g.o.Queues,
		Perm:            wire.PermRead | wire.PermWrite,
		TopicFilterType: wire.TopicFilterSingleTag,
	})
	resp, err := p.Invoke(ctx, g.signed(req))
	if err != nil {
		return fmt.Errorf("remoting: create %s on %s: %w", topic, addr, err)
	}
	if resp.ResponseCode() != wire.Success {
		return fmt.Errorf("remoting: create %s on %s: %s %s", topic, addr, resp.ResponseCode(), resp.Remark)
	}
	return nil
}

// MaxOffsets returns the end (one past the last indexed message) of every
// queue.
func (g *Generator) MaxOffsets(ctx context.Context, topic string, queues []Queue) ([]int64, error) {
	cs, err := g.connect(ctx, addrsOf(queues), 1)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	return g.maxOffsets(ctx, cs, topic, queues)
}

func (g *Generator) maxOffsets(ctx context.Context, cs *conns, topic string, queues []Queue) ([]int64, error) {
	out := make([]int64, len(queues))
	for i, q := range queues {
		req := newRequest(wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: topic, QueueID: q.ID, Committed: true, BrokerName: q.Broker})
		resp, err := cs.get(q.Addr, 0).Invoke(ctx, g.signed(req))
		if err != nil {
			return nil, fmt.Errorf("remoting: max offset of %s/%d: %w", topic, q.ID, err)
		}
		var h wire.OffsetResponseHeader
		if resp.ResponseCode() != wire.Success {
			return nil, fmt.Errorf("remoting: max offset of %s/%d: %s %s", topic, q.ID, resp.ResponseCode(), resp.Remark)
		}
		if err := resp.DecodeHeader(&h); err != nil {
			return nil, fmt.Errorf("remoting: max offset of %s/%d: %w", topic, q.ID, err)
		}
		out[i] = h.Offset
	}
	return out, nil
}

// WaitIndexed waits until queues hold want messages past begin (the
// broker indexes messages shortly after acknowledging them) and returns
// the queues' ends.
func (g *Generator) WaitIndexed(ctx context.Context, topic string, queues []Queue, begin []int64, want int64) ([]int64, error) {
	cs, err := g.connect(ctx, addrsOf(queues), 1)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	deadline := time.Now().Add(indexWait)
	for {
		end, err := g.maxOffsets(ctx, cs, topic, queues)
		if err != nil {
			return nil, err
		}
		var n int64
		for i := range end {
			n += end[i] - begin[i]
		}
		if n >= want {
			return end, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("remoting: %d of %d messages of %s indexed after %v", n, want, topic, indexWait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
