//go:build !race && unix

package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	karmancmd "github.com/karmanmq/karman/cmd/karman/karmancmd"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	"github.com/karmanmq/karman/server"
)

// delivery is one call of a listener for one message.
type delivery struct {
	body     string
	topic    string
	queue    int
	attempts int32 // ReconsumeTimes as the listener saw it
	at       time.Time
}

// journal records deliveries in the order the listener saw them.
type journal struct {
	*received
	mu  sync.Mutex
	log []delivery
}

func newJournal() *journal { return &journal{received: newReceived()} }

func (j *journal) note(msgs ...*primitive.MessageExt) {
	now := time.Now()
	j.mu.Lock()
	for _, m := range msgs {
		j.log = append(j.log, delivery{body: string(m.Body), topic: m.Topic, queue: m.Queue.QueueId, attempts: m.ReconsumeTimes, at: now})
	}
	j.mu.Unlock()
	j.add(msgs...)
}

// of returns the deliveries of body, in order.
func (j *journal) of(body string) []delivery {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []delivery
	for _, d := range j.log {
		if d.body == body {
			out = append(out, d)
		}
	}
	return out
}

// queue returns the bodies delivered from queue q, in order.
func (j *journal) queue(q int) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, d := range j.log {
		if d.queue == q {
			out = append(out, d.body)
		}
	}
	return out
}

// ctxConsumer starts a push consumer whose listener sees the consume
// context.
func (k *karman) ctxConsumer(group, topic string, handle func(context.Context, ...*primitive.MessageExt) consumer.ConsumeResult, opts ...consumer.Option) interface{ Shutdown() error } {
	k.t.Helper()
	opts = append([]consumer.Option{
		consumer.WithNameServer([]string{k.namesrv}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("consumer")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := consumer.NewPushConsumer(opts...)
	if err != nil {
		k.t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			return handle(ctx, msgs...), nil
		})
	if err != nil {
		k.t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		k.t.Fatal(err)
	}
	var once sync.Once
	stop := func() error {
		var err error
		once.Do(func() { err = c.Shutdown() })
		return err
	}
	k.t.Cleanup(func() { stop() })
	return stopper(stop)
}

// adminCLI runs "karman admin ARGS --json" in-process against k's name
// server and decodes its output into out.
func (k *karman) adminCLI(out any, args ...string) {
	k.t.Helper()
	root := karmancmd.New(server.Default)
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(slices.Concat([]string{"admin", "--namesrv", k.namesrv, "--timeout", "10s", "--json"}, args))
	if err := root.ExecuteContext(context.Background()); err != nil {
		k.t.Fatalf("karman admin %v: %v\n%s", args, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		k.t.Fatalf("karman admin %v printed %q: %v", args, stdout.String(), err)
	}
}

// maxOffset returns the max offset of (topic, queue), 0 for a topic that
// does not exist.
func (k *karman) maxOffset(topic string, queue int32) int64 {
	k.t.Helper()
	resp := k.invoke(wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: topic, QueueID: queue, Committed: true}, nil)
	if resp.ResponseCode() == wire.TopicNotExist {
		return 0
	}
	var h wire.OffsetResponseHeader
	if resp.ResponseCode() != wire.Success || resp.DecodeHeader(&h) != nil {
		k.t.Fatalf("max offset of %s/%d: %s %s", topic, queue, resp.ResponseCode(), resp.Remark)
	}
	return h.Offset
}

// An orderly consumer whose listener suspends a message gets it again in
// place, ahead of the rest of its queue, with ReconsumeTimes counted by
// the client; after WithMaxReconsumeTimes(2) redeliveries the client sends
// it back with delay level -1, which dead-letters it at once. Nothing goes
// through the retry topic, and the other queue is not held up.
func TestOrderlySuspendRetriesInPlace(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "OrderlySuspend", "orderly-suspend"
	k.createTopic(topic, 2)
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	j := newJournal()
	k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		j.note(msgs...)
		for _, m := range msgs {
			if string(m.Body) == "a-2" {
				return consumer.SuspendCurrentQueueAMoment
			}
		}
		return consumer.ConsumeSuccess
	}, consumer.WithConsumerOrder(true), consumer.WithMaxReconsumeTimes(2), consumer.WithConsumeMessageBatchMaxSize(1))
	p := k.producer(producer.WithQueueSelector(queueSelector{}))
	sendToQueue(t, p, topic, 0, "", seq("a", 0, 5)...)
	sendToQueue(t, p, topic, 1, "", seq("b", 0, 5)...)

	j.waitFor(t, "both queues", time.Minute, func() bool { return j.count("a-4") == 1 && j.count("b-4") == 1 })
	wantA := []string{"a-0", "a-1", "a-2", "a-2", "a-2", "a-2", "a-3", "a-4"}
	if got := j.queue(0); !slices.Equal(got, wantA) {
		t.Errorf("queue 0 delivered %v, want %v", got, wantA)
	}
	if got, want := j.queue(1), seq("b", 0, 5); !slices.Equal(got, want) {
		t.Errorf("queue 1 delivered %v, want %v", got, want)
	}
	var attempts []int32
	for _, d := range j.of("a-2") {
		attempts = append(attempts, d.attempts)
		if d.topic != topic {
			t.Errorf("a-2 delivered under topic %s", d.topic)
		}
	}
	if want := []int32{0, 1, 2, 3}; !slices.Equal(attempts, want) {
		t.Errorf("a-2 delivered with ReconsumeTimes %v, want %v", attempts, want)
	}
	dead := k.drainQueue(message.DLQTopic(group), 1)
	if string(dead[0].Body) != "a-2" || dead[0].Properties[message.PropertyDLQOriginTopic] != topic {
		t.Errorf("dead letter %s from %q, want a-2 from %s", dead[0].Body, dead[0].Properties[message.PropertyDLQOriginTopic], topic)
	}
	// The broker counts the send-back, not the client's local attempts.
	if dead[0].ReconsumeTimes != 1 {
		t.Errorf("dead letter has ReconsumeTimes %d, want 1", dead[0].ReconsumeTimes)
	}
	if n := k.maxOffset(message.RetryTopic(group), 0); n != 0 {
		t.Errorf("the retry topic holds %d messages, want none", n)
	}
	k.waitCommitted(group, topic, 0, 5)
	k.waitCommitted(group, topic, 1, 5)
}

