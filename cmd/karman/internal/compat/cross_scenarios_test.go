//go:build !race && unix

package compat

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/broker"
)

// Scenarios that cross the two front-ends: what a Go client sends over
// remoting is consumed by a Node.js client over gRPC, and the other way
// round, with the same meaning: FIFO order and message groups, delivery
// times, transactions, properties, ids and times, and dead letters.

// crossProperties are user properties with unusual names and values:
// non-ASCII, empty, and names close to system ones.
var crossProperties = map[string]string{
	"ключ-ü":         "значение ✓ 值",
	"empty":          "",
	"tags":           "lower-case TAGS",
	"KEYS_":          "almost KEYS",
	"UNIQ_KEY2":      "almost UNIQ_KEY",
	"__SHARDINGKEY_": "almost a message group",
	"with space":     "a = b; c: d",
}

// ordered records, in arrival order, what a Go consumer's listener got.
type ordered struct {
	*received
	mu    sync.Mutex
	order []*primitive.MessageExt
	at    map[string]time.Time // body → first arrival
}

func newOrdered() *ordered { return &ordered{received: newReceived(), at: map[string]time.Time{}} }

func (o *ordered) handle(result consumer.ConsumeResult) func(...*primitive.MessageExt) consumer.ConsumeResult {
	return func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		now := time.Now()
		o.mu.Lock()
		for _, m := range msgs {
			o.order = append(o.order, m)
			if _, ok := o.at[string(m.Body)]; !ok {
				o.at[string(m.Body)] = now
			}
		}
		o.mu.Unlock()
		o.add(msgs...)
		return result
	}
}

// byBodyExt returns the first delivery of each body.
func (o *ordered) byBody() map[string]*primitive.MessageExt {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]*primitive.MessageExt{}
	for _, m := range o.order {
		if out[string(m.Body)] == nil {
			out[string(m.Body)] = m
		}
	}
	return out
}

// fifoMessages returns perGroup messages of each group, interleaved, each
// body "<group>-<index>".
func fifoMessages(groups []string, perGroup int) []outMessage {
	var out []outMessage
	for i := range perGroup {
		for _, g := range groups {
			out = append(out, outMessage{Body: g + "-" + strconv.Itoa(i), Group: g, Tag: "fifo"})
		}
	}
	return out
}

// checkGroupOrder fails the test unless bodies, with each message's
// repeated deliveries collapsed, hold each group's messages in send order.
func checkGroupOrder(t *testing.T, who string, want []outMessage, got []struct{ body, group string }) {
	t.Helper()
	wantOrder := map[string][]string{}
	for _, m := range want {
		wantOrder[m.Group] = append(wantOrder[m.Group], m.Body)
	}
	gotOrder := map[string][]string{}
	for _, d := range got {
		seq := gotOrder[d.group]
		if len(seq) == 0 || seq[len(seq)-1] != d.body {
			gotOrder[d.group] = append(seq, d.body)
		}
	}
	for g, w := range wantOrder {
		if !slices.Equal(gotOrder[g], w) {
			t.Errorf("%s: message group %s consumed in order %v, want %v", who, g, gotOrder[g], w)
		}
	}
	for g := range gotOrder {
		if wantOrder[g] == nil {
			t.Errorf("%s: messages of group %q %v, which was never sent", who, g, gotOrder[g])
		}
	}
}

// TestCrossFIFONodeToGo: FIFO messages a Node producer sends with message
// groups reach a Go orderly push consumer in send order per group, with
// the group as the sharding key (__SHARDINGKEY) and the Node message ids.
func TestCrossFIFONodeToGo(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "CrossFifoNodeToGo"
	k.createTypedTopic(topic, 4, "FIFO")
	out := fifoMessages([]string{"ga", "gb", "gc", "gd", "ge"}, 8)
	sent := k.nodeSend(topic, out)
	got := newOrdered()
	k.pushConsumer("cross-fifo-go", topic, "*", got.handle(consumer.ConsumeSuccess), consumer.WithConsumerOrder(true))
	got.waitFor(t, "every FIFO message", 30*time.Second, func() bool { return got.distinct() == len(out) })

	got.mu.Lock()
	var seq []struct{ body, group string }
	for _, m := range got.order {
		seq = append(seq, struct{ body, group string }{string(m.Body), m.GetProperty(message.PropertyShardingKey)})
	}
	got.mu.Unlock()
	checkGroupOrder(t, "Go orderly consumer", out, seq)
	byBody := got.byBody()
	for i, w := range out {
		m := byBody[w.Body]
		if m.MsgId != sent[i].ID || m.GetTags() != w.Tag || m.ReconsumeTimes != 0 {
			t.Errorf("%s sent as id %s tag %s, received as id %s tag %s after %d reconsumes", w.Body, sent[i].ID, w.Tag, m.MsgId, m.GetTags(), m.ReconsumeTimes)
		}
		if n := got.count(w.Body); n != 1 {
			t.Errorf("%s delivered %d times", w.Body, n)
		}
	}
}

