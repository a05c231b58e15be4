//go:build !race && unix

package compat

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// TestRestartedGroupDoesNotGoBack: a push consumer (clustering, 4 queues)
// consumes what was sent and is shut down at once; the group, started
// again under a new instance name, must get only the new messages. The
// Go client commits its offsets on shutdown with one oneway request per
// queue and closes its connections right away (its periodic commit only
// starts 10 s after start, so within a round that commit is the only
// one); the broker must apply every one of them, also when answering a
// pull of the closing client fails meanwhile. Several rounds, since
// losing a commit depends on timing.
//
// The client updates its offsets after the listener returns, so the test
// knows they are updated only once a later message reaches the listener:
// the consumer runs one listener at a time, and after a round's messages
// a fence message goes to queue 0. The fence's own offset may or may not
// be committed, so queue 0 may end one short and the fence may come
// again.
func TestRestartedGroupDoesNotGoBack(t *testing.T) {
	k := startKarman(t)
	const topic, group, queues = "Restarts", "restarting", 4
	const rounds, perRound = 8, 200
	k.createTopic(topic, queues)
	p := k.producer(producer.WithQueueSelector(producer.NewRoundRobinQueueSelector()))
	fences := k.producer(producer.WithQueueSelector(producer.NewManualQueueSelector()))
	start := time.Now()
	for round := range rounds {
		for i := range perRound {
			p.send(primitive.NewMessage(topic, fmt.Appendf(nil, "r%d-%d", round, i)))
		}

		got := newReceived()
		c := k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
			got.add(msgs...)
			return consumer.ConsumeSuccess
		}, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithConsumeGoroutineNums(1))
		prefix := fmt.Sprintf("r%d-", round)
		got.waitFor(t, fmt.Sprintf("round %d's messages", round), time.Minute, func() bool {
			n := 0
			got.mu.Lock()
			defer got.mu.Unlock()
			for body := range got.bySeq {
				if strings.HasPrefix(body, prefix) {
					n++
				}
			}
			return n == perRound
		})
		fence := primitive.NewMessage(topic, fmt.Appendf(nil, "fence-%d", round))
		fence.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: broker.DefaultBrokerName, QueueId: 0}
		fences.send(fence)
		got.waitFor(t, fmt.Sprintf("round %d's fence", round), time.Minute, func() bool { return got.count(string(fence.Body)) > 0 })
		ends := k.queueEnds(topic, queues)
		if err := c.Shutdown(); err != nil {
			t.Fatal(err)
		}

		got.mu.Lock()
		var old []string
		for body, n := range got.bySeq {
			if !strings.HasPrefix(body, prefix) && !strings.HasPrefix(body, "fence-") {
				old = append(old, fmt.Sprintf("%s×%d", body, n))
			}
		}
		got.mu.Unlock()
		if len(old) > 0 {
			t.Fatalf("round %d: the restarted group consumed %d messages of earlier rounds again, e.g. %v", round, len(old), old[:min(len(old), 5)])
		}

		// The broker forgets the consumer once it has served all its
		// connection sent: the offset commits must all have landed.
		k.waitNoConsumers(group)
		for q := range int32(queues) {
			resp := k.invoke(wire.QueryConsumerOffset, &wire.QueryConsumerOffsetRequestHeader{
				ConsumerGroup: group, Topic: topic, QueueID: q, SetZeroIfNotFound: true}, nil)
			var h wire.OffsetResponseHeader
			if err := resp.DecodeHeader(&h); err != nil {
				t.Fatal(err)
			}
			if h.Offset != ends[q] && (q != 0 || h.Offset != ends[q]-1) {
				t.Fatalf("round %d: after a clean shutdown the group's offset in queue %d is %d, want %d", round, q, h.Offset, ends[q])
			}
		}
	}
	t.Logf("%d rounds of %d messages in %v", rounds, perRound, time.Since(start).Round(time.Millisecond))
}

// TestOversizedSend: a Go producer's send whose frame exceeds the 16 MiB
// frame limit gets the broker's MESSAGE_ILLEGAL answer, saying why,
// rather than a reset; the broker then closes that connection, and the
// producer's sends go through again on a new one.
func TestOversizedSend(t *testing.T) {
	k := startKarman(t)
	const topic = "Oversized"
	k.createTopic(topic, 1)
	p := k.producer(producer.WithRetry(0))
	p.send(primitive.NewMessage(topic, []byte("small")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := make([]byte, wire.DefaultMaxFrameSize+1)
	rand.Read(body) // the client compresses bodies, so they must not compress
	_, err := p.p.SendSync(ctx, primitive.NewMessage(topic, body))
	if err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Fatalf("oversized send: %v, want the broker's answer", err)
	}
	t.Logf("the client sees: %v", err)
	// The client may still write its next request to the connection the
	// broker closed, and wait for it to time out; the one after goes on a
	// new connection.
	for attempt := 1; ; attempt++ {
		res, err := p.p.SendSync(ctx, primitive.NewMessage(topic, []byte("small again")))
		if err == nil && res.Status == primitive.SendOK {
			break
		}
		if attempt == 3 {
			t.Fatalf("send after the oversized one: %v %v", res, err)
		}
	}
}