// A concurrent consumer that sets DelayLevelWhenNextConsume gets a failed
// message back after that level's delay, not the default backoff; after
// WithMaxReconsumeTimes(2) redeliveries it lands in %DLQ%group.
func TestConcurrentRetryDelayLevel(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "RetryLevels", "retry-levels"
	k.createTopic(topic, 2)
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	// Level -1 asks the broker to dead-letter the message at once.
	levels := map[string]int{"level-1": 1, "level-2": 2, "level--1": -1}
	j := newJournal()
	k.ctxConsumer(group, topic, func(ctx context.Context, msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		j.note(msgs...)
		cc, ok := primitive.GetConcurrentlyCtx(ctx)
		if !ok {
			t.Error("no concurrent consume context")
			return consumer.ConsumeSuccess
		}
		if l := levels[string(msgs[0].Body)]; l != 0 {
			cc.DelayLevelWhenNextConsume = l
			return consumer.ConsumeRetryLater
		}
		return consumer.ConsumeSuccess
	}, consumer.WithMaxReconsumeTimes(2), consumer.WithConsumeMessageBatchMaxSize(1))
	p := k.producer()
	for _, b := range []string{"level-1", "level-2", "level--1", "fine"} {
		p.send(primitive.NewMessage(topic, []byte(b)))
	}
	t.Cleanup(func() {
		if t.Failed() {
			j.mu.Lock()
			t.Logf("deliveries: %+v", j.log)
			j.mu.Unlock()
		}
	})
	dead := k.drainQueue(message.DLQTopic(group), 3)
	var deadBodies []string
	for _, m := range dead {
		deadBodies = append(deadBodies, string(m.Body))
		wantTimes := int32(3)
		if string(m.Body) == "level--1" {
			wantTimes = 1
		}
		if m.ReconsumeTimes != wantTimes || m.Properties[message.PropertyDLQOriginTopic] != topic {
			t.Errorf("dead letter %s has ReconsumeTimes %d and origin %q, want %d and %s", m.Body, m.ReconsumeTimes, m.Properties[message.PropertyDLQOriginTopic], wantTimes, topic)
		}
	}
	slices.Sort(deadBodies)
	if want := []string{"level--1", "level-1", "level-2"}; !slices.Equal(deadBodies, want) {
		t.Errorf("dead letters %v, want %v", deadBodies, want)
	}
	delays := map[string]time.Duration{"level-1": time.Second, "level-2": 5 * time.Second}
	for body, delay := range delays {
		ds := j.of(body)
		var attempts []int32
		for i, d := range ds {
			attempts = append(attempts, d.attempts)
			if i == 0 {
				continue
			}
			// The default backoff (level 3 + attempts) would be 10 s or more.
			gap := d.at.Sub(ds[i-1].at)
			if gap < delay-100*time.Millisecond || gap > delay+4*time.Second {
				t.Errorf("%s attempt %d came %s after the previous one, want about %s", body, i, gap, delay)
			}
		}
		if want := []int32{0, 1, 2}; !slices.Equal(attempts, want) {
			t.Errorf("%s delivered with ReconsumeTimes %v, want %v", body, attempts, want)
		}
	}
	for body, want := range map[string]int{"fine": 1, "level--1": 1} {
		if n := j.count(body); n != want {
			t.Errorf("%s delivered %d times, want %d", body, n, want)
		}
	}
}

