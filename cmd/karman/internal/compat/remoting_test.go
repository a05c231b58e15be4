//go:build !race && unix

package compat

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Producers of the Go client: sync, async, oneway and batch sends, tags,
// keys, compressed bodies and a queue selector, to a topic nobody created
// (the client falls back to TBW102 and the broker creates it); then a
// push consumer reads everything back, and the broker finds messages by
// key and by id.
func TestProducers(t *testing.T) {
	k := startKarman(t)
	p := k.producer(producer.WithQueueSelector(producer.NewHashQueueSelector()))
	const topic = "AutoCreated"

	// Sync, with tag and keys: the topic does not exist yet.
	res := p.send(primitive.NewMessage(topic, []byte("sync")).WithTag("tagA").WithKeys([]string{"order-1", "shared"}))
	host, _, err := message.ParseOffsetID(res.OffsetMsgID)
	if err != nil || len(res.OffsetMsgID) != 32 || res.MsgID == "" || host.String() != k.broker {
		t.Fatalf("sync send result %+v (store host %v, broker at %s): %v", res, host, k.broker, err)
	}
	syncID, syncOffsetID := res.MsgID, res.OffsetMsgID

	// Async.
	done := make(chan error, 1)
	err = p.p.SendAsync(context.Background(), func(_ context.Context, r *primitive.SendResult, err error) {
		if err == nil && r.Status != primitive.SendOK {
			err = fmt.Errorf("status %v", r.Status)
		}
		done <- err
	}, primitive.NewMessage(topic, []byte("async")).WithTag("tagB").WithKeys([]string{"shared"}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("async send: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("async send did not complete")
	}

	// Oneway.
	if err := p.p.SendOneWay(context.Background(), primitive.NewMessage(topic, []byte("oneway")).WithTag("tagA")); err != nil {
		t.Fatal(err)
	}

	// Batch: one request, three messages, a comma-separated list of ids.
	res = p.send(
		primitive.NewMessage(topic, []byte("batch-0")).WithTag("tagB"),
		primitive.NewMessage(topic, []byte("batch-1")).WithTag("tagB"),
		primitive.NewMessage(topic, []byte("batch-2")).WithTag("tagB"),
	)
	if ids := strings.Split(res.OffsetMsgID, ","); len(ids) != 3 {
		t.Fatalf("batch offset ids %q", res.OffsetMsgID)
	}

	// A body above the client's 4 KiB threshold travels zlib-compressed.
	big := bytes.Repeat([]byte("karman "), 2000)
	p.send(primitive.NewMessage(topic, big).WithTag("big"))

	// The hash selector keeps a sharding key on one queue.
	queues := map[string]map[int]bool{}
	for i := range 12 {
		key := "user-" + strconv.Itoa(i%3)
		r := p.send(primitive.NewMessage(topic, []byte("sharded-"+strconv.Itoa(i))).WithShardingKey(key).WithTag("sharded"))
		if queues[key] == nil {
			queues[key] = map[int]bool{}
		}
		queues[key][r.MessageQueue.QueueId] = true
	}
	for key, qs := range queues {
		if len(qs) != 1 {
			t.Errorf("sharding key %s went to queues %v", key, qs)
		}
	}
	const total = 1 + 1 + 1 + 3 + 1 + 12

	// Everything reads back, tags and keys included.
	k.waitRoute(topic)
	got := newReceived()
	k.pushConsumer("producers-check", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	got.waitFor(t, "every message", time.Minute, func() bool { return got.distinct() == total })
	got.mu.Lock()
	for _, m := range got.msgs {
		switch string(m.Body) {
		case "sync":
			if m.GetTags() != "tagA" || m.GetKeys() != "order-1 shared" || m.MsgId != syncID || m.OffsetMsgId != syncOffsetID {
				t.Errorf("sync message came back as %v", m)
			}
		case "async":
			if m.GetTags() != "tagB" {
				t.Errorf("async message came back as %v", m)
			}
		}
		if bytes.HasPrefix(m.Body, []byte("karman ")) && !bytes.Equal(m.Body, big) {
			t.Errorf("compressed body came back with %d bytes", len(m.Body))
		}
	}
	got.mu.Unlock()

	// Look-ups: by key, by client id, by offset id.
	now := time.Now().UnixMilli()
	resp := k.invoke(wire.QueryMessage, &wire.QueryMessageRequestHeader{Topic: topic, Key: "shared", MaxNum: 32, EndTimestamp: now + 1000}, nil)
	if resp.ResponseCode() != wire.Success || bytes.Count(resp.Body, []byte("shared")) < 2 {
		t.Fatalf("query by key: %s %s, %d bytes", resp.ResponseCode(), resp.Remark, len(resp.Body))
	}
	resp = k.invoke(wire.QueryMessage, &wire.QueryMessageRequestHeader{Topic: topic, Key: syncID, MaxNum: 1, UniqueKeyQuery: true}, nil)
	if m, _, err := message.DecodeStored(resp.Body); err != nil || string(m.Body) != "sync" {
		t.Fatalf("query by id: %s %s: %v", resp.ResponseCode(), resp.Remark, err)
	}
	_, off, _ := message.ParseOffsetID(syncOffsetID)
	resp = k.invoke(wire.ViewMessageByID, &wire.ViewMessageByIDRequestHeader{Offset: off}, nil)
	if m, _, err := message.DecodeStored(resp.Body); err != nil || m.UniqKey() != syncID {
		t.Fatalf("view by offset id: %s %s: %v", resp.ResponseCode(), resp.Remark, err)
	}
}

// Clustering: consumers join and leave a group while messages flow;
// queues move between them and every message is consumed.
func TestClustering(t *testing.T) {
	k := startKarman(t)
	const topic, group = "Clustered", "clustering"
	k.createTopic(topic, 6)
	p := k.producer()
	all := newReceived()
	seq := 0
	sendN := func(n int) {
		for range n {
			p.send(primitive.NewMessage(topic, []byte("m-"+strconv.Itoa(seq))))
			seq++
		}
	}
	start := func() (*received, interface{ Shutdown() error }) {
		mine := newReceived()
		c := k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
			mine.add(msgs...)
			all.add(msgs...)
			return consumer.ConsumeSuccess
		})
		return mine, c
	}

	first, _ := start()
	sendN(30)
	all.waitFor(t, "the first consumer to consume everything", time.Minute, func() bool { return all.distinct() == seq })

	// Two more join: the queues are shared out. Keep sending until each
	// newcomer consumed something.
	second, c2 := start()
	third, c3 := start()
	deadline := time.Now().Add(90 * time.Second)
	for second.distinct() == 0 || third.distinct() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no rebalance: the new consumers got %d and %d messages", second.distinct(), third.distinct())
		}
		sendN(6)
		time.Sleep(50 * time.Millisecond)
	}
	all.waitFor(t, "every message with three consumers", time.Minute, func() bool { return all.distinct() == seq })

	// Two leave: the first takes their queues back.
	before := first.distinct()
	c2.Shutdown()
	c3.Shutdown()
	sendN(30)
	all.waitFor(t, "every message after two consumers left", 90*time.Second, func() bool { return all.distinct() == seq })
	if first.distinct()-before < 30 {
		t.Fatalf("the remaining consumer got %d of the last 30 messages", first.distinct()-before)
	}
}

