//go:build !race && unix

package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/peer"
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
	k.persistUntil(c, group, topic, 1, 6, q1)
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
	k.persistUntil(c, group, topic, 1, 11, nil)
}

// persistUntil persists the pull consumer's offsets until the broker
// holds want for group in (topic, queue): the consumer commits only the
// queues its rebalance assigned it, which it does in the background.
// Persisting also drops the offsets of the queues not assigned yet, so an
// offset set with UpdateOffset on a consumer that has just started can be
// lost; with set, the offset is set again before each try.
func (k *karman) persistUntil(c pullClient, group, topic string, queue int32, want int64, set *primitive.MessageQueue) {
	k.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if set != nil {
			if err := c.UpdateOffset(set, want); err != nil {
				k.t.Fatal(err)
			}
		}
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

// A pull consumer's tag subscription filters what it pulls: the broker
// skips the other tags and nextBeginOffset moves past them.
func TestPullConsumerTagFilter(t *testing.T) {
	k := startKarman(t)
	const topic = "PulledTags"
	k.createTopic(topic, 1)
	p := k.producer()
	for i, tag := range []string{"red", "green", "red", "green", "blue", "green"} {
		p.send(primitive.NewMessage(topic, []byte(tag+"-"+strconv.Itoa(i))).WithTag(tag))
	}
	c := k.pullConsumer("tag-puller", topic, "red || blue")
	mqs, err := c.GetTopicRouteInfo(topic)
	if err != nil {
		t.Fatal(err)
	}
	q := queueOf(t, mqs, 0)
	res, err := c.PullFrom(context.Background(), q, 0, 32)
	if err != nil {
		t.Fatal(err)
	}
	if got := bodies(res.GetMessageExts()); res.Status != primitive.PullFound || !slices.Equal(got, []string{"red-0", "red-2", "blue-4"}) {
		t.Fatalf("pulled %v (status %v)", got, res.Status)
	}
	var offsets []int64
	for _, m := range res.GetMessageExts() {
		offsets = append(offsets, m.QueueOffset)
	}
	if !slices.Equal(offsets, []int64{0, 2, 4}) || res.NextBeginOffset != 6 {
		t.Fatalf("offsets %v, next %d", offsets, res.NextBeginOffset)
	}
	// From a message of another tag, one at a time: the next match.
	res, err = c.PullFrom(context.Background(), q, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := bodies(res.GetMessageExts()); !slices.Equal(got, []string{"blue-4"}) || res.NextBeginOffset != 5 {
		t.Fatalf("pulled %v from 3, next %d", got, res.NextBeginOffset)
	}
	// Only non-matching messages left: nothing, and the offset moves on.
	res, err = c.PullFrom(context.Background(), q, 5, 32)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == primitive.PullFound || res.NextBeginOffset != 6 {
		t.Fatalf("pull from 5: status %v, next %d, %v", res.Status, res.NextBeginOffset, bodies(res.GetMessageExts()))
	}
	// Pull reads from the group's position: a new group on a young queue
	// starts at 0.
	res, err = c.Pull(context.Background(), 32)
	if err != nil {
		t.Fatal(err)
	}
	if got := bodies(res.GetMessageExts()); !slices.Equal(got, []string{"red-0", "red-2", "blue-4"}) {
		t.Fatalf("Pull got %v", got)
	}
}

// adminClient is the Go client's admin API.
func (k *karman) adminClient(opts ...admin.AdminOption) admin.Admin {
	k.t.Helper()
	a, err := admin.NewAdmin(append([]admin.AdminOption{
		admin.WithResolver(primitive.NewPassthroughResolver([]string{k.namesrv}))}, opts...)...)
	if err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { a.Close() })
	return a
}

// brokerTopics answers the names of the topics the broker holds.
func (k *karman) brokerTopics() []string {
	k.t.Helper()
	resp := k.invoke(wire.GetAllTopicConfig, nil, nil)
	var w struct {
		TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
	}
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		k.t.Fatalf("topic configs %s: %v", resp.Remark, err)
	}
	return slices.Sorted(maps.Keys(w.TopicConfigTable))
}