// Broadcasting consumers keep their offsets in local files: after a clean
// shutdown and a restart under the same instance names, each resumes
// where it stopped and gets only the messages sent in between.
func TestBroadcastingResumesFromLocalOffsets(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "BroadcastRestart", "broadcast-restart"
	k.createTopic(topic, 3)
	names := []string{instance("bcast"), instance("bcast")}
	start := func() ([]*received, []interface{ Shutdown() error }) {
		var rs []*received
		var cs []interface{ Shutdown() error }
		for _, name := range names {
			r := newReceived()
			rs = append(rs, r)
			cs = append(cs, k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
				r.add(msgs...)
				return consumer.ConsumeSuccess
			}, consumer.WithConsumerModel(consumer.BroadCasting), consumer.WithInstance(name)))
		}
		return rs, cs
	}
	p := k.producer()
	sendAll := func(bodies []string) {
		for _, b := range bodies {
			p.send(primitive.NewMessage(topic, []byte(b)))
		}
	}
	first, cs := start()
	old := seq("old", 0, 30)
	sendAll(old)
	for i, r := range first {
		r.waitFor(t, fmt.Sprintf("consumer %d to get the first messages", i), time.Minute, func() bool { return r.distinct() == len(old) })
	}
	for _, c := range cs {
		if err := c.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
	k.waitNoConsumers(group)
	fresh := seq("new", 0, 30)
	sendAll(fresh)
	second, _ := start()
	sendAll([]string{"last"})
	for i, r := range second {
		r.waitFor(t, fmt.Sprintf("restarted consumer %d to get the new messages", i), time.Minute, func() bool {
			return r.distinct() >= len(fresh)+1 && r.count("last") == 1
		})
		got := r.set()
		if want := sorted(fresh, []string{"last"}); !slices.Equal(got, want) {
			t.Errorf("restarted consumer %d got %v, want %v", i, got, want)
		}
		for _, b := range got {
			if n := r.count(b); n != 1 {
				t.Errorf("restarted consumer %d got %s %d times", i, b, n)
			}
		}
	}
	for i, r := range first {
		for _, b := range old {
			if n := r.count(b); n != 1 {
				t.Errorf("consumer %d got %s %d times before the restart", i, b, n)
			}
		}
	}
}

