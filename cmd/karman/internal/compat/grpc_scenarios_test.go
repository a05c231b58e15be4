//go:build !race && unix

package compat

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/karmanmq/karman/protocol/remoting/broker"
)

// Scenarios of the Node.js client the other gRPC tests leave out: several
// simple consumers of a group at once, a consumer of two topics, refusals
// of unknown topics and groups, unusual messages, restarted clients and
// FIFO simple consumers.

// subscription is one topic a crowd.js consumer subscribes to.
type subscription struct {
	Topic      string `json:"topic"`
	Expression string `json:"expression,omitempty"`
	SQL        bool   `json:"sql,omitempty"`
}

// crowdDelivery is one message as one of crowd.js's consumers got it.
type crowdDelivery struct {
	nodeMessage
	Batch   int    `json:"batch"`
	AckedAt int64  `json:"ackedAt"`
	Ack     string `json:"ack"`
}

// crowdReceive is one receive of crowd.js.
type crowdReceive struct {
	Consumer  int      `json:"consumer"`
	Topics    []string `json:"topics"`
	BatchSize int      `json:"batchSize"`
	Got       int      `json:"got"`
}

// crowdResult is what crowd.js returns.
type crowdResult struct {
	Deliveries []crowdDelivery `json:"deliveries"`
	Receives   []crowdReceive  `json:"receives"`
}

// nodeCrowd runs crowd.js: consumers of group, one per batch size, all
// subscribed to subs, until count distinct bodies were acknowledged.
func (k *karman) nodeCrowd(group string, subs []subscription, batches []int, count int, extra map[string]any) crowdResult {
	k.t.Helper()
	params := map[string]any{"group": group, "subscriptions": subs, "batches": batches, "count": count}
	for key, v := range extra {
		params[key] = v
	}
	var res crowdResult
	k.node("crowd", params, &res)
	return res
}

// checkAckedOnce fails the test unless res shows every body of want
// delivered exactly once, on its first attempt, with the id it was sent
// with, and acknowledged by that one ack; and nothing else delivered.
func checkAckedOnce(t *testing.T, want []outMessage, sent []sentMessage, res crowdResult) {
	t.Helper()
	got := map[string][]crowdDelivery{}
	for _, d := range res.Deliveries {
		got[d.Body] = append(got[d.Body], d)
	}
	for i, w := range want {
		ds := got[w.body()]
		delete(got, w.body())
		if len(ds) != 1 {
			var who []int
			for _, d := range ds {
				who = append(who, d.Consumer)
			}
			t.Errorf("%s delivered %d times (to consumers %v), want once", w.body(), len(ds), who)
			continue
		}
		d := ds[0]
		if d.ID != sent[i].ID || d.Attempt != 1 || d.Corrupted || d.Ack != "ok" {
			t.Errorf("%s (id %s) delivered as %v, acknowledged: %s", w.body(), sent[i].ID, d.nodeMessage, d.Ack)
		}
	}
	for body, ds := range got {
		t.Errorf("%s delivered %d times, but it was not to be", body, len(ds))
	}
}

// TestGRPCScenarioCrowd: four simple consumers of one group, two receiving
// 32 messages at a time and two one at a time, each holding what it got
// for a while, share a topic's messages: each is handed to one of them
// only, once, and acknowledged once.
func TestGRPCScenarioCrowd(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, n = "GrpcCrowd", "grpc-crowd", 200
	k.createTypedTopic(topic, 4, "NORMAL")
	var out []outMessage
	for i := range n {
		out = append(out, outMessage{Body: "crowd-" + strconv.Itoa(i), Tag: "crowd"})
	}
	sent := k.nodeSend(topic, out)
	batches := []int{32, 1, 32, 1}
	res := k.nodeCrowd(group, []subscription{{Topic: topic}}, batches, n, map[string]any{"holdMs": 50})
	checkAckedOnce(t, out, sent, res)
	per := make([]int, len(batches))
	for _, r := range res.Receives {
		if r.Got > r.BatchSize {
			t.Errorf("consumer %d asked for %d messages and got %d", r.Consumer, r.BatchSize, r.Got)
		}
		per[r.Consumer] += r.Got
	}
	t.Logf("messages per consumer: %v", per)
	for c, got := range per {
		if got == 0 {
			t.Errorf("consumer %d (batch %d) got nothing", c, batches[c])
		}
	}
}