// Broadcasting: every consumer of the group gets every message.
func TestBroadcasting(t *testing.T) {
	k := startKarman(t)
	const topic, group = "Broadcast", "broadcasting"
	k.createTopic(topic, 4)
	var got [2]*received
	for i := range got {
		r := newReceived()
		got[i] = r
		k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
			r.add(msgs...)
			return consumer.ConsumeSuccess
		}, consumer.WithConsumerModel(consumer.BroadCasting))
	}
	p := k.producer()
	const n = 40
	for i := range n {
		p.send(primitive.NewMessage(topic, []byte("b-"+strconv.Itoa(i))))
	}
	for i, r := range got {
		r.waitFor(t, fmt.Sprintf("consumer %d to get every message", i), time.Minute, func() bool { return r.distinct() == n })
	}
}

// Orderly consumption: messages of one sharding key are consumed in the
// order they were sent, while the consumer holds the broker's locks on
// its queues. (One consumer: the Go client does not unlock queues it gives
// up in a rebalance, so a queue changing hands waits for the lock to
// expire, 60 s, as with a Java broker.)
func TestOrderly(t *testing.T) {
	k := startKarman(t)
	const topic, group = "Ordered", "orderly"
	// Not a FIFO-typed topic: the Go client's sharding key (SHARDING_KEY)
	// is not RocketMQ 5's message group (__SHARDINGKEY), so its messages
	// count as normal ones.
	k.createTopic(topic, 4)
	type delivery struct {
		key string
		seq int
	}
	stream := make(chan delivery, 1000)
	all := newReceived()
	k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		for _, m := range msgs {
			key, seq, _ := strings.Cut(string(m.Body), ":")
			n, _ := strconv.Atoi(seq)
			stream <- delivery{key, n}
		}
		all.add(msgs...)
		return consumer.ConsumeSuccess
	}, consumer.WithConsumerOrder(true))
	p := k.producer(producer.WithQueueSelector(producer.NewHashQueueSelector()))
	const keys, perKey = 6, 25
	for i := range perKey {
		for key := range keys {
			name := "key" + strconv.Itoa(key)
			p.send(primitive.NewMessage(topic, []byte(name+":"+strconv.Itoa(i))).WithShardingKey(name))
		}
	}
	all.waitFor(t, "every ordered message", time.Minute, func() bool { return all.distinct() == keys*perKey })
	last := map[string]int{}
	for len(stream) > 0 {
		d := <-stream
		if prev, ok := last[d.key]; ok && d.seq <= prev {
			t.Errorf("%s:%d consumed after %s:%d", d.key, d.seq, d.key, prev)
		}
		last[d.key] = d.seq
	}

	// The consumer holds its queues: another client cannot lock them.
	var mqs []wire.MessageQueue
	for q := range int32(4) {
		mqs = append(mqs, wire.MessageQueue{Topic: topic, BrokerName: broker.DefaultBrokerName, QueueID: q})
	}
	body, _ := wire.EncodeJSONBody(wire.LockBatchRequestBody{ConsumerGroup: group, ClientID: "intruder", MQSet: mqs})
	resp := k.invoke(wire.LockBatchMQ, nil, body)
	var locked wire.LockBatchResponseBody
	if err := wire.DecodeJSONBody(resp.Body, &locked); err != nil || len(locked.LockOKMQSet) != 0 {
		t.Fatalf("another client locked %v (%v)", locked.LockOKMQSet, err)
	}
}