// Every delay level 1..18 is accepted and scheduled for its delay; level
// 0 is an ordinary message and a level above 18 is capped at 18, as the
// Java broker does. Levels 1 and 2 are delivered on time; the longer ones
// are still waiting when the test ends.
func TestAllDelayLevels(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "AllDelayLevels"
	k.createTopic(topic, 1)
	j := newJournal()
	k.pushConsumer("all-delay-levels", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		j.note(msgs...)
		return consumer.ConsumeSuccess
	})
	p := k.producer()
	sent := map[string]time.Time{}
	for level := -1; level <= 19; level++ {
		body := "level-" + strconv.Itoa(level)
		sent[body] = time.Now()
		p.send(primitive.NewMessage(topic, []byte(body)).WithDelayTimeLevel(level))
	}
	j.waitFor(t, "levels -1, 0, 1 and 2", time.Minute, func() bool {
		return j.count("level--1") == 1 && j.count("level-0") == 1 && j.count("level-1") == 1 && j.count("level-2") == 1
	})
	for body, delay := range map[string]time.Duration{"level--1": 0, "level-0": 0, "level-1": time.Second, "level-2": 5 * time.Second} {
		took := j.of(body)[0].at.Sub(sent[body])
		if took < delay || took > delay+3*time.Second {
			t.Errorf("%s arrived after %s, want about %s", body, took, delay)
		}
	}
	// Levels 3.. (and 19) are in the timer topic, due after their delay.
	scheduled := k.drainQueue(message.TopicTimer, 18)
	due := map[string]time.Duration{}
	for _, m := range scheduled {
		out, err := strconv.ParseInt(m.Properties[message.PropertyTimerOutMS], 10, 64)
		if err != nil || m.Properties[message.PropertyRealTopic] != topic {
			t.Fatalf("scheduled %s: TIMER_OUT_MS %q, REAL_TOPIC %q", m.Body, m.Properties[message.PropertyTimerOutMS], m.Properties[message.PropertyRealTopic])
		}
		due[string(m.Body)] = time.UnixMilli(out).Sub(sent[string(m.Body)])
	}
	for _, body := range []string{"level--1", "level-0"} {
		if _, ok := due[body]; ok {
			t.Errorf("%s was scheduled", body)
		}
	}
	for level := 1; level <= 19; level++ {
		body := "level-" + strconv.Itoa(level)
		want := engine.DefaultDelayLevels[min(level, 18)-1]
		if d, ok := due[body]; !ok || d < want || d > want+3*time.Second {
			t.Errorf("%s scheduled %s after it was sent (found %v), want %s", body, d, ok, want)
		}
	}
	// Level 3 is due 10 s after it was sent; nothing later comes with it.
	j.waitFor(t, "level 3", time.Minute, func() bool { return j.count("level-3") == 1 })
	if took := j.of("level-3")[0].at.Sub(sent["level-3"]); took < 10*time.Second {
		t.Errorf("level-3 arrived after %s, before its 10s delay", took)
	}
	if n := j.distinct(); n != 5 {
		t.Errorf("%d messages delivered, want levels -1 to 3 only: %v", n, j.set())
	}
}