// TestCrossFIFOGoToNode: a Go producer sends with a sharding key and the
// hash queue selector to a FIFO topic; a Node FIFO push consumer and a
// Node FIFO simple consumer (two groups) each get every group's messages
// in send order, with the sharding key as the message group.
func TestCrossFIFOGoToNode(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, pushGroup, simpleGroup = "CrossFifoGoToNode", "cross-fifo-push", "cross-fifo-simple"
	k.createTypedTopic(topic, 4, "FIFO")
	for _, g := range []string{pushGroup, simpleGroup} {
		k.createGroup(broker.SubscriptionGroupConfig{GroupName: g, ConsumeEnable: true, ConsumeMessageOrderly: true,
			RetryMaxTimes: 3, GroupRetryPolicy: shortRetries})
	}
	out := fifoMessages([]string{"key-a", "key-b", "key-c", "key-d"}, 6)
	p := k.producer(producer.WithQueueSelector(producer.NewHashQueueSelector()))
	ids := map[string]string{}
	for _, w := range out {
		res := p.send(primitive.NewMessage(topic, []byte(w.Body)).WithTag(w.Tag).WithShardingKey(w.Group))
		ids[w.Body] = res.MsgID
	}
	push := k.startNode("push", map[string]any{"topic": topic, "group": pushGroup, "count": len(out), "holdMs": 5})
	simple := k.startNode("crossview", map[string]any{"topic": topic, "group": simpleGroup, "count": len(out)})
	var pushed struct {
		Deliveries []nodeMessage `json:"deliveries"`
	}
	var simpled struct {
		Received []nodeMessage `json:"received"`
	}
	push.wait(&pushed)
	simple.wait(&simpled)
	for who, ds := range map[string][]nodeMessage{"Node push consumer": pushed.Deliveries, "Node simple consumer": simpled.Received} {
		var seq []struct{ body, group string }
		for _, d := range ds {
			seq = append(seq, struct{ body, group string }{d.Body, d.Group})
			if d.ID != ids[d.Body] || d.Tag != "fifo" || d.Corrupted {
				t.Errorf("%s: %s (id %s) delivered as %v", who, d.Body, ids[d.Body], d)
			}
		}
		checkGroupOrder(t, who, out, seq)
	}
}

// TestCrossDelayNodeToGo: messages a Node producer gives a delivery time
// reach a Go consumer no earlier than that time, carrying it in
// TIMER_DELIVER_MS as a Java broker's timer delivers them.
func TestCrossDelayNodeToGo(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "CrossDelayNodeToGo"
	k.createTypedTopic(topic, 2, "DELAY")
	out := []outMessage{
		{Body: "due-1500", Tag: "later", DelayMs: 1500, Properties: map[string]string{"p": "1"}},
		{Body: "due-3000", Tag: "later", DelayMs: 3000, Keys: []string{"k1", "k2"}},
	}
	got := newOrdered()
	k.pushConsumer("cross-delay-go", topic, "*", got.handle(consumer.ConsumeSuccess))
	sent := k.nodeSend(topic, out)
	got.waitFor(t, "the delayed messages", 30*time.Second, func() bool { return got.distinct() == len(out) })
	byBody := got.byBody()
	got.mu.Lock()
	defer got.mu.Unlock()
	for i, w := range out {
		m, due := byBody[w.Body], time.UnixMilli(sent[i].DeliverAt)
		if early := due.Sub(got.at[w.Body]); early > 0 {
			t.Errorf("%s arrived %s before its delivery time", w.Body, early)
		}
		if late := got.at[w.Body].Sub(due); late > 5*time.Second {
			t.Errorf("%s arrived %s after its delivery time", w.Body, late)
		}
		if m.MsgId != sent[i].ID || m.Topic != topic || m.GetTags() != w.Tag || m.GetKeys() != strings.Join(w.Keys, " ") {
			t.Errorf("%s (id %s) received as id %s on %s tag %q keys %q", w.Body, sent[i].ID, m.MsgId, m.Topic, m.GetTags(), m.GetKeys())
		}
		if v := m.GetProperty(message.PropertyTimerDeliverMS); v != strconv.FormatInt(sent[i].DeliverAt, 10) {
			t.Errorf("%s: TIMER_DELIVER_MS %q, want its delivery time %d; properties %v", w.Body, v, sent[i].DeliverAt, m.GetProperties())
		}
		for _, internal := range []string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyDelayLevel} {
			if v, ok := m.GetProperties()[internal]; ok {
				t.Errorf("%s carries %s=%q", w.Body, internal, v)
			}
		}
	}
}