// A listener that fails a message makes it come back through the retry
// topic, after the group's backoff, until maxReconsumeTimes redeliveries;
// then it lands in the dead-letter topic.
func TestRetryAndDeadLetter(t *testing.T) {
	k := startKarman(t)
	const topic, group = "Flaky", "retrying"
	k.createTopic(topic, 2)
	k.createGroup(broker.SubscriptionGroupConfig{
		GroupName: group, ConsumeEnable: true, RetryMaxTimes: 2,
		GroupRetryPolicy: &broker.GroupRetryPolicy{Type: broker.RetryPolicyCustomized,
			CustomizedRetryPolicy: &broker.CustomizedRetryPolicy{Next: []int64{50, 50, 50}}},
	})
	all := newReceived()
	k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		all.add(msgs...)
		for _, m := range msgs {
			if m.GetTags() == "bad" {
				return consumer.ConsumeRetryLater
			}
		}
		return consumer.ConsumeSuccess
	}, consumer.WithMaxReconsumeTimes(2), consumer.WithConsumeMessageBatchMaxSize(1))
	p := k.producer()
	for i := range 3 {
		p.send(primitive.NewMessage(topic, []byte("bad-"+strconv.Itoa(i))).WithTag("bad"))
		p.send(primitive.NewMessage(topic, []byte("good-"+strconv.Itoa(i))).WithTag("good"))
	}
	all.waitFor(t, "three deliveries of every failing message", time.Minute, func() bool {
		for i := range 3 {
			if all.count("bad-"+strconv.Itoa(i)) < 3 {
				return false
			}
		}
		return true
	})
	dead := k.drainQueue(message.DLQTopic(group), 3)
	for _, m := range dead {
		if !strings.HasPrefix(string(m.Body), "bad-") || m.ReconsumeTimes < 2 {
			t.Errorf("dead letter %s after %d reconsumes", m.Body, m.ReconsumeTimes)
		}
		// Its message id still finds it in its own topic, and the dead
		// letter in the dead-letter topic (a unique-key QUERY_MESSAGE,
		// as RocketMQ's tools send).
		for _, in := range []string{topic, message.DLQTopic(group)} {
			resp := k.invoke(wire.QueryMessage, &wire.QueryMessageRequestHeader{
				Topic: in, Key: m.UniqKey(), MaxNum: 32, EndTimestamp: math.MaxInt64, UniqueKeyQuery: true,
			}, nil)
			if resp.ResponseCode() != wire.Success {
				t.Errorf("message %s in %s: %s %s", m.UniqKey(), in, resp.ResponseCode(), resp.Remark)
				continue
			}
			got, _, err := message.DecodeStored(resp.Body)
			if err != nil || got.Topic != in || got.UniqKey() != m.UniqKey() || string(got.Body) != string(m.Body) {
				t.Errorf("message %s in %s: found %+v, %v", m.UniqKey(), in, got, err)
			}
		}
	}
	for i := range 3 {
		if n := all.count("bad-" + strconv.Itoa(i)); n != 3 {
			t.Errorf("bad-%d delivered %d times, want 3", i, n)
		}
		if n := all.count("good-" + strconv.Itoa(i)); n != 1 {
			t.Errorf("good-%d delivered %d times, want 1", i, n)
		}
	}
	all.mu.Lock()
	for _, m := range all.msgs {
		if m.ReconsumeTimes > 0 && m.Topic != topic {
			t.Errorf("retried message delivered under topic %s, want %s", m.Topic, topic)
		}
	}
	all.mu.Unlock()
}