// "karman admin offset reset" while a consumer of the group is online:
// the broker resets the offsets and tells the consumer, which consumes
// again from there; "group describe" shows the consumer and the lag the
// broker's offsets give.
func TestAdminResetOffsetOnline(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "ResetOnline", "reset-online"
	k.createTopic(topic, 2)
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	got := newReceived()
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		if string(msgs[0].Body) == "held" {
			<-hold
		}
		return consumer.ConsumeSuccess
	}, consumer.WithConsumeMessageBatchMaxSize(1))
	p := k.producer()
	early, late := seq("early", 0, 10), seq("late", 0, 10)
	var lastEarly int64
	for _, b := range early {
		p.send(primitive.NewMessage(topic, []byte(b)))
	}
	got.waitFor(t, "the early messages", time.Minute, func() bool { return got.distinct() == len(early) })
	got.mu.Lock()
	for _, m := range got.msgs {
		lastEarly = max(lastEarly, m.StoreTimestamp)
	}
	got.mu.Unlock()
	// The reset time must be later than every early message's store time.
	pollUntil(t, "the clock to pass the last early message", 5*time.Second, func() bool { return time.Now().UnixMilli() > lastEarly })
	resetTo := time.Now().UnixMilli()
	pollUntil(t, "the clock to pass the reset time", 5*time.Second, func() bool { return time.Now().UnixMilli() > resetTo })
	lateOffsets := map[int32]int64{}
	for _, b := range late {
		res := p.send(primitive.NewMessage(topic, []byte(b)))
		if _, ok := lateOffsets[int32(res.MessageQueue.QueueId)]; !ok {
			lateOffsets[int32(res.MessageQueue.QueueId)] = res.QueueOffset
		}
	}
	got.waitFor(t, "the late messages", time.Minute, func() bool { return got.distinct() == len(early)+len(late) })
	ends := k.queueEnds(topic, 2)
	pollUntil(t, "the consumer to commit everything", 30*time.Second, func() bool { return k.committedAt(group, topic, ends) })

	var reset admin.OffsetReset
	k.adminCLI(&reset, "offset", "reset", group, topic, "--to-time", strconv.FormatInt(resetTo, 10))
	if len(reset.Offsets) != 2 {
		t.Fatalf("reset moved %d queues, want 2: %+v", len(reset.Offsets), reset)
	}
	for _, o := range reset.Offsets {
		want, ok := lateOffsets[o.QueueID]
		if !ok {
			want = ends[o.QueueID]
		}
		if o.Offset != want || o.Via != admin.ViaBroker {
			t.Errorf("queue %d reset to %d via %s, want %d via the broker", o.QueueID, o.Offset, o.Via, want)
		}
	}
	got.waitFor(t, "the late messages again", 40*time.Second, func() bool {
		for _, b := range late {
			if got.count(b) < 2 {
				return false
			}
		}
		return true
	})
	for _, b := range early {
		if n := got.count(b); n != 1 {
			t.Errorf("%s consumed %d times, want once", b, n)
		}
	}
	pollUntil(t, "the consumer to commit everything again", 30*time.Second, func() bool { return k.committedAt(group, topic, ends) })
	for _, b := range late {
		if n := got.count(b); n != 2 {
			t.Errorf("%s consumed %d times, want twice", b, n)
		}
	}

	// Lag for describe to show: the listener holds one message, so its
	// queue's committed offset stays there while later messages arrive.
	held := p.send(primitive.NewMessage(topic, []byte("held")))
	heldQ := int32(held.MessageQueue.QueueId)
	for _, b := range seq("after", 0, 6) {
		p.send(primitive.NewMessage(topic, []byte(b)))
	}
	got.waitFor(t, "the held message and those after it", time.Minute, func() bool { return got.distinct() == len(early)+len(late)+7 })
	ends = k.queueEnds(topic, 2)
	want := slices.Clone(ends)
	want[heldQ] = held.QueueOffset
	if ends[heldQ] == held.QueueOffset+1 {
		t.Fatalf("no message went to queue %d after the held one", heldQ)
	}
	pollUntil(t, "the consumer to commit up to the held message", 30*time.Second, func() bool { return k.committedAt(group, topic, want) })
	var d admin.GroupDescription
	k.adminCLI(&d, "group", "describe", group)
	if !d.Online || len(d.Members) != 1 || d.Members[0].Language != "GO" {
		t.Errorf("describe shows online %v, members %+v; want one Go consumer", d.Online, d.Members)
	}
	if len(d.Subscriptions) == 0 || !slices.ContainsFunc(d.Subscriptions, func(s admin.Subscription) bool { return s.Topic == topic }) {
		t.Errorf("describe shows subscriptions %+v, want %s", d.Subscriptions, topic)
	}
	var total int64
	queues := 0
	for _, q := range d.Queues {
		if q.Topic != topic {
			continue
		}
		queues++
		committed := k.committedOffset(group, topic, q.QueueID)
		if q.BrokerOffset != ends[q.QueueID] || q.ConsumerOffset != committed || q.Lag != ends[q.QueueID]-committed {
			t.Errorf("describe shows queue %d at %d/%d lag %d; the broker has %d/%d", q.QueueID, q.ConsumerOffset, q.BrokerOffset, q.Lag, committed, ends[q.QueueID])
		}
		total += q.Lag
	}
	if lag := ends[heldQ] - held.QueueOffset; total != lag {
		t.Errorf("describe shows a lag of %d, want %d (queue %d held at %d of %d)", total, lag, heldQ, held.QueueOffset, ends[heldQ])
	}
	if queues != 2 || d.TotalLag != total {
		t.Errorf("describe shows %d queues of %s and total lag %d (queues add up to %d)", queues, topic, d.TotalLag, total)
	}
}

