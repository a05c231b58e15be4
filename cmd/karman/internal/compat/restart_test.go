//go:build !race && unix

package compat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// TestKilledAndRestarted: the binary is killed with SIGKILL and started
// again on the same data directory, and the clients find what they left:
//
//   - every message a producer had acknowledged, the last of them sent
//     right before the kill;
//   - the offsets a push consumer (remoting) committed: it resumes after
//     them and consumes only what came later;
//   - the acknowledgements of a simple consumer (gRPC): what it
//     acknowledged never comes back, what it held unacknowledged comes
//     back as a second attempt, and what it never received comes as a
//     first.
func TestKilledAndRestarted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := startBinary(t, "--data", dir)
	const topic, pushGroup, popGroup = "KilledTopic", "killed-push", "killed-pop"
	const before, after = 100, 20
	k.createTypedTopic(topic, 2, "NORMAL")
	for _, g := range []string{pushGroup, popGroup} {
		k.createGroup(broker.SubscriptionGroupConfig{GroupName: g, ConsumeEnable: true, RetryMaxTimes: 16})
	}
	body := func(i int) string { return fmt.Sprintf("m-%03d", i) }
	p := k.producer()
	for i := range before {
		p.send(primitive.NewMessage(topic, []byte(body(i))))
	}

	// The push consumer takes the first messages and commits its offsets.
	got := newReceived()
	c := k.pushConsumer(pushGroup, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	}, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	got.waitFor(t, "the push consumer's messages", time.Minute, func() bool { return got.distinct() == before })
	// Its pulls commit what it consumed (the offsets it sends when it
	// shuts down travel one way and may be lost).
	ends := k.queueEnds(topic, 2)
	pollUntil(t, "the committed offsets", time.Minute, func() bool { return k.committedAt(pushGroup, topic, ends) })
	c.Shutdown()

	// The simple consumer takes at least 40, acknowledges the even ones
	// among them and holds the others.
	var even []string
	isEven := map[string]bool{}
	for i := 0; i < before; i += 2 {
		even = append(even, body(i))
		isEven[body(i)] = true
	}
	var held struct {
		Received []nodeMessage `json:"received"`
	}
	k.node("abandon", map[string]any{"topic": topic, "group": popGroup, "count": 40, "ack": even}, &held)
	acked, unacked := map[string]bool{}, map[string]bool{}
	for _, m := range held.Received {
		if isEven[m.Body] {
			acked[m.Body] = true
		} else {
			unacked[m.Body] = true
		}
	}
	if len(acked) == 0 || len(unacked) == 0 {
		t.Fatalf("the simple consumer acknowledged %d messages and held %d; want some of each", len(acked), len(unacked))
	}

	// Offsets and acknowledgements reach the disk within a tenth of a
	// second of their commit (the engine's pop state flush, then the
	// metadata store's lazy sync), and nothing tells a client when they
	// have; a message is there once acknowledged. So wait well past the
	// commits, and kill right after the last sends.
	time.Sleep(500 * time.Millisecond)
	for i := before; i < before+after; i++ {
		p.send(primitive.NewMessage(topic, []byte(body(i))))
	}
	k.kill()
	p.p.Shutdown()

	k = startBinary(t, "--data", dir)
	if ends2 := k.queueEnds(topic, 2); ends2[0]+ends2[1] != before+after {
		t.Fatalf("after the restart the queues end at %v, want %d messages", ends2, before+after)
	}

	// The push consumer resumes after its committed offsets.
	got = newReceived()
	c = k.pushConsumer(pushGroup, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	got.waitFor(t, "the messages sent before the kill", time.Minute, func() bool {
		return got.distinct() >= after
	})
	c.Shutdown()
	for i := range before {
		if n := got.count(body(i)); n > 0 {
			t.Errorf("the push consumer got %s again after the restart (%d times); its offset was committed", body(i), n)
		}
	}
	for i := before; i < before+after; i++ {
		if got.count(body(i)) == 0 {
			t.Errorf("the push consumer never got %s after the restart", body(i))
		}
	}

	// The simple consumer gets everything it did not acknowledge.
	want := before + after - len(acked)
	rest := k.nodeReceive(map[string]any{"topic": topic, "group": popGroup, "count": want})
	seen := map[string]int{}
	for _, m := range rest {
		seen[m.Body]++
		switch {
		case acked[m.Body]:
			t.Errorf("%s came back after the restart; it was acknowledged before the kill", m.Body)
		case unacked[m.Body] && m.Attempt != 2:
			t.Errorf("%s, held unacknowledged before the kill, came back as attempt %d, want 2", m.Body, m.Attempt)
		case !unacked[m.Body] && m.Attempt != 1:
			t.Errorf("%s, never received before the kill, came as attempt %d, want 1", m.Body, m.Attempt)
		}
	}
	for i := range before + after {
		if b := body(i); !acked[b] && seen[b] != 1 {
			t.Errorf("after the restart the simple consumer got %s %d times, want once", b, seen[b])
		}
	}
}