// A restarted consumer group resumes from the offsets it committed.
func TestResumeFromCommittedOffset(t *testing.T) {
	k := startKarman(t)
	const topic, group = "Durable", "resuming"
	k.createTopic(topic, 3)
	p := k.producer()
	const n = 30
	for i := range n {
		p.send(primitive.NewMessage(topic, []byte("old-"+strconv.Itoa(i))))
	}
	first := newReceived()
	c := k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		first.add(msgs...)
		return consumer.ConsumeSuccess
	})
	first.waitFor(t, "the first consumer", time.Minute, func() bool { return first.distinct() == n })
	c.Shutdown()
	k.waitNoConsumers(group)

	// What the group committed when its consumer stopped.
	resp := k.invoke(wire.GetConsumeStats, &wire.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}, nil)
	var stats broker.ConsumeStats
	if err := stats.UnmarshalJSON(resp.Body); err != nil {
		t.Fatalf("consume stats %s: %v", resp.Remark, err)
	}
	var committed int64
	for _, o := range stats.OffsetTable {
		committed += o.ConsumerOffset
	}
	if committed == 0 {
		t.Fatal("the group committed nothing")
	}

	for i := range n {
		p.send(primitive.NewMessage(topic, []byte("new-"+strconv.Itoa(i))))
	}
	second := newReceived()
	k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		second.add(msgs...)
		return consumer.ConsumeSuccess
	})
	second.waitFor(t, "the new messages", time.Minute, func() bool {
		for i := range n {
			if second.count("new-"+strconv.Itoa(i)) == 0 {
				return false
			}
		}
		return true
	})
	old := 0
	for i := range n {
		old += second.count("old-" + strconv.Itoa(i))
	}
	if int64(old) > n-committed {
		t.Fatalf("the restarted group re-read %d old messages; it had committed %d of %d", old, committed, n)
	}
}

// Filters: a tag subscription and an SQL92 subscription get only their
// messages; the broker filters with the subscriptions the consumers sent
// in their heartbeats.
func TestFilters(t *testing.T) {
	k := startKarman(t)
	const topic = "Filtered"
	k.createTopic(topic, 2)
	tagged, priced := newReceived(), newReceived()
	k.pushConsumer("by-tag", topic, "red || blue", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		tagged.add(msgs...)
		return consumer.ConsumeSuccess
	})
	c, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{k.namesrv}), consumer.WithGroupName("by-sql"),
		consumer.WithInstance(instance("consumer")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "price > 10 AND TAGS <> 'blue'"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			priced.add(msgs...)
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })

	p := k.producer()
	for i, tag := range []string{"red", "green", "blue", "red", "green", "blue"} {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", tag, i))).WithTag(tag)
		m.WithProperty("price", strconv.Itoa(i*5))
		p.send(m)
	}
	// red-0 blue-2 red-3 blue-5 by tag; red-3 (15) and green-4 (20) by SQL.
	tagged.waitFor(t, "the tagged messages", time.Minute, func() bool { return tagged.distinct() == 4 })
	priced.waitFor(t, "the priced messages", time.Minute, func() bool { return priced.distinct() == 2 })
	// A last message both would take proves nothing else is on its way.
	last := primitive.NewMessage(topic, []byte("red-last")).WithTag("red")
	last.WithProperty("price", "99")
	p.send(last)
	tagged.waitFor(t, "the last tagged message", time.Minute, func() bool { return tagged.count("red-last") == 1 })
	priced.waitFor(t, "the last priced message", time.Minute, func() bool { return priced.count("red-last") == 1 })
	for _, body := range []string{"green-1", "green-4"} {
		if tagged.count(body) != 0 {
			t.Errorf("tag subscription got %s", body)
		}
	}
	for _, body := range []string{"red-0", "green-1", "blue-2", "blue-5"} {
		if priced.count(body) != 0 {
			t.Errorf("SQL92 subscription got %s", body)
		}
	}
}