// "karman admin dlq resend" puts a dead letter back on its topic, where
// the group consumes it again.
func TestAdminResendDeadLetter(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "ResendDLQ", "resend-dlq"
	k.createTopic(topic, 2)
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	j := newJournal()
	var failed sync.Once
	k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		j.note(msgs...)
		res := consumer.ConsumeSuccess
		if string(msgs[0].Body) == "doomed" {
			failed.Do(func() { res = consumer.ConsumeRetryLater })
		}
		return res
	}, consumer.WithMaxReconsumeTimes(0), consumer.WithConsumeMessageBatchMaxSize(1))
	p := k.producer()
	sent := p.send(primitive.NewMessage(topic, []byte("doomed")).WithKeys([]string{"doomed-key"}))
	dead := k.drainQueue(message.DLQTopic(group), 1)[0]
	if string(dead.Body) != "doomed" || dead.UniqKey() != sent.MsgID {
		t.Fatalf("dead letter %s with id %s, want doomed with id %s", dead.Body, dead.UniqKey(), sent.MsgID)
	}
	// By the dead letter's offset message id, as "message query" on the
	// dead-letter topic shows it.
	var r admin.Resend
	k.adminCLI(&r, "dlq", "resend", group, message.OffsetID(dead.StoreHost, dead.CommitLogOffset))
	if r.Topic != topic {
		t.Errorf("resent to %s, want %s", r.Topic, topic)
	}
	j.waitFor(t, "the resent message", time.Minute, func() bool { return j.count("doomed") == 2 })
	again := j.of("doomed")[1]
	if again.topic != topic {
		t.Errorf("resent message delivered under %s, want %s", again.topic, topic)
	}
	j.mu.Lock()
	m := j.msgs[len(j.msgs)-1]
	j.mu.Unlock()
	if m.GetKeys() != "doomed-key" {
		t.Errorf("resent message has keys %q, want doomed-key", m.GetKeys())
	}
	p.send(primitive.NewMessage(topic, []byte("last")))
	j.waitFor(t, "the last message", time.Minute, func() bool { return j.count("last") == 1 })
	if n := j.count("doomed"); n != 2 {
		t.Errorf("doomed consumed %d times, want twice", n)
	}
	if n := k.maxOffset(message.DLQTopic(group), 0); n != 1 {
		t.Errorf("the dead-letter queue holds %d messages after the resend, want 1", n)
	}
}

// blockingChecker is a transaction listener that leaves every transaction
// open and, when asked about one, reports it on checked and then waits for
// release before answering "unknown".
type blockingChecker struct {
	checked chan string
	release chan struct{}
}

func (b *blockingChecker) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnkonwnState
}

