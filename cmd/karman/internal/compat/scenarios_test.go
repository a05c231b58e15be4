//go:build !race && unix

package compat

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Scenarios of the Go client the other tests leave out: the pull
// consumer, the admin API, namespaces, where a new group starts reading,
// and the push consumer's and producer's tuning options.

// pullClient is the Go client's pull consumer.
type pullClient interface {
	Start() error
	Shutdown() error
	Subscribe(string, consumer.MessageSelector) error
	GetTopicRouteInfo(string) ([]*primitive.MessageQueue, error)
	Poll(context.Context, time.Duration) (*consumer.ConsumeRequest, error)
	ACK(context.Context, *consumer.ConsumeRequest, consumer.ConsumeResult)
	Pull(context.Context, int) (*primitive.PullResult, error)
	PullFrom(context.Context, *primitive.MessageQueue, int64, int) (*primitive.PullResult, error)
	UpdateOffset(*primitive.MessageQueue, int64) error
	PersistOffset(context.Context, string) error
	CurrentOffset(*primitive.MessageQueue) (int64, error)
}

// pullConsumer starts a pull consumer of group subscribing topic with tag
// expression expr. Its Shutdown may be called again at cleanup.
func (k *karman) pullConsumer(group, topic, expr string, opts ...consumer.Option) pullClient {
	k.t.Helper()
	opts = append([]consumer.Option{
		consumer.WithNameServer([]string{k.namesrv}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("puller")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := consumer.NewPullConsumer(opts...)
	if err != nil {
		k.t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr}); err != nil {
		k.t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { c.Shutdown() })
	return c
}

// committedOffset answers the offset the broker holds for group in
// (topic, queue), or -1 when it holds none.
func (k *karman) committedOffset(group, topic string, queue int32) int64 {
	k.t.Helper()
	resp := k.invoke(wire.QueryConsumerOffset, &wire.QueryConsumerOffsetRequestHeader{
		ConsumerGroup: group, Topic: topic, QueueID: queue}, nil)
	switch resp.ResponseCode() {
	case wire.QueryNotFound:
		return -1
	case wire.Success:
	default:
		k.t.Fatalf("query offset of %s in %s/%d: %s %s", group, topic, queue, resp.ResponseCode(), resp.Remark)
	}
	var h wire.OffsetResponseHeader
	if err := h.DecodeFields(resp.ExtFields); err != nil {
		k.t.Fatal(err)
	}
	return h.Offset
}

// waitCommitted waits until the broker holds offset want for group in
// (topic, queue): the client commits with requests it does not wait for.
func (k *karman) waitCommitted(group, topic string, queue int32, want int64) {
	k.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := k.committedOffset(group, topic, queue)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("%s committed %d in %s/%d, want %d", group, got, topic, queue, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sendToQueue sends bodies (with tag) to one queue of topic and returns
// the queue offsets the broker gave them.
func sendToQueue(t *testing.T, p *producerClient, topic string, queue int, tag string, bodies ...string) []int64 {
	t.Helper()
	var offsets []int64
	for _, b := range bodies {
		m := primitive.NewMessage(topic, []byte(b)).WithTag(tag).WithShardingKey(strconv.Itoa(queue))
		res := p.send(m)
		if res.MessageQueue.QueueId != queue {
			t.Fatalf("%s went to queue %d, want %d", b, res.MessageQueue.QueueId, queue)
		}
		offsets = append(offsets, res.QueueOffset)
	}
	return offsets
}

// queueSelector sends a message whose sharding key is a queue id to that
// queue.
type queueSelector struct{}

func (queueSelector) Select(m *primitive.Message, mqs []*primitive.MessageQueue, _ string) *primitive.MessageQueue {
	id, _ := strconv.Atoi(m.GetShardingKey())
	for _, mq := range mqs {
		if mq.QueueId == id {
			return mq
		}
	}
	return mqs[0]
}

// bodies returns the bodies of msgs, in order.
func bodies(msgs []*primitive.MessageExt) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Body))
	}
	return out
}

// seq returns prefix-0 … prefix-(n-1).
func seq(prefix string, from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, prefix+"-"+strconv.Itoa(i))
	}
	return out
}

// queueOf finds queue id among mqs.
func queueOf(t *testing.T, mqs []*primitive.MessageQueue, id int) *primitive.MessageQueue {
	t.Helper()
	for _, mq := range mqs {
		if mq.QueueId == id {
			c := *mq
			return &c
		}
	}
	t.Fatalf("no queue %d among %v", id, mqs)
	return nil
}