// TestGRPCScenarioTwoTopics: one simple consumer subscribed to two topics
// at once, with a tag filter on one and an SQL92 filter on the other,
// receives exactly the messages each filter selects, from either topic.
func TestGRPCScenarioTwoTopics(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const byTag, bySQL, group = "GrpcTwoTopicsTag", "GrpcTwoTopicsSQL", "grpc-two-topics"
	k.createTypedTopic(byTag, 1, "NORMAL")
	k.createTypedTopic(bySQL, 1, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	var tagOut, sqlOut, want []outMessage
	for i := range 30 {
		tag := []string{"red", "green", "blue"}[i%3]
		m := outMessage{Body: "tagged-" + strconv.Itoa(i), Tag: tag, Properties: map[string]string{"price": strconv.Itoa(i)}}
		tagOut = append(tagOut, m)
		if tag == "red" {
			want = append(want, m)
		}
		// The same tags and prices on the other topic: its filter selects
		// by price, whatever the tag.
		s := outMessage{Body: "priced-" + strconv.Itoa(i), Tag: tag, Properties: map[string]string{"price": strconv.Itoa(i)}}
		sqlOut = append(sqlOut, s)
		if i >= 20 {
			want = append(want, s)
		}
	}
	// Each topic has one queue and ends with a message its filter selects:
	// once both arrived, every other message was delivered or filtered out.
	tagLast := outMessage{Body: "tagged-last", Tag: "red"}
	sqlLast := outMessage{Body: "priced-last", Tag: "green", Properties: map[string]string{"price": "100"}}
	tagOut, sqlOut = append(tagOut, tagLast), append(sqlOut, sqlLast)
	want = append(want, tagLast, sqlLast)
	sent := map[string]sentMessage{}
	for _, s := range slices.Concat(k.nodeSend(byTag, tagOut), k.nodeSend(bySQL, sqlOut)) {
		sent[s.Body] = s
	}
	var wantSent []sentMessage
	for _, w := range want {
		wantSent = append(wantSent, sent[w.Body])
	}
	subs := []subscription{{Topic: byTag, Expression: "red"}, {Topic: bySQL, Expression: "price >= 20", SQL: true}}
	res := k.nodeCrowd(group, subs, []int{32}, len(want), nil)
	checkAckedOnce(t, want, wantSent, res)
	for _, d := range res.Deliveries {
		if want := map[bool]string{true: byTag, false: bySQL}[strings.HasPrefix(d.Body, "tagged-")]; d.Topic != want {
			t.Errorf("%s delivered as a message of %s, want %s", d.Body, d.Topic, want)
		}
	}
	var topics []string
	for _, r := range res.Receives {
		topics = append(topics, r.Topics...)
	}
	if !slices.Contains(topics, byTag) || !slices.Contains(topics, bySQL) {
		t.Errorf("receives got messages of %v, want both topics", topics)
	}
}

// clientError is a Node client error as startup.js describes it.
type clientError struct {
	Message string       `json:"message"`
	Code    *int         `json:"code"`
	Cause   *clientError `json:"cause"`
}

// code returns the status code of the error or of its first cause that
// has one, 0 for none.
func (e *clientError) code() int {
	for ; e != nil; e = e.Cause {
		if e.Code != nil {
			return *e.Code
		}
	}
	return 0
}

func (e *clientError) String() string {
	if e == nil {
		return "<nil>"
	}
	if e.Cause != nil {
		return e.Message + " (cause: " + e.Cause.String() + ")"
	}
	return e.Message
}

// startupResult is what startup.js returns.
type startupResult struct {
	Started   bool         `json:"started"`
	StartupMs int64        `json:"startupMs"`
	Error     *clientError `json:"error"`
	Outcomes  []struct {
		Topic  string       `json:"topic"`
		OK     bool         `json:"ok"`
		Got    int          `json:"got"`
		Topics []string     `json:"topics"`
		Error  *clientError `json:"error"`
	} `json:"outcomes"`
}

// Status codes of RocketMQ 5 the scenarios expect.
const (
	codeTopicNotFound = 40402
	codeGroupNotFound = 40403
)

// checkRefused fails the test unless e is an error with status code code
// whose message names what was not found.
func checkRefused(t *testing.T, what string, e *clientError, code int, name string) {
	t.Helper()
	if e.code() != code || !strings.Contains(e.String(), name) {
		t.Errorf("%s: error %s, want status code %d naming %s", what, e, code, name)
	}
}

// TestGRPCScenarioUnknown: with auto-creation of topics and groups off,
// clients naming a topic or a consumer group the server does not know
// get TOPIC_NOT_FOUND and CONSUMER_GROUP_NOT_FOUND, naming them, as from
// RocketMQ's proxy: a producer or consumer of only unknown topics, or of
// an unknown group, fails to start; one that also has a known topic
// starts (the client goes on with the routes it got) and is refused the
// unknown one when it uses it.
func TestGRPCScenarioUnknown(t *testing.T) {
	t.Parallel()
	k := startKarman(t, "--auto-create-topics=false", "--auto-create-groups=false")
	const known, missing, group, noGroup = "GrpcKnown", "GrpcMissing", "grpc-known", "grpc-missing"
	k.createTypedTopic(known, 1, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	scenarios := map[string]map[string]any{
		"producer of an unknown topic":      {"kind": "producer", "topics": []string{missing}},
		"producer sending to unknown topic": {"kind": "producer", "topics": []string{}, "sendTo": []string{missing}},
		"producer of two topics":            {"kind": "producer", "topics": []string{known, missing}, "sendTo": []string{known, missing}},
		"consumer of an unknown group":      {"kind": "simple", "group": noGroup, "subscriptions": []subscription{{Topic: known}}},
		"consumer of an unknown group, two topics": {"kind": "simple", "group": noGroup,
			"subscriptions": []subscription{{Topic: known}, {Topic: missing}}},
		"consumer of an unknown topic": {"kind": "simple", "group": group, "subscriptions": []subscription{{Topic: missing}}},
		"consumer of two topics": {"kind": "simple", "group": group, "subscriptions": []subscription{{Topic: known}, {Topic: missing}},
			"receives": 2},
	}
	scripts := map[string]*nodeScript{}
	for name, params := range scenarios {
		scripts[name] = k.startNode("startup", params)
	}
	results := map[string]startupResult{}
	for name, s := range scripts {
		var res startupResult
		s.wait(&res)
		results[name] = res
		t.Logf("%s: %+v", name, res)
	}

	res := results["producer of an unknown topic"]
	if res.Started {
		t.Errorf("a producer of only an unknown topic started")
	} else {
		checkRefused(t, "producer of an unknown topic", res.Error, codeTopicNotFound, missing)
	}

	res = results["producer sending to unknown topic"]
	if !res.Started || len(res.Outcomes) != 1 || res.Outcomes[0].OK {
		t.Errorf("producer without topics sending to an unknown one: %+v", res)
	} else {
		checkRefused(t, "send to an unknown topic", res.Outcomes[0].Error, codeTopicNotFound, missing)
	}

	res = results["producer of two topics"]
	if !res.Started || len(res.Outcomes) != 2 || !res.Outcomes[0].OK || res.Outcomes[1].OK {
		t.Errorf("producer of a known and an unknown topic: started %v, error %s, outcomes %+v", res.Started, res.Error, res.Outcomes)
	} else {
		checkRefused(t, "send to an unknown topic", res.Outcomes[1].Error, codeTopicNotFound, missing)
	}

	for _, name := range []string{"consumer of an unknown group", "consumer of an unknown group, two topics"} {
		res = results[name]
		if res.Started {
			t.Errorf("%s started", name)
		} else {
			checkRefused(t, name, res.Error, codeGroupNotFound, noGroup)
		}
	}

	// The consumer takes its topics in turn: one receive is refused.
	res = results["consumer of two topics"]
	var refused []*clientError
	for _, o := range res.Outcomes {
		if !o.OK {
			refused = append(refused, o.Error)
		}
	}
	if !res.Started || len(res.Outcomes) != 2 || len(refused) != 1 {
		t.Errorf("consumer of a known and an unknown topic: started %v, error %s, outcomes %+v", res.Started, res.Error, res.Outcomes)
	} else {
		checkRefused(t, "receive from an unknown topic", refused[0], codeTopicNotFound, missing)
	}

	res = results["consumer of an unknown topic"]
	if res.Started {
		t.Errorf("a consumer of only an unknown topic started")
	} else {
		checkRefused(t, "consumer of an unknown topic", res.Error, codeTopicNotFound, missing)
	}
}

// tryResult is trysend.js's receipt or error for one message.
type tryResult struct {
	sentMessage
	Error *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Code    *int   `json:"code"`
	} `json:"error"`
}

// nodeTrySend sends msgs in order with a Node producer, going on after
// refused ones, and returns what became of each.
func (k *karman) nodeTrySend(topic string, msgs []outMessage) []tryResult {
	k.t.Helper()
	var res struct {
		Sent []tryResult `json:"sent"`
	}
	k.node("trysend", map[string]any{"topic": topic, "messages": msgs}, &res)
	if len(res.Sent) != len(msgs) {
		k.t.Fatalf("trysend.js tried %d messages, want %d", len(res.Sent), len(msgs))
	}
	return res.Sent
}

// codeBodyEmpty is MESSAGE_BODY_EMPTY.
const codeBodyEmpty = 41302

// TestGRPCScenarioUnusualMessages: a message with many user properties,
// one with several keys and one with an empty body reach a consumer as
// they were sent, or are refused as RocketMQ's proxy refuses them; a
// message group on a NORMAL topic and a delivery time on a FIFO topic are
// refused by the client itself (the route says which types the topic
// takes), as is a message with both a group and a delivery time.
func TestGRPCScenarioUnusualMessages(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const normal, fifo, group = "GrpcUnusual", "GrpcUnusualFifo", "grpc-unusual"
	k.createTypedTopic(normal, 1, "NORMAL")
	k.createTypedTopic(fifo, 1, "FIFO")
	many := map[string]string{}
	for i := range 64 {
		many["prop-"+strconv.Itoa(i)] = "värde " + strconv.Itoa(i) + " ✓ " + strings.Repeat("x", i)
	}
	out := []outMessage{
		{Body: "many-properties", Tag: "unusual", Properties: many},
		{Body: "several-keys", Keys: []string{"order-1", "customer-7", "region-eu"}},
		{Body: "", Tag: "empty"},
		{Body: "grouped-on-normal", Group: "g1"},
		{Body: "unusual-last", Tag: "unusual"},
	}
	res := k.nodeTrySend(normal, out)
	fifoRes := k.nodeTrySend(fifo, []outMessage{
		{Body: "delayed-on-fifo", DelayMs: 1000},
		{Body: "grouped-and-delayed", Group: "g1", DelayMs: 1000},
		{Body: "fifo-ok", Group: "g1"},
	})

	// refused checks that r was refused: by the server with code, or by
	// the client itself (code 0).
	refused := func(r tryResult, code int) {
		t.Helper()
		switch {
		case r.Error == nil:
			t.Errorf("%q was sent (id %s), want it refused", r.Body, r.ID)
		case code == 0 && r.Error.Code != nil:
			t.Errorf("%q: %s %s (code %v), want the client to refuse it", r.Body, r.Error.Name, r.Error.Message, r.Error.Code)
		case code != 0 && (r.Error.Code == nil || *r.Error.Code != code):
			t.Errorf("%q: %s %s (code %v), want status code %d", r.Body, r.Error.Name, r.Error.Message, r.Error.Code, code)
		default:
			t.Logf("%q refused: %s", r.Body, r.Error.Message)
		}
	}
	refused(res[2], codeBodyEmpty)
	refused(res[3], 0)
	refused(fifoRes[0], 0)
	refused(fifoRes[1], 0)
	if fifoRes[2].Error != nil {
		t.Errorf("a FIFO message after refused ones: %+v", fifoRes[2].Error)
	}

	var want []outMessage
	var sent []sentMessage
	for i, r := range res {
		if r.Error == nil {
			want, sent = append(want, out[i]), append(sent, r.sentMessage)
		}
	}
	for _, i := range []int{0, 1, 4} {
		if res[i].Error != nil {
			t.Errorf("%q refused: %+v", res[i].Body, res[i].Error)
		}
	}
	got := k.nodeReceive(map[string]any{"topic": normal, "group": group, "until": "unusual-last"})
	checkDelivered(t, normal, want, sent, got)
	if n := k.storedWithin(fifo, 0); n != 1 {
		t.Errorf("%s holds %d messages, want 1", fifo, n)
	}
}

// TestGRPCScenarioRestart: producers and consumers restarted against the
// same server, each time with a new client id. The messages a consumer
// received and left unacknowledged before it shut down, or before its
// process died, come back to the next consumer of the group once their
// invisible time is over (not before), with attempt 2; acknowledged ones
// never come back.
func TestGRPCScenarioRestart(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, invisible = "GrpcRestart", "grpc-restart", 20000
	k.createTypedTopic(topic, 2, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16})
	first := []outMessage{{Body: "ack-1"}, {Body: "ack-2"}, {Body: "left-1"}, {Body: "left-2"}}
	sent := k.nodeSend(topic, first)
	type leased struct {
		nodeMessage
		LeaseFrom int64 `json:"leaseFrom"`
	}
	var gone struct {
		Received []leased `json:"received"`
	}
	k.node("abandon", map[string]any{"topic": topic, "group": group, "count": len(first),
		"ack": []string{"ack-1", "ack-2"}, "invisibleMs": invisible}, &gone)
	crashOut := []outMessage{{Body: "crash-ack"}, {Body: "crash-left"}}
	sent = append(sent, k.nodeSend(topic, crashOut)...) // a second producer
	var crashed struct {
		Received []leased `json:"received"`
	}
	k.node("abandon", map[string]any{"topic": topic, "group": group, "count": len(crashOut),
		"ack": []string{"crash-ack"}, "invisibleMs": invisible, "crash": true}, &crashed)
	last := []outMessage{{Body: "after-restart"}}
	sent = append(sent, k.nodeSend(topic, last)...)

	leaseEnd := map[string]int64{}
	for _, r := range slices.Concat(gone.Received, crashed.Received) {
		if r.Attempt != 1 {
			t.Errorf("before the restart, %v", r.nodeMessage)
		}
		leaseEnd[r.Body] = r.LeaseFrom + invisible
	}
	got := k.nodeReceive(map[string]any{"topic": topic, "group": group, "count": 4})
	ids := map[string]string{}
	for _, s := range sent {
		ids[s.Body] = s.ID
	}
	want := map[string]int{"left-1": 2, "left-2": 2, "crash-left": 2, "after-restart": 1}
	seen := map[string]int{}
	for _, m := range got {
		seen[m.Body]++
		if a, ok := want[m.Body]; !ok || m.Attempt != a || m.ID != ids[m.Body] {
			t.Errorf("after the restart, %v; want %v", m, want)
		}
		if early := leaseEnd[m.Body] - m.ReceivedAt; m.Attempt > 1 && early > 0 {
			t.Errorf("%s came back %d ms before its invisible time ended", m.Body, early)
		}
	}
	for body := range want {
		if seen[body] != 1 {
			t.Errorf("after the restart, %s delivered %d times, want once", body, seen[body])
		}
	}
}