// TestCrossDelayGoToNode: messages a Go producer sends with delay levels 1
// and 2 (1 s and 5 s) reach a Node consumer no earlier than their delay,
// with a delivery timestamp of the send time plus the delay.
func TestCrossDelayGoToNode(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "CrossDelayGoToNode"
	k.createTypedTopic(topic, 2, "DELAY")
	p := k.producer()
	delays := map[string]time.Duration{"level-1": time.Second, "level-2": 5 * time.Second}
	before, after := map[string]time.Time{}, map[string]time.Time{}
	ids := map[string]string{}
	for level, body := range []string{"level-1", "level-2"} {
		before[body] = time.Now()
		res := p.send(primitive.NewMessage(topic, []byte(body)).WithDelayTimeLevel(level + 1).WithTag("delayed"))
		after[body] = time.Now()
		ids[body] = res.MsgID
	}
	got := k.nodeReceive(map[string]any{"topic": topic, "group": "cross-delay-node", "count": len(delays)})
	for body, ms := range deliveriesOf(got) {
		if len(ms) != 1 {
			t.Errorf("%s delivered %d times", body, len(ms))
			continue
		}
		m, d := ms[0], delays[body]
		due := time.UnixMilli(m.DeliverAt)
		// The broker rounds up to the millisecond.
		if m.DeliverAt == 0 || due.Before(before[body].Add(d).Truncate(time.Millisecond)) || due.After(after[body].Add(d+time.Second)) {
			t.Errorf("%s sent between %s and %s with a %s delay, delivered with delivery timestamp %s",
				body, before[body].Format(time.StampMilli), after[body].Format(time.StampMilli), d, due.Format(time.StampMilli))
		}
		if m.ReceivedAt < m.DeliverAt {
			t.Errorf("%s received %d ms before its delivery timestamp", body, m.DeliverAt-m.ReceivedAt)
		}
		if m.ID != ids[body] || m.Tag != "delayed" || m.Attempt != 1 || len(m.Properties) != 0 {
			t.Errorf("%s (id %s) received as %v", body, ids[body], m)
		}
	}
}

// crossTransactions commits or rolls back a Go transactional producer's
// messages by the first word of their body.
type crossTransactions struct{}

func (crossTransactions) state(body []byte) primitive.LocalTransactionState {
	if strings.HasPrefix(string(body), "commit") {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

func (c crossTransactions) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	return c.state(m.Body)
}

func (c crossTransactions) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	return c.state(m.Body)
}

var crossTxnBodies = []string{"commit-0", "rollback-0", "commit-1", "rollback-1", "commit-2", "commit-last"}

func committed(bodies []string) []string {
	var out []string
	for _, b := range bodies {
		if strings.HasPrefix(b, "commit") {
			out = append(out, b)
		}
	}
	return out
}