// The pull consumer reads a queue from any offset, commits the offset it
// is told to, and a restarted consumer of its group reads on from there.
func TestPullConsumer(t *testing.T) {
	k := startKarman(t)
	const topic, group = "Pulled", "puller"
	k.createTopic(topic, 2)
	p := k.producer(producer.WithQueueSelector(queueSelector{}))
	offsets := sendToQueue(t, p, topic, 1, "t", seq("m", 0, 10)...)
	if !slices.Equal(offsets, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("queue offsets %v", offsets)
	}

	c := k.pullConsumer(group, topic, "*")
	mqs, err := c.GetTopicRouteInfo(topic)
	if err != nil || len(mqs) != 2 {
		t.Fatalf("route of %s: %v %v", topic, mqs, err)
	}
	q1 := queueOf(t, mqs, 1)

	// From the start, four at a time.
	res, err := c.PullFrom(context.Background(), q1, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != primitive.PullFound || res.NextBeginOffset != 4 || res.MinOffset != 0 || res.MaxOffset != 10 {
		t.Fatalf("pull from 0: status %v next %d min %d max %d", res.Status, res.NextBeginOffset, res.MinOffset, res.MaxOffset)
	}
	if got := bodies(res.GetMessageExts()); !slices.Equal(got, seq("m", 0, 4)) {
		t.Fatalf("pull from 0 got %v", got)
	}
	for i, m := range res.GetMessageExts() {
		if m.QueueOffset != int64(i) || m.Queue.QueueId != 1 || m.Topic != topic || m.GetTags() != "t" {
			t.Errorf("message %d: offset %d queue %v topic %s tag %s", i, m.QueueOffset, m.Queue, m.Topic, m.GetTags())
		}
	}

	// From the middle, more than there is.
	res, err = c.PullFrom(context.Background(), q1, 7, 32)
	if err != nil {
		t.Fatal(err)
	}
	if got := bodies(res.GetMessageExts()); res.Status != primitive.PullFound || res.NextBeginOffset != 10 || !slices.Equal(got, seq("m", 7, 3)) {
		t.Fatalf("pull from 7: status %v next %d got %v", res.Status, res.NextBeginOffset, got)
	}

	// Past the end: the offset is illegal and the broker says where the
	// queue ends.
	res, err = c.PullFrom(context.Background(), q1, 15, 32)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != primitive.PullOffsetIllegal || res.NextBeginOffset != 10 || len(res.GetMessageExts()) != 0 {
		t.Fatalf("pull from 15: status %v next %d, %d messages", res.Status, res.NextBeginOffset, len(res.GetMessageExts()))
	}

	// At the end the pull waits for the next message.
	got := make(chan *primitive.PullResult, 1)
	go func() {
		r, err := c.PullFrom(context.Background(), q1, 10, 32)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	sendToQueue(t, p, topic, 1, "t", "m-10")
	select {
	case r := <-got:
		if r == nil || r.Status != primitive.PullFound || !slices.Equal(bodies(r.GetMessageExts()), []string{"m-10"}) || r.NextBeginOffset != 11 {
			t.Fatalf("long pull got %+v", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a pull at the end of the queue did not wake up for a new message")
	}

	// Commit offset 6 of queue 1.
	if err := c.UpdateOffset(q1, 6); err != nil {
		t.Fatal(err)
	}
	if off, err := c.CurrentOffset(q1); err != nil || off != 6 {
		t.Fatalf("current offset %d %v, want 6", off, err)
	}
	k.persistUntil(c, group, topic, 1, 6)
	c.Shutdown()
	k.waitNoConsumers(group)

	// A new consumer of the group starts from the committed offset.
	c = k.pullConsumer(group, topic, "*")
	mqs, err = c.GetTopicRouteInfo(topic)
	if err != nil {
		t.Fatal(err)
	}
	q1 = queueOf(t, mqs, 1)
	if off, err := c.CurrentOffset(q1); err != nil || off != 6 {
		t.Fatalf("restarted consumer's offset %d %v, want 6", off, err)
	}
	var polled []string
	deadline := time.Now().Add(30 * time.Second)
	for len(polled) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("polled %v, want m-6 … m-10", polled)
		}
		cr, err := c.Poll(context.Background(), 5*time.Second)
		if consumer.IsNoNewMsgError(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if cr.GetMQ().QueueId != 1 {
			t.Fatalf("polled %v from queue %d, which holds nothing", bodies(cr.GetMsgList()), cr.GetMQ().QueueId)
		}
		polled = append(polled, bodies(cr.GetMsgList())...)
		c.ACK(context.Background(), cr, consumer.ConsumeSuccess)
	}
	if !slices.Equal(polled, seq("m", 6, 5)) {
		t.Fatalf("restarted consumer polled %v, want m-6 … m-10", polled)
	}
	// ACK moved the offset; persisting commits it.
	k.persistUntil(c, group, topic, 1, 11)
}

// persistUntil persists the pull consumer's offsets until the broker
// holds want for group in (topic, queue): the consumer commits only the
// queues its rebalance assigned it, which it does in the background.
func (k *karman) persistUntil(c pullClient, group, topic string, queue int32, want int64) {
	k.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := c.PersistOffset(context.Background(), topic); err != nil {
			k.t.Fatal(err)
		}
		got := k.committedOffset(group, topic, queue)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("%s committed %d in %s/%d, want %d", group, got, topic, queue, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