// waitNoRoute waits until the name server no longer routes topic.
func (k *karman) waitNoRoute(topic string) {
	k.t.Helper()
	p, err := peer.Dial(context.Background(), k.namesrv, peer.Options{RequestTimeout: 5 * time.Second})
	if err != nil {
		k.t.Fatal(err)
	}
	defer p.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		req := wire.NewRequest(wire.GetRouteInfoByTopic, nil)
		req.EncodeHeader(&wire.GetRouteInfoRequestHeader{Topic: topic})
		resp, err := p.Invoke(context.Background(), req)
		if err != nil {
			k.t.Fatal(err)
		}
		if resp.ResponseCode() == wire.TopicNotExist {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("%s is still routed: %s", topic, resp.ResponseCode())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The admin API: topics created and deleted through it, the name
// server's topic list, publishing queues, cluster names and the broker's
// consumer groups all match what the broker holds.
func TestAdmin(t *testing.T) {
	k := startKarman(t)
	a := k.adminClient()
	ctx := context.Background()
	const topic = "AdminMade"
	err := a.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(k.broker),
		admin.WithReadQueueNums(3), admin.WithWriteQueueNums(3))
	if err != nil {
		t.Fatal(err)
	}
	k.waitRoute(topic)
	if !slices.Contains(k.brokerTopics(), topic) {
		t.Fatalf("the broker holds %v, not %s", k.brokerTopics(), topic)
	}

	mqs, err := a.FetchPublishMessageQueues(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, mq := range mqs {
		if mq.Topic != topic || mq.BrokerName != broker.DefaultBrokerName {
			t.Errorf("publishing queue %v", mq)
		}
		ids = append(ids, mq.QueueId)
	}
	if slices.Sort(ids); !slices.Equal(ids, []int{0, 1, 2}) {
		t.Fatalf("publishing queues %v", ids)
	}
	clusters, err := a.FetchClusterList(topic)
	if err != nil || !slices.Equal(clusters, []string{broker.DefaultClusterName}) {
		t.Fatalf("clusters of %s: %v %v", topic, clusters, err)
	}

	// The name server lists what the broker registered.
	list, err := a.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := slices.Sorted(slices.Values(list.TopicList))
	if !slices.Equal(listed, k.brokerTopics()) {
		t.Fatalf("name server lists %v, broker holds %v", listed, k.brokerTopics())
	}

	// Groups.
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: "admin-group", ConsumeEnable: true, RetryMaxTimes: 5})
	groups, err := a.GetAllSubscriptionGroup(ctx, k.broker, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := groups.SubscriptionGroupTable["admin-group"]
	if !ok || g.GroupName != "admin-group" || !g.ConsumeEnable || g.RetryMaxTimes != 5 || g.ConsumeBroadcastEnable {
		t.Fatalf("admin-group is %+v (%v) among %v", g, ok, slices.Collect(maps.Keys(groups.SubscriptionGroupTable)))
	}
	if groups.DataVersion.Timestamp == 0 {
		t.Errorf("group table without a data version: %+v", groups.DataVersion)
	}

	// Deleting the topic removes it from the broker and the name server.
	if err := a.DeleteTopic(ctx, admin.WithTopicDelete(topic)); err != nil {
		t.Fatal(err)
	}
	k.waitNoRoute(topic)
	if slices.Contains(k.brokerTopics(), topic) {
		t.Fatalf("the broker still holds %s", topic)
	}
	list, err = a.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(list.TopicList, topic) {
		t.Fatalf("the name server still lists %s", topic)
	}
	if _, err := a.FetchPublishMessageQueues(ctx, "NeverMade"); err == nil {
		t.Fatal("publishing queues of a topic nobody made")
	}
}

// Namespaces: the client prefixes topics and groups with "ns%"; messages
// flow under the prefixed names (the Go push consumer, unlike Java's,
// hands them over with the prefix, retried ones included), failed messages are retried through the namespaced retry topic and end
// in the namespaced dead-letter topic.
func TestNamespace(t *testing.T) {
	k := startKarman(t)
	const ns, topic, group = "ns", "NsTopic", "nsgroup"
	k.createTopic(ns+"%"+topic, 2)
	k.createGroup(broker.SubscriptionGroupConfig{
		GroupName: ns + "%" + group, ConsumeEnable: true, RetryMaxTimes: 1,
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
	}, consumer.WithNamespace(ns), consumer.WithMaxReconsumeTimes(1), consumer.WithConsumeMessageBatchMaxSize(1))
	p := k.producer(producer.WithNamespace(ns))
	for i := range 3 {
		p.send(primitive.NewMessage(topic, []byte("good-"+strconv.Itoa(i))).WithTag("good"))
	}
	p.send(primitive.NewMessage(topic, []byte("bad-0")).WithTag("bad"))
	all.waitFor(t, "every message, and the failed one twice", time.Minute, func() bool {
		return all.distinct() == 4 && all.count("bad-0") == 2
	})
	dead := k.drainQueue(message.DLQTopic(ns+"%"+group), 1)
	if string(dead[0].Body) != "bad-0" {
		t.Fatalf("dead letter %s", dead[0].Body)
	}
	all.mu.Lock()
	defer all.mu.Unlock()
	for _, m := range all.msgs {
		if m.Topic != ns+"%"+topic {
			t.Errorf("%s delivered under topic %s, want %s%%%s", m.Body, m.Topic, ns, topic)
		}
	}
	for i := range 3 {
		if n := all.bySeq["good-"+strconv.Itoa(i)]; n != 1 {
			t.Errorf("good-%d delivered %d times", i, n)
		}
	}
	if slices.Contains(k.brokerTopics(), topic) {
		t.Errorf("the broker made an unprefixed %s", topic)
	}
}

// fromWhere starts a push consumer of a new group reading topic from
// where, and returns what it receives.
func (k *karman) fromWhere(group, topic string, where consumer.ConsumeFromWhere, opts ...consumer.Option) *received {
	k.t.Helper()
	got := newReceived()
	k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	}, append([]consumer.Option{consumer.WithConsumeFromWhere(where)}, opts...)...)
	return got
}