func (b *blockingChecker) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	select {
	case b.checked <- string(m.Body):
	default:
	}
	<-b.release
	return primitive.UnkonwnState
}

// A transaction check sent to a producer that shuts down without
// answering is asked again of another producer of the group, whose answer
// settles it.
func TestTransactionCheckProducerLeaves(t *testing.T) {
	t.Parallel()
	k := startKarman(t, "--transaction-timeout", "300ms", "--transaction-check-interval", "300ms", "--transaction-check-max", "60")
	const topic, group = "TxnHandOver", "txn-hand-over"
	k.createTopic(topic, 2)
	got := newReceived()
	k.pushConsumer("txn-hand-over-consumer", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	startTxn := func(l primitive.TransactionListener) interface {
		SendMessageInTransaction(context.Context, *primitive.Message) (*primitive.TransactionSendResult, error)
		Shutdown() error
	} {
		tp, err := producer.NewTransactionProducer(l, producer.WithNameServer([]string{k.namesrv}),
			producer.WithGroupName(group), producer.WithInstanceName(instance("txn")), producer.WithRetry(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.Start(); err != nil {
			t.Fatal(err)
		}
		return tp
	}
	first := &blockingChecker{checked: make(chan string, 1), release: make(chan struct{})}
	a := startTxn(first)
	var once sync.Once
	stopA := func() { once.Do(func() { close(first.release); a.Shutdown() }) }
	t.Cleanup(stopA)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	res, err := a.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte("unknown-commit")))
	cancel()
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send: %v %v", res, err)
	}
	select {
	case <-first.checked:
	case <-time.After(30 * time.Second):
		t.Fatal("the first producer was never asked about its transaction")
	}
	second := &localTransactions{checks: map[string]int{}}
	b := startTxn(second)
	t.Cleanup(func() { b.Shutdown() })
	// A producer heartbeats only to brokers it has a route to: b sends
	// first, so that its heartbeat reaches the broker.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	res, err = b.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte("commit")))
	cancel()
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send: %v %v", res, err)
	}
	k.waitProducers(group, 2)
	shutDown := make(chan struct{})
	go func() { stopA(); close(shutDown) }()
	select {
	case <-shutDown:
	case <-time.After(30 * time.Second):
		t.Fatal("the first producer did not shut down")
	}
	got.waitFor(t, "the transaction committed by the second producer", 30*time.Second, func() bool { return got.count("unknown-commit") == 1 })
	if second.checked("unknown-commit") == 0 {
		t.Error("the second producer was never asked")
	}
	k.producer().send(primitive.NewMessage(topic, []byte("last")))
	got.waitFor(t, "the last message", time.Minute, func() bool { return got.count("last") == 1 })
	for _, body := range []string{"unknown-commit", "commit"} {
		if n := got.count(body); n != 1 {
			t.Errorf("%s delivered %d times, want once", body, n)
		}
	}
}

// producers returns the client ids of the live producers of group
// (GET_PRODUCER_CONNECTION_LIST); none when the broker knows none.
func (k *karman) producers(group string) []string {
	k.t.Helper()
	resp := k.invoke(wire.GetProducerConnectionList, &wire.GetProducerConnectionListRequestHeader{ProducerGroup: group}, nil)
	if resp.ResponseCode() != wire.Success {
		return nil
	}
	var pc broker.ProducerConnection
	if err := json.Unmarshal(resp.Body, &pc); err != nil {
		k.t.Fatalf("producer connections of %s: %v", group, err)
	}
	var ids []string
	for _, c := range pc.ConnectionSet {
		ids = append(ids, c.ClientID)
	}
	return ids
}

// waitProducers waits until the broker lists n live producers of group:
// they heartbeat on their own schedule.
func (k *karman) waitProducers(group string, n int) {
	k.t.Helper()
	pollUntil(k.t, fmt.Sprintf("%d producers of %s", n, group), 45*time.Second, func() bool { return len(k.producers(group)) == n })
}