// TestCrossTransactionsGoToNode: a Go transactional producer's committed
// messages reach a Node consumer once, with their ids, keys and
// properties; the rolled-back ones never do.
func TestCrossTransactionsGoToNode(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "CrossTxnGoToNode"
	k.createTypedTopic(topic, 1, "TRANSACTION")
	tp, err := producer.NewTransactionProducer(crossTransactions{}, producer.WithNameServer([]string{k.namesrv}),
		producer.WithGroupName("cross-txn-producer"), producer.WithInstanceName(instance("txn")), producer.WithRetry(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown() })
	ids := map[string]string{}
	for _, body := range crossTxnBodies {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m := primitive.NewMessage(topic, []byte(body)).WithTag("txn").WithKeys([]string{"key-" + body})
		m.WithProperty("origin", "go")
		res, err := tp.SendMessageInTransaction(ctx, m)
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
		ids[body] = res.MsgID
	}
	want := committed(crossTxnBodies)
	got := k.nodeReceive(map[string]any{"topic": topic, "group": "cross-txn-node", "until": "commit-last"})
	byBody := deliveriesOf(got)
	for body, ms := range byBody {
		if !slices.Contains(want, body) {
			t.Errorf("%s was delivered %d times", body, len(ms))
		}
	}
	for _, body := range want {
		ms := byBody[body]
		if len(ms) != 1 {
			t.Errorf("%s delivered %d times, want once", body, len(ms))
			continue
		}
		m := ms[0]
		if m.ID != ids[body] || m.Tag != "txn" || !slices.Equal(m.Keys, []string{"key-" + body}) ||
			!maps.Equal(m.Properties, map[string]string{"origin": "go"}) || m.Attempt != 1 || m.Corrupted {
			t.Errorf("%s (id %s) received as %v", body, ids[body], m)
		}
	}
}

// TestCrossTransactionsNodeToGo: a Node transactional producer's committed
// messages reach a Go consumer once, without the half-message markers;
// the rolled-back ones never do.
func TestCrossTransactionsNodeToGo(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "CrossTxnNodeToGo"
	k.createTypedTopic(topic, 1, "TRANSACTION")
	var out []outMessage
	for _, body := range crossTxnBodies {
		out = append(out, outMessage{Body: body, Tag: "txn", Keys: []string{"key-" + body}, Properties: map[string]string{"origin": "node"}})
	}
	var res struct {
		Sent []sentMessage `json:"sent"`
	}
	k.node("crosstxn", map[string]any{"topic": topic, "messages": out}, &res)
	got := newOrdered()
	k.pushConsumer("cross-txn-go", topic, "*", got.handle(consumer.ConsumeSuccess))
	want := committed(crossTxnBodies)
	got.waitFor(t, "the committed messages", 30*time.Second, func() bool {
		return !slices.ContainsFunc(want, func(b string) bool { return got.count(b) == 0 })
	})
	// The rolled-back messages were ended before the last one was sent:
	// the topic's queue holds what will ever be delivered.
	var stored []string
	for _, m := range k.queueMessages(topic, 0) {
		stored = append(stored, string(m.Body))
	}
	if !slices.Equal(stored, want) {
		t.Errorf("%s holds %v, want %v", topic, stored, want)
	}
	byBody := got.byBody()
	for body := range byBody {
		if !slices.Contains(want, body) {
			t.Errorf("%s was delivered %d times", body, got.count(body))
		}
	}
	for i, s := range res.Sent {
		m := byBody[s.Body]
		if !slices.Contains(want, s.Body) {
			continue
		}
		if m == nil || got.count(s.Body) != 1 {
			t.Errorf("%s delivered %d times, want once", s.Body, got.count(s.Body))
			continue
		}
		props := m.GetProperties()
		if m.MsgId != s.ID || m.GetTags() != "txn" || m.GetKeys() != "key-"+s.Body || props["origin"] != "node" || m.Topic != topic {
			t.Errorf("%s (id %s) received as id %s on %s tag %q keys %q properties %v", s.Body, s.ID, m.MsgId, m.Topic, m.GetTags(), m.GetKeys(), props)
		}
		for _, internal := range []string{message.PropertyTransactionPrepared, message.PropertyRealTopic, message.PropertyRealQueueID} {
			if v, ok := props[internal]; ok {
				t.Errorf("%s (sent %d) carries %s=%q", s.Body, i, internal, v)
			}
		}
	}
}

// crossKeys are several keys of one message.
var crossKeys = []string{"key-1", "ключ-2", "key-3"}