// TestGRPCScenarioFIFOSimple: simple consumers of a FIFO group get one
// message of a message group at a time: the next only once the one before
// is acknowledged; a message whose invisible duration is cut comes back
// (attempt 2) before anything after it.
func TestGRPCScenarioFIFOSimple(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, change = "GrpcFifoSimple", "grpc-fifo-simple", 1000
	k.createTypedTopic(topic, 1, "FIFO")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeMessageOrderly: true, RetryMaxTimes: 16})
	k.nodeSend(topic, []outMessage{{Body: "a0", Group: "A"}, {Body: "b0", Group: "B"}, {Body: "a1", Group: "A"},
		{Body: "b1", Group: "B"}, {Body: "a2", Group: "A"}})
	var res struct {
		Steps []struct {
			Step     int           `json:"step"`
			Consumer int           `json:"consumer"`
			At       int64         `json:"at"`
			Got      []nodeMessage `json:"got"`
		} `json:"steps"`
		ChangedAt int64 `json:"changedAt"`
	}
	k.node("fifosimple", map[string]any{"topic": topic, "group": group, "changeMs": change}, &res)
	got := map[int][]string{} // per step: body#attempt in order
	for _, s := range res.Steps {
		for _, m := range s.Got {
			got[s.Step] = append(got[s.Step], m.Body+"#"+strconv.Itoa(m.Attempt))
			if m.Body == "a0" && m.Attempt == 2 && m.ReceivedAt < res.ChangedAt+change {
				t.Errorf("a0 came back %d ms after its invisible duration was cut to %d ms", m.ReceivedAt-res.ChangedAt, change)
			}
		}
	}
	want := map[int][]string{
		1: {"a0#1", "b0#1"},
		3: {"b1#1"},
		4: {"a0#2"},
		5: {"a1#1", "a2#1"},
	}
	for step := 1; step <= 5; step++ {
		g, w := got[step], want[step]
		if step == 1 {
			slices.Sort(g)
		}
		if !slices.Equal(g, w) {
			t.Errorf("step %d received %v, want %v", step, g, w)
		}
	}
}
