//go:build !race && unix

package compat

import (
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// TestConsumerStatusAndDirectConsume: the broker passes the requests of
// RocketMQ's tools on to a Go push consumer. "karman admin group status"
// shows the consumer's own account (GET_CONSUMER_RUNNING_INFO): its
// subscription and the queues assigned to it, with the offsets it will
// commit. "karman admin message consume" (CONSUME_MESSAGE_DIRECTLY) makes
// its listener consume a stored message once more, and says it succeeded.
func TestConsumerStatusAndDirectConsume(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "StatusTopic", "status-group"
	k.createTopic(topic, 2)
	got := newReceived()
	k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	p := k.producer()
	bodies := seq("status", 0, 6)
	var last *primitive.SendResult
	for _, b := range bodies {
		last = p.send(primitive.NewMessage(topic, []byte(b)))
	}
	got.waitFor(t, "every message", time.Minute, func() bool { return got.distinct() == len(bodies) })
	ends := k.queueEnds(topic, 2)
	pollUntil(t, "the consumer to commit everything", 30*time.Second, func() bool { return k.committedAt(group, topic, ends) })

	var status []admin.ConsumerStatus
	// The Go client cannot encode its rates (NaN) until its statistics hold
	// two samples, 10 s apart: until then it answers without a body, and
	// status reports that as the consumer's error.
	pollUntil(t, "the consumer to report every queue committed", time.Minute, func() bool {
		status = nil // fields an answer leaves out must not survive from the last
		k.adminCLI(&status, "group", "status", group)
		if len(status) != 1 {
			t.Fatalf("group status: %+v, want one consumer", status)
		}
		if status[0].Error != "" {
			return false
		}
		committed := 0
		for _, q := range status[0].Queues {
			if q.Topic == topic && q.CommitOffset == ends[q.QueueID] {
				committed++
			}
		}
		return committed == 2
	})
	s := status[0]
	if s.Properties["PROP_CONSUME_TYPE"] != "CONSUME_PASSIVELY" {
		t.Errorf("consume type %q, want CONSUME_PASSIVELY (properties %v)", s.Properties["PROP_CONSUME_TYPE"], s.Properties)
	}
	if !slices.ContainsFunc(s.Subscriptions, func(sub admin.Subscription) bool { return sub.Topic == topic && sub.Expression == "*" }) {
		t.Errorf("subscriptions %+v, want %s *", s.Subscriptions, topic)
	}

	// Consume the last message once more, directly, by its client id.
	var direct admin.DirectConsumption
	k.adminCLI(&direct, "message", "consume", last.MsgID, "--topic", topic, "--group", group)
	if direct.Result != "CR_SUCCESS" || direct.ClientID != s.ClientID {
		t.Fatalf("message consume: %+v, want CR_SUCCESS from %s", direct, s.ClientID)
	}
	lastBody := bodies[len(bodies)-1]
	got.waitFor(t, "the direct consumption", 10*time.Second, func() bool { return got.count(lastBody) == 2 })

	// A client that is not connected is refused by the broker.
	resp := k.invoke(wire.GetConsumerRunningInfo, &wire.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: "nobody@1"}, nil)
	if resp.ResponseCode() != wire.SystemError || resp.Remark == "" {
		t.Errorf("running info of an unknown client: %s %q, want SYSTEM_ERROR with a remark", resp.ResponseCode(), resp.Remark)
	}
}