// TestKilledMidSendWithSyncFlush: with --flush sync, eight goroutines of a
// Go producer send until the binary is killed with SIGKILL in the middle
// of their sends; started again, the broker holds every message that was
// acknowledged, intact, once.
func TestKilledMidSendWithSyncFlush(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := startBinary(t, "--data", dir, "--flush", "sync")
	const topic, queues, senders, killAfter = "KilledSyncTopic", 4, 8, 400
	k.createTopic(topic, queues)
	p := k.producer(producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))
	body := func(g, i int) string { return fmt.Sprintf("sync-%d-%05d-%s", g, i, strings.Repeat("x", 300+i%700)) }
	var mu sync.Mutex
	acked := map[string]bool{}
	enough := make(chan struct{})
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := 0; ; i++ {
				res, err := p.p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body(g, i))))
				if err != nil || res.Status != primitive.SendOK {
					return // the broker is gone
				}
				mu.Lock()
				acked[body(g, i)] = true
				if len(acked) == killAfter {
					close(enough)
				}
				mu.Unlock()
			}
		})
	}
	<-enough
	k.kill()
	wg.Wait()

	k = startBinary(t, "--data", dir, "--flush", "sync")
	c := k.pullConsumer("killed-sync-reader", topic, "*")
	mqs, err := c.GetTopicRouteInfo(topic)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	ends := k.queueEnds(topic, queues)
	for q := range int32(queues) {
		mq := queueOf(t, mqs, int(q))
		for off := int64(0); off < ends[q]; {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := c.PullFrom(ctx, mq, off, 32)
			cancel()
			if err != nil || res.Status != primitive.PullFound {
				t.Fatalf("pull queue %d at %d of %d: %v %v", q, off, ends[q], res, err)
			}
			for _, m := range res.GetMessageExts() {
				stored[string(m.Body)]++
			}
			off = res.NextBeginOffset
		}
	}
	for b, n := range stored {
		var g, i int
		if _, err := fmt.Sscanf(b, "sync-%d-%05d-", &g, &i); err != nil || b != body(g, i) {
			t.Errorf("a stored body of %d bytes is damaged: %.40q", len(b), b)
		} else if n != 1 {
			t.Errorf("%.20s… stored %d times", b, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	lost := 0
	for b := range acked {
		if stored[b] == 0 {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged messages are gone after the kill", lost, len(acked))
	}
	t.Logf("%d acknowledged, %d stored", len(acked), len(stored))
}

// kill ends the process with SIGKILL and waits for it.
func (p *karmanProcess) kill() {
	p.t.Helper()
	p.admin.Close()
	if err := p.cmd.Process.Kill(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd.Wait() // "signal: killed"
}

// queueEnds returns the max offsets of the first n queues of topic.
func (k *karman) queueEnds(topic string, n int32) []int64 {
	k.t.Helper()
	ends := make([]int64, n)
	for q := range n {
		resp := k.invoke(wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: topic, QueueID: q, Committed: true}, nil)
		var h wire.OffsetResponseHeader
		if resp.ResponseCode() != wire.Success || resp.DecodeHeader(&h) != nil {
			k.t.Fatalf("max offset of %s/%d: %s %s", topic, q, resp.ResponseCode(), resp.Remark)
		}
		ends[q] = h.Offset
	}
	return ends
}

// committedAt reports whether group's committed offsets in the queues of
// topic are ends.
func (k *karman) committedAt(group, topic string, ends []int64) bool {
	k.t.Helper()
	for q, end := range ends {
		resp := k.invoke(wire.QueryConsumerOffset, &wire.QueryConsumerOffsetRequestHeader{
			ConsumerGroup: group, Topic: topic, QueueID: int32(q), SetZeroIfNotFound: true}, nil)
		var h wire.OffsetResponseHeader
		if resp.ResponseCode() != wire.Success || resp.DecodeHeader(&h) != nil || h.Offset != end {
			return false
		}
	}
	return true
}

// pollUntil checks ok every 50 ms until it holds, for state the server
// announces to no one (a consumer's committed offsets).
func pollUntil(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !ok() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestClientsRideOutRestart: a Go producer and push consumer keep running
// while the binary is killed and started again on the same addresses and
// data: the producer's later sends succeed, and the consumer, after
// reconnecting, gets every message, those sent before the kill included.
func TestClientsRideOutRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := startBinary(t, "--data", dir)
	const topic, group, half = "RestartedTopic", "restarted-push", 50
	k.createTypedTopic(topic, 2, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	body := func(i int) string { return fmt.Sprintf("r-%03d", i) }
	p := k.producer(producer.WithRetry(5))
	got := newReceived()
	c := k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	}, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	defer c.Shutdown()
	for i := range half {
		p.send(primitive.NewMessage(topic, []byte(body(i))))
	}
	got.waitFor(t, "the messages sent before the restart", time.Minute, func() bool { return got.distinct() == half })

	k.kill()
	k = startBinary(t, "--data", dir, "--namesrv-addr", k.namesrv, "--broker-addr", k.broker, "--grpc-addr", k.grpc)
	for i := half; i < 2*half; i++ {
		p.send(primitive.NewMessage(topic, []byte(body(i))))
	}
	got.waitFor(t, "the messages sent after the restart", 2*time.Minute, func() bool { return got.distinct() == 2*half })
	for i := range 2 * half {
		if got.count(body(i)) == 0 {
			t.Errorf("%s was never consumed", body(i))
		}
	}
}

// TestNodeClientsRideOutRestart: a Node.js producer and simple consumer
// keep running while the binary is killed and started again on the same
// addresses and data; once it is back, their calls succeed again and every
// message, from before the kill and after, is received.
func TestNodeClientsRideOutRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := startBinary(t, "--data", dir)
	const topic, group, count = "RideOutTopic", "ride-out", 30
	k.createTypedTopic(topic, 2, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	n := k.startNodeTimeout("rideout", 3*time.Minute, map[string]any{"topic": topic, "group": group, "count": count})
	pollUntil(t, "the first half", 2*time.Minute, func() bool { return strings.Contains(n.stdout.String(), "restart me\n") })
	k.kill()
	startBinary(t, "--data", dir, "--namesrv-addr", k.namesrv, "--broker-addr", k.broker, "--grpc-addr", k.grpc)
	var res struct {
		Received []string `json:"received"`
		Failures int      `json:"failures"`
	}
	n.wait(&res)
	got := map[string]bool{}
	for _, b := range res.Received {
		got[b] = true
	}
	for i := range 2 * count {
		if b := fmt.Sprintf("ride-%d", i); !got[b] {
			t.Errorf("%s was never received", b)
		}
	}
	t.Logf("%d calls failed while the server was down", res.Failures)
}