// TestCrossPropertiesGoToNode: a Go producer's user properties with
// unusual names and values, several keys, tag, born host and time and its
// UNIQ_KEY reach a Node consumer as the message's; so does a body the Go
// client compresses.
func TestCrossPropertiesGoToNode(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "CrossPropsGoToNode"
	k.createTopic(topic, 2)
	p := k.producer()
	bodies := []string{"unusual", strings.Repeat("compressed-", 1<<9)} // 5.5 KiB: the Go client compresses above 4 KiB
	ids := map[string]string{}
	before := time.Now().UnixMilli()
	for _, body := range bodies {
		m := primitive.NewMessage(topic, []byte(body)).WithTag("props").WithKeys(crossKeys)
		for key, value := range crossProperties {
			m.WithProperty(key, value)
		}
		ids[body] = p.send(m).MsgID
	}
	after := time.Now().UnixMilli()
	// The Go client leaves out properties with empty values.
	want := maps.Clone(crossProperties)
	delete(want, "empty")
	var res struct {
		Received []struct {
			nodeMessage
			BornHost string `json:"bornHost"`
		} `json:"received"`
	}
	k.node("crossview", map[string]any{"topic": topic, "group": "cross-props-node", "count": len(bodies)}, &res)
	if len(res.Received) != len(bodies) {
		t.Errorf("%d deliveries, want %d", len(res.Received), len(bodies))
	}
	for _, m := range res.Received {
		if m.ID != ids[m.Body] || m.Topic != topic || m.Tag != "props" || !slices.Equal(m.Keys, crossKeys) ||
			!maps.Equal(m.Properties, want) || m.Attempt != 1 || m.Corrupted {
			t.Errorf("%.20s (id %s) received as %v", m.Body, ids[m.Body], m.nodeMessage)
		}
		if m.BornAt < before || m.BornAt > after || m.BornHost != "127.0.0.1" {
			t.Errorf("%.20s sent from 127.0.0.1 between %d and %d, received as born at %d on %q", m.Body, before, after, m.BornAt, m.BornHost)
		}
	}
}

// TestCrossPropertiesNodeToGo: a Node producer's user properties with
// unusual names and values, several keys, tag, message id, born host and
// time reach a Go consumer as the message's.
func TestCrossPropertiesNodeToGo(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "CrossPropsNodeToGo"
	k.createTopic(topic, 2)
	out := []outMessage{
		{Body: "unusual", Tag: "props", Keys: crossKeys, Properties: crossProperties},
		{Body: "large-", Repeat: 1 << 10, Tag: "props", Keys: crossKeys, Properties: crossProperties},
	}
	before := time.Now().UnixMilli()
	sent := k.nodeSend(topic, out)
	after := time.Now().UnixMilli()
	got := newOrdered()
	k.pushConsumer("cross-props-go", topic, "*", got.handle(consumer.ConsumeSuccess))
	got.waitFor(t, "every message", 30*time.Second, func() bool { return got.distinct() == len(out) })
	byBody := got.byBody()
	for i, w := range out {
		m := byBody[w.body()]
		props := map[string]string{}
		for key := range crossProperties {
			if v, ok := m.GetProperties()[key]; ok {
				props[key] = v
			}
		}
		if m.MsgId != sent[i].ID || m.Topic != topic || m.GetTags() != w.Tag || m.GetKeys() != strings.Join(crossKeys, " ") ||
			!maps.Equal(props, crossProperties) || m.ReconsumeTimes != 0 {
			t.Errorf("%.20s (id %s) received as id %s on %s tag %q keys %q properties %v", w.Body, sent[i].ID, m.MsgId, m.Topic, m.GetTags(), m.GetKeys(), m.GetProperties())
		}
		if m.BornTimestamp < before || m.BornTimestamp > after || m.StoreTimestamp < m.BornTimestamp || m.StoreTimestamp > time.Now().UnixMilli() {
			t.Errorf("%.20s sent between %d and %d, received as born at %d and stored at %d", w.Body, before, after, m.BornTimestamp, m.StoreTimestamp)
		}
		if !strings.HasPrefix(m.BornHost, "127.0.0.1:") {
			t.Errorf("%.20s born on %q, want the producer's address", w.Body, m.BornHost)
		}
	}
}