// set returns the bodies r received, sorted, each once.
func (r *received) set() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.bySeq))
}

// sorted returns strs sorted.
func sorted(strs ...[]string) []string {
	return slices.Sorted(slices.Values(slices.Concat(strs...)))
}

// A new group on a queue that still holds its first message reads it
// from the start, whatever its consume-from setting: Java's broker
// answers offset 0 for a group without one there.
func TestConsumeFromWhereYoungQueue(t *testing.T) {
	k := startKarman(t)
	const topic = "Young"
	k.createTopic(topic, 2)
	p := k.producer()
	for i := range 6 {
		p.send(primitive.NewMessage(topic, []byte("old-"+strconv.Itoa(i))))
	}
	future := time.Now().Add(time.Hour).UTC().Format("20060102150405")
	groups := map[string]*received{
		"young-last":  k.fromWhere("young-last", topic, consumer.ConsumeFromLastOffset),
		"young-first": k.fromWhere("young-first", topic, consumer.ConsumeFromFirstOffset),
		"young-time":  k.fromWhere("young-time", topic, consumer.ConsumeFromTimestamp, consumer.WithConsumeTimestamp(future)),
	}
	p.send(primitive.NewMessage(topic, []byte("new")))
	want := sorted(seq("old", 0, 6), []string{"new"})
	for name, got := range groups {
		got.waitFor(t, name+" to read everything", time.Minute, func() bool { return got.distinct() == len(want) })
		if !slices.Equal(got.set(), want) {
			t.Errorf("%s read %v, want %v", name, got.set(), want)
		}
	}
}