// TestCrossDeadLetterNodeToGo: a message a Node push consumer always
// fails lands in its group's dead-letter topic, which a Go pull consumer
// reads with the message's id, original topic, tag, keys and properties.
func TestCrossDeadLetterNodeToGo(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "CrossDlqNodeToGo", "cross-dlq-node-group"
	k.createTopic(topic, 1)
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 1, GroupRetryPolicy: shortRetries})
	out := []outMessage{
		{Body: "poison", Tag: "dead", Keys: crossKeys, Properties: crossProperties},
		{Body: "fine", Tag: "alive"},
	}
	// The engine creates the dead-letter topic with the first dead
	// letter, and the broker registers it with the name server at once,
	// in the background: the Go pull consumer waits for its route.
	dlq := message.DLQTopic(group)
	sent := k.nodeSend(topic, out)
	// The server moves the message once the consumer receives after its
	// last attempt failed: the consumer goes on until the test ends.
	k.startNode("push", map[string]any{"topic": topic, "group": group, "count": 1, "poison": []string{"poison"},
		"poisonAttempts": 2, "lingerMs": 60000})
	k.drainQueue(dlq, 1)
	k.waitRoute(dlq)
	c := k.pullConsumer("cross-dlq-reader", dlq, "*")
	m := pullOne(t, c, dlq)
	props := m.GetProperties()
	if string(m.Body) != "poison" || m.MsgId != sent[0].ID || m.GetTags() != "dead" || m.GetKeys() != strings.Join(crossKeys, " ") {
		t.Errorf("dead letter %s (id %s, tag %q, keys %q), want poison (id %s)", m.Body, m.MsgId, m.GetTags(), m.GetKeys(), sent[0].ID)
	}
	for key, value := range crossProperties {
		if props[key] != value {
			t.Errorf("dead letter property %q is %q, want %q", key, props[key], value)
		}
	}
	if props[message.PropertyRetryTopic] != topic || props[message.PropertyDLQOriginTopic] != topic {
		t.Errorf("dead letter from %s names RETRY_TOPIC %q and DLQ_ORIGIN_TOPIC %q", topic, props[message.PropertyRetryTopic], props[message.PropertyDLQOriginTopic])
	}
	if m.ReconsumeTimes < 1 {
		t.Errorf("dead letter after two delivery attempts has %d reconsume times", m.ReconsumeTimes)
	}
}

// pullOne pulls queue 0 of topic from offset 0 until it holds a message.
func pullOne(t *testing.T, c pullClient, topic string) *primitive.MessageExt {
	t.Helper()
	mqs, err := c.GetTopicRouteInfo(topic)
	if err != nil {
		t.Fatal(err)
	}
	q := queueOf(t, mqs, 0)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := c.PullFrom(ctx, q, 0, 4)
		cancel()
		if err == nil && res.Status == primitive.PullFound && len(res.GetMessageExts()) > 0 {
			return res.GetMessageExts()[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("pull %s: %v %v", topic, res, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCrossDeadLetterGoToNode: a message a Go push consumer always fails
// lands in its group's dead-letter topic, which a Node consumer reads with
// the message's id, tag, keys and properties (but for the empty one,
// which the Go client does not send).
func TestCrossDeadLetterGoToNode(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "CrossDlqGoToNode", "cross-dlq-go-group"
	k.createTopic(topic, 1)
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 1, GroupRetryPolicy: shortRetries})
	got := newOrdered()
	k.pushConsumer(group, topic, "*", got.handle(consumer.ConsumeRetryLater), consumer.WithMaxReconsumeTimes(1))
	m := primitive.NewMessage(topic, []byte("poison")).WithTag("dead").WithKeys(crossKeys)
	for key, value := range crossProperties {
		m.WithProperty(key, value)
	}
	id := k.producer().send(m).MsgID
	stored := k.drainQueue(message.DLQTopic(group), 1)[0]
	d := k.nodeReceive(map[string]any{"topic": message.DLQTopic(group), "group": "cross-dlq-node-reader", "count": 1})
	if len(d) != 1 {
		t.Fatalf("%d deliveries of the dead letter, want 1", len(d))
	}
	want := maps.Clone(crossProperties)
	delete(want, "empty")
	if d[0].Body != "poison" || d[0].ID != id || d[0].Tag != "dead" || !slices.Equal(d[0].Keys, crossKeys) ||
		!maps.Equal(d[0].Properties, want) || d[0].Corrupted || stored.ReconsumeTimes < 1 {
		t.Errorf("dead letter of id %s received as %v", id, d[0])
	}
}