// A new group on a queue whose first messages are gone (retention
// deleted their segment) starts where its consume-from setting says:
// the end, the first message left, or the first message stored at or
// after its timestamp.
func TestConsumeFromWhereTruncatedQueue(t *testing.T) {
	k := startKarman(t, "--segment-size", "256KiB", "--max-message-size", "16KiB", "--retention-age", "1s", "--retention-interval", "50ms")
	const topic = "Aged"
	k.createTopic(topic, 1)
	p := k.producer(producer.WithCompressMsgBodyOverHowmuch(1 << 20))
	// 40 messages of 8 KiB fill the first segment and roll to a second,
	// which has room for everything the test sends later, so retention
	// deletes no more.
	pad := strings.Repeat("x", 8192)
	for i := range 40 {
		p.send(primitive.NewMessage(topic, []byte(fmt.Sprintf("old-%d %s", i, pad))))
	}
	// Wait for retention to delete the first segment.
	first := k.waitMinOffset(topic, 0, 0)
	if first >= 40 {
		t.Fatalf("retention deleted every message: min offset %d", first)
	}
	// Messages stored from the next whole second on, for the timestamp.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	since := time.Now()
	for i := range 5 {
		p.send(primitive.NewMessage(topic, []byte("later-"+strconv.Itoa(i))))
	}
	if min := k.minOffset(topic, 0); min != first {
		t.Fatalf("min offset moved from %d to %d", first, min)
	}

	last := k.fromWhere("aged-last", topic, consumer.ConsumeFromLastOffset)
	firstGot := k.fromWhere("aged-first", topic, consumer.ConsumeFromFirstOffset)
	timed := k.fromWhere("aged-time", topic, consumer.ConsumeFromTimestamp, consumer.WithConsumeTimestamp(since.UTC().Format("20060102150405")))

	// Nothing says when a group has settled on its position, so send new
	// messages until each group has read one: each then reads every
	// message from its position on. (The group reading from the first
	// offset pulls offset 0 first, is told it moved, and the Go client
	// takes 10 s to fix that and up to 20 s more to resume the queue.)
	groups := []*received{last, firstGot, timed}
	readNew := func(r *received) bool { return slices.ContainsFunc(r.set(), isNew) }
	sent := 0
	deadline := time.Now().Add(time.Minute)
	for !all(groups, readNew) {
		if time.Now().After(deadline) {
			t.Fatal("the new groups read no new message")
		}
		p.send(primitive.NewMessage(topic, []byte("new-"+strconv.Itoa(sent))))
		sent++
		time.Sleep(200 * time.Millisecond)
	}
	lastNew := "new-" + strconv.Itoa(sent-1)

	var old []string
	for i := first; i < 40; i++ {
		old = append(old, fmt.Sprintf("old-%d %s", i, pad))
	}
	tests := []struct {
		name string
		got  *received
		want []string // what it read besides new messages
	}{
		{"last offset", last, nil},
		{"first offset", firstGot, sorted(old, seq("later", 0, 5))},
		{"timestamp", timed, seq("later", 0, 5)},
	}
	for _, tt := range tests {
		tt.got.waitFor(t, tt.name+" to read "+lastNew, time.Minute, func() bool { return tt.got.count(lastNew) > 0 })
		got := slices.DeleteFunc(tt.got.set(), isNew)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s read %d messages %.200v, want %d %.200v", tt.name, len(got), got, len(tt.want), tt.want)
		}
	}
}

func isNew(body string) bool { return strings.HasPrefix(body, "new-") }

// all reports whether ok holds for every r.
func all(rs []*received, ok func(*received) bool) bool {
	for _, r := range rs {
		if !ok(r) {
			return false
		}
	}
	return true
}

// minOffset answers the first offset (topic, queue) holds.
func (k *karman) minOffset(topic string, queue int32) int64 {
	k.t.Helper()
	resp := k.invoke(wire.GetMinOffset, &wire.GetMinOffsetRequestHeader{Topic: topic, QueueID: queue}, nil)
	var h wire.OffsetResponseHeader
	if err := h.DecodeFields(resp.ExtFields); err != nil || resp.ResponseCode() != wire.Success {
		k.t.Fatalf("min offset of %s/%d: %s %s %v", topic, queue, resp.ResponseCode(), resp.Remark, err)
	}
	return h.Offset
}

// waitMinOffset waits until (topic, queue)'s min offset is above floor,
// and returns it.
func (k *karman) waitMinOffset(topic string, queue int32, floor int64) int64 {
	k.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := k.minOffset(topic, queue); m > floor {
			return m
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("min offset of %s/%d stayed at %d", topic, queue, floor)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitConsumerOffset waits until the broker holds an offset for group in
// (topic, queue): the group's consumer committed where it starts.
func (k *karman) waitConsumerOffset(group, topic string, queue int32) {
	k.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for k.committedOffset(group, topic, queue) < 0 {
		if time.Now().After(deadline) {
			k.t.Fatalf("%s committed no offset in %s/%d", group, topic, queue)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// batches records the size of every batch a listener was handed.
type batches struct {
	*received
	sizes chan int
}

func newBatches() *batches { return &batches{received: newReceived(), sizes: make(chan int, 1000)} }

func (b *batches) handle(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
	b.sizes <- len(msgs)
	b.add(msgs...)
	return consumer.ConsumeSuccess
}

// largest returns the largest batch handed over so far.
func (b *batches) largest() int {
	n := 0
	for len(b.sizes) > 0 {
		n = max(n, <-b.sizes)
	}
	return n
}

// The push consumer's batch sizes: a listener gets at most
// consumeMessageBatchMaxSize messages at once, from pulls of at most
// pullBatchSize; the pull interval spaces pulls out.
func TestPushConsumerBatches(t *testing.T) {
	k := startKarman(t)
	const topic = "Batched"
	k.createTopic(topic, 1)
	p := k.producer()
	for i := range 20 {
		p.send(primitive.NewMessage(topic, []byte("m-"+strconv.Itoa(i))))
	}
	want := sorted(seq("m", 0, 20))
	consumeBatch, pullBatch, spaced := newBatches(), newBatches(), newBatches()
	k.pushConsumer("consume-batch", topic, "*", consumeBatch.handle,
		consumer.WithConsumeMessageBatchMaxSize(4), consumer.WithPullBatchSize(8))
	k.pushConsumer("pull-batch", topic, "*", pullBatch.handle,
		consumer.WithConsumeMessageBatchMaxSize(16), consumer.WithPullBatchSize(3))
	start := time.Now()
	const interval = 300 * time.Millisecond
	k.pushConsumer("spaced", topic, "*", spaced.handle,
		consumer.WithPullBatchSize(5), consumer.WithPullInterval(interval))
	for name, b := range map[string]*batches{"consume-batch": consumeBatch, "pull-batch": pullBatch, "spaced": spaced} {
		b.waitFor(t, name+" to read everything", time.Minute, func() bool { return b.distinct() == len(want) })
		if got := b.set(); !slices.Equal(got, want) {
			t.Errorf("%s read %v", name, got)
		}
	}
	// Four pulls of five, each after the interval.
	if d := time.Since(start); d < 3*interval {
		t.Errorf("20 messages in pulls of 5, %s apart, took only %s", interval, d)
	}
	if n := consumeBatch.largest(); n != 4 {
		t.Errorf("largest batch with consumeMessageBatchMaxSize 4 and pullBatchSize 8: %d", n)
	}
	if n := pullBatch.largest(); n != 3 {
		t.Errorf("largest batch with consumeMessageBatchMaxSize 16 and pullBatchSize 3: %d", n)
	}
	if n := spaced.largest(); n != 1 {
		t.Errorf("largest batch with the default consumeMessageBatchMaxSize: %d", n)
	}
}

// A suspended push consumer stops pulling; resumed, it reads on.
func TestPushConsumerSuspendResume(t *testing.T) {
	k := startKarman(t)
	const topic = "Suspended"
	k.createTopic(topic, 1)
	p := k.producer()
	got := newReceived()
	c, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{k.namesrv}), consumer.WithGroupName("suspending"),
		consumer.WithInstance(instance("consumer")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.add(msgs...)
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	p.send(primitive.NewMessage(topic, []byte("before")))
	got.waitFor(t, "the first message", time.Minute, func() bool { return got.count("before") == 1 })

	c.Suspend()
	// (The Go client looks again 30 s after it finds itself suspended, so
	// this test takes that long.)
	// A pull held by the broker when the consumer was suspended still
	// answers the next message; nothing signals that no other pull is on
	// its way, so give it a moment.
	p.send(primitive.NewMessage(topic, []byte("during-0")))
	time.Sleep(2 * time.Second)
	p.send(primitive.NewMessage(topic, []byte("during-1")))
	time.Sleep(2 * time.Second)
	if got.count("during-1") != 0 {
		t.Fatal("a suspended consumer read on")
	}
	c.Resume()
	got.waitFor(t, "the messages sent while suspended", time.Minute, func() bool { return got.count("during-1") == 1 })
	if want := []string{"before", "during-0", "during-1"}; !slices.Equal(got.set(), want) {
		t.Fatalf("read %v, want %v", got.set(), want)
	}
}

// Producer options: no retries and a send timeout, one-way sends.
func TestProducerOptions(t *testing.T) {
	k := startKarman(t)
	const topic = "Tuned"
	k.createTopic(topic, 2)
	p := k.producer(producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))
	res := p.send(primitive.NewMessage(topic, []byte("sync")))
	if res.MessageQueue.Topic != topic || res.QueueOffset != 0 {
		t.Fatalf("send result %v", res)
	}
	for i := range 5 {
		if err := p.p.SendOneWay(context.Background(), primitive.NewMessage(topic, []byte("oneway-"+strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
	got := newReceived()
	k.pushConsumer("tuned", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	want := sorted([]string{"sync"}, seq("oneway", 0, 5))
	got.waitFor(t, "every message", time.Minute, func() bool { return got.distinct() == len(want) })
	if !slices.Equal(got.set(), want) {
		t.Fatalf("read %v, want %v", got.set(), want)
	}
}

// With auto-creation off, a send to a topic nobody created fails with an
// error that names the topic, and creates nothing.
func TestSendToMissingTopic(t *testing.T) {
	k := startKarman(t, "--auto-create-topics=false")
	k.createTopic("Exists", 1)
	p := k.producer(producer.WithRetry(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.p.SendSync(ctx, primitive.NewMessage("Missing", []byte("lost")))
	if err == nil {
		t.Fatal("a send to a missing topic succeeded")
	}
	t.Logf("send to a missing topic: %v", err)
	if !strings.Contains(err.Error(), "Missing") {
		t.Errorf("the error does not name the topic: %v", err)
	}
	if slices.Contains(k.brokerTopics(), "Missing") {
		t.Error("the broker created the topic")
	}
	// The existing topic still works.
	p.send(primitive.NewMessage("Exists", []byte("kept")))

	// A topic deleted after the producer learned its route: the broker
	// refuses the send, and says why.
	k.createTopic("Doomed", 1)
	p.send(primitive.NewMessage("Doomed", []byte("first")))
	if err := k.adminClient().DeleteTopic(ctx, admin.WithTopicDelete("Doomed"), admin.WithBrokerAddrDelete(k.broker)); err != nil {
		t.Fatal(err)
	}
	k.waitNoRoute("Doomed")
	_, err = p.p.SendSync(ctx, primitive.NewMessage("Doomed", []byte("second")))
	if err == nil {
		t.Fatal("a send to a deleted topic succeeded")
	}
	t.Logf("send to a deleted topic: %v", err)
	if !strings.Contains(err.Error(), "Doomed") {
		t.Errorf("the error does not name the topic: %v", err)
	}
	if slices.Contains(k.brokerTopics(), "Doomed") {
		t.Error("the broker re-created the deleted topic")
	}
}

// Request/reply: a producer's Request waits for the reply a consumer
// sends with CreateReplyMessage; the broker hands the reply to the
// requesting client on its connection, also before the requester's
// first heartbeat (it sends none before its first request to a topic
// that exists).
func TestRequestReply(t *testing.T) {
	k := startKarman(t)
	const topic = "Requests"
	k.createTopic(topic, 2)
	replier := k.producer()
	// What the replier saw, to say where a request that times out was lost.
	var (
		questions atomic.Int64
		lastReply atomic.Value // string: the outcome of the last reply sent
	)
	lastReply.Store("none sent")
	k.pushConsumer("replier", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		for _, m := range msgs {
			questions.Add(1)
			reply, err := consumer.CreateReplyMessage(m, nil)
			if err != nil {
				t.Errorf("reply to %s: %v", m.Body, err)
				continue
			}
			// CreateReplyMessage reads its body argument as properties and
			// leaves the body empty.
			reply.Body = []byte("re: " + string(m.Body))
			// A question can come again while the test ends (the client
			// consumes at least once): a reply that fails here fails
			// the request below, and the test must not be failed from
			// the consumer's goroutine after it has ended.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := replier.p.SendSync(ctx, reply)
			cancel()
			lastReply.Store(fmt.Sprintf("to %s: %v, %v", m.Body, res, err))
		}
		return consumer.ConsumeSuccess
	})
	requester, err := producer.NewDefaultProducer(producer.WithNameServer([]string{k.namesrv}),
		producer.WithInstanceName(instance("requester")), producer.WithGroupName("requesters"))
	if err != nil {
		t.Fatal(err)
	}
	if err := requester.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { requester.Shutdown() })
	for i := range 3 {
		body := "question-" + strconv.Itoa(i)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		reply, err := requester.Request(ctx, 15*time.Second, primitive.NewMessage(topic, []byte(body)))
		cancel()
		if err != nil {
			t.Fatalf("request %s: %v (the replier had received %d questions; its last reply %v)", body, err, questions.Load(), lastReply.Load())
		}
		if string(reply.Body) != "re: "+body {
			t.Fatalf("request %s got reply %q", body, reply.Body)
		}
	}
}

// A pull consumer assigned queues reads them from where it seeks,
// including the offset of a timestamp, and commits as it acknowledges.
func TestPullConsumerAssign(t *testing.T) {
	k := startKarman(t)
	const topic, group = "Assigned", "assignee"
	k.createTopic(topic, 2)
	p := k.producer(producer.WithQueueSelector(queueSelector{}))
	sendToQueue(t, p, topic, 0, "t", seq("early", 0, 5)...)
	// The next whole millisecond, so that the timestamp splits the queue.
	time.Sleep(time.Until(time.Now().Truncate(time.Millisecond).Add(2 * time.Millisecond)))
	split := time.Now().UnixMilli()
	time.Sleep(time.Until(time.UnixMilli(split + 2)))
	sendToQueue(t, p, topic, 0, "t", seq("late", 0, 5)...)

	c, err := consumer.NewPullConsumer(consumer.WithNameServer([]string{k.namesrv}), consumer.WithGroupName(group),
		consumer.WithInstance(instance("puller")), consumer.WithPullBatchSize(4))
	if err != nil {
		t.Fatal(err)
	}
	mq := &primitive.MessageQueue{Topic: topic, BrokerName: broker.DefaultBrokerName, QueueId: 0}
	if err := c.Assign(topic, []*primitive.MessageQueue{mq}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	off, err := c.OffsetForTimestamp(mq, split)
	if err != nil || off != 5 {
		t.Fatalf("offset for the timestamp between early and late: %d %v, want 5", off, err)
	}
	c.SeekOffset(mq, off)
	// The consumer may have pulled a batch from the start before the
	// seek: then the seek skips the rest of the early messages.
	var polled []string
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(polled, "late-4") {
		if time.Now().After(deadline) {
			t.Fatalf("polled %v", polled)
		}
		cr, err := c.Poll(context.Background(), 5*time.Second)
		if consumer.IsNoNewMsgError(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		polled = append(polled, bodies(cr.GetMsgList())...)
		c.ACK(context.Background(), cr, consumer.ConsumeSuccess)
	}
	early := slices.IndexFunc(polled, func(b string) bool { return strings.HasPrefix(b, "late-") })
	if !slices.Equal(polled[:early], seq("early", 0, early)) || !slices.Equal(polled[early:], seq("late", 0, 5)) {
		t.Fatalf("polled %v after seeking to %d", polled, off)
	}
	k.persistUntil(c, group, topic, 0, 10, nil)
}

// tracing is set once a test has traced: a second trace dispatcher in the
// process talking to another name server gets no client and panics.
var tracing atomic.Bool

// Message traces: with WithTrace, producer and consumer report what they
// sent and consumed to the trace topic.
func TestTrace(t *testing.T) {
	if tracing.Swap(true) {
		t.Skip("the Go client's trace dispatchers share one client, tied to the first name server it was given")
	}
	k := startKarman(t)
	const topic, traceTopic = "Traced", "RMQ_SYS_TRACE_TOPIC"
	k.createTopic(topic, 1)
	k.waitRoute(traceTopic) // the broker makes it
	cfg := &primitive.TraceConfig{Access: primitive.Local, Resolver: primitive.NewPassthroughResolver([]string{k.namesrv})}
	p := k.producer(producer.WithTrace(cfg))
	res := p.send(primitive.NewMessage(topic, []byte("traced")).WithKeys([]string{"trace-key"}))
	got := newReceived()
	k.pushConsumer("tracing", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	}, consumer.WithTrace(cfg))
	got.waitFor(t, "the traced message", time.Minute, func() bool { return got.count("traced") == 1 })
	// A publish trace, and a consume-before and a consume-after trace;
	// the client may batch traces into one message.
	var kinds []string
	for n := 1; len(kinds) < 3; n++ {
		kinds = nil
		for _, m := range k.drainQueue(traceTopic, n) {
			if !strings.Contains(string(m.Body), res.MsgID) {
				t.Errorf("trace %q does not name message %s", m.Body, res.MsgID)
			}
			for _, rec := range strings.Split(string(m.Body), "\x02") {
				if kind, _, ok := strings.Cut(rec, "\x01"); ok {
					kinds = append(kinds, kind)
				}
			}
		}
	}
	if slices.Sort(kinds); !slices.Equal(kinds, []string{"Pub", "SubAfter", "SubBefore"}) {
		t.Fatalf("trace kinds %v", kinds)
	}
}
