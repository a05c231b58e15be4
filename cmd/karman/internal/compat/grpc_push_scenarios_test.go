//go:build !race && unix

package compat

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/broker"
)

// Scenarios of the Node.js client's PushConsumer, transactions and delayed
// messages beyond the basic ones: consumers joining and leaving while a
// producer sends, FIFO order across failures, the retry policy a group's
// consumers are told and the one they get, many transactions at once and
// a restarted transaction producer, many delayed and recalled messages,
// and tag and SQL92 subscriptions of push consumers.

// codeOK is the status code of a successful call.
const codeOK = 20000

// pushDelivery is one message as pushwatch.js's or pushcrowd.js's
// listener got it.
type pushDelivery struct {
	nodeMessage
	Result string `json:"result"`
}

// pushSettings is what pushwatch.js's consumers learnt from the server's
// settings: FIFO, and the retry policy's max attempts and delays (in the
// policy's unit, whole seconds).
type pushSettings struct {
	Consumer    int     `json:"consumer"`
	FIFO        bool    `json:"fifo"`
	MaxAttempts int     `json:"maxAttempts"`
	Delays      []int64 `json:"delays"`
}

// pushCall is a nack or a dead-letter forward pushwatch.js's consumers
// sent, and the status code they got.
type pushCall struct {
	Consumer    int    `json:"consumer"`
	ID          string `json:"id"`
	At          int64  `json:"at"`
	MS          int64  `json:"ms"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"maxAttempts"`
	Code        int    `json:"code"`
}

// pushWatchResult is what pushwatch.js returns.
type pushWatchResult struct {
	Deliveries []pushDelivery `json:"deliveries"`
	Settings   []pushSettings `json:"settings"`
	Nacks      []pushCall     `json:"nacks"`
	Forwards   []pushCall     `json:"forwards"`
}

// byBody groups deliveries by body, keeping their order.
func byBody(ds []pushDelivery) map[string][]pushDelivery {
	out := map[string][]pushDelivery{}
	for _, d := range ds {
		out[d.Body] = append(out[d.Body], d)
	}
	return out
}

func pushAttempts(ds []pushDelivery) []int {
	var out []int
	for _, d := range ds {
		out = append(out, d.Attempt)
	}
	return out
}

// TestGRPCPushCrowd: three push consumers of a group on a topic of four
// queues start one after another while a producer sends, and the second
// stops midway (a graceful shutdown): every message is consumed exactly
// once, on its first attempt; none by the stopped consumer after it
// stopped. Every QueryAssignment is answered with the same assignment,
// the whole topic on this server (queue -1, as RocketMQ's proxy assigns
// groups that are not FIFO), before and after consumers join and leave.
func TestGRPCPushCrowd(t *testing.T) {
	t.Parallel()
	testGRPCPushCrowd(t, 0)
}

// TestGRPCPushCrowdFailures: the same, with the listener failing the
// first delivery of every seventh message: those are consumed twice
// (attempts 1 and 2), by whichever consumer gets them back, also when the
// one that failed them has stopped since; the others once.
func TestGRPCPushCrowdFailures(t *testing.T) {
	t.Parallel()
	testGRPCPushCrowd(t, 7)
}

func testGRPCPushCrowd(t *testing.T, failEvery int) {
	k := startKarman(t)
	const topic, group, perPhase = "GrpcPushCrowd", "grpc-push-crowd", 150
	k.createTypedTopic(topic, 4, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16, GroupRetryPolicy: shortRetries})
	var res struct {
		Sent        []sentMessage  `json:"sent"`
		Deliveries  []pushDelivery `json:"deliveries"`
		Assignments []struct {
			Consumer int      `json:"consumer"`
			At       int64    `json:"at"`
			Code     int      `json:"code"`
			Queues   []string `json:"queues"`
		} `json:"assignments"`
		StartedAt map[int]int64 `json:"startedAt"`
		StoppedAt map[int]int64 `json:"stoppedAt"`
	}
	// The consumers go on for 6 s at the end: long enough for each left
	// to query its assignments again after the second one stopped.
	k.startNodeTimeout("pushcrowd", 150*time.Second, map[string]any{"topic": topic, "group": group, "lingerMs": 6000, "failEvery": failEvery,
		"phases": []map[string]any{
			{"start": 1, "send": perPhase},
			{"start": 1, "send": perPhase},
			{"start": 1, "send": perPhase},
			{"stop": []int{1}, "send": perPhase},
		}}).wait(&res)
	if len(res.Sent) != 4*perPhase {
		t.Fatalf("sent %d messages, want %d", len(res.Sent), 4*perPhase)
	}
	shares := map[int]int{}
	got := byBody(res.Deliveries)
	stopped := res.StoppedAt[1]
	for i, s := range res.Sent {
		ds := got[s.Body]
		delete(got, s.Body)
		want := []string{"SUCCESS#1"}
		if failEvery > 0 && i%failEvery == 0 {
			want = []string{"FAILURE#1", "SUCCESS#2"}
		}
		var outcomes []string
		for _, d := range ds {
			outcomes = append(outcomes, d.Result+"#"+strconv.Itoa(d.Attempt))
			if d.ID != s.ID {
				t.Errorf("%s (id %s) delivered as %v", s.Body, s.ID, d.nodeMessage)
			}
		}
		if !slices.Equal(outcomes, want) {
			t.Errorf("%s consumed as %v, want %v", s.Body, outcomes, want)
		}
		for _, d := range ds {
			shares[d.Consumer]++
			if d.Consumer == 1 && d.ReceivedAt > stopped {
				t.Errorf("%s consumed by consumer 1 at %d, after it stopped at %d", d.Body, d.ReceivedAt, stopped)
			}
		}
	}
	for body := range got {
		t.Errorf("consumed %s, which was never sent", body)
	}
	t.Logf("messages per consumer: %v", shares)

	after := map[int]bool{}
	for _, a := range res.Assignments {
		if a.Code != codeOK || len(a.Queues) != 1 || !strings.HasSuffix(a.Queues[0], "/-1@"+k.grpc) {
			t.Errorf("consumer %d was assigned %v (code %d), want one assignment, queue -1 at %s", a.Consumer, a.Queues, a.Code, k.grpc)
		}
		if a.At > stopped {
			after[a.Consumer] = true
		}
	}
	if !after[0] || !after[2] {
		t.Errorf("consumers that queried their assignments after consumer 1 stopped: %v, want 0 and 2", after)
	}
}

// fifoOut returns perGroup messages of each of groups message groups,
// interleaved: "g<j>-<i>" of group "g<j>".
func fifoOut(groups, perGroup int) []outMessage {
	var out []outMessage
	for i := range perGroup {
		for j := range groups {
			g := "g" + strconv.Itoa(j)
			out = append(out, outMessage{Body: g + "-" + strconv.Itoa(i), Group: g, Tag: "fifo"})
		}
	}
	return out
}

// TestGRPCPushFIFOOrder: two FIFO push consumers of a group share ten
// message groups of thirty messages each. Per message group, messages are
// consumed in send order, each only once the one before it was done; a
// message the listener fails once is consumed again (attempt 2) before
// the next of its group. The client retries FIFO messages itself: no nack
// and no dead-letter forward reaches the server.
func TestGRPCPushFIFOOrder(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, groups, perGroup = "GrpcPushFifoOrder", "grpc-push-fifo-order", 10, 30
	k.createTypedTopic(topic, 4, "FIFO")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeMessageOrderly: true,
		RetryMaxTimes: 3, GroupRetryPolicy: shortRetries})
	out := fifoOut(groups, perGroup)
	var failOnce []string
	for j := range groups {
		failOnce = append(failOnce, fmt.Sprintf("g%d-%d", j, 7), fmt.Sprintf("g%d-%d", j, 8+j*2))
	}
	sent := k.nodeSend(topic, out)
	var res pushWatchResult
	k.node("pushwatch", map[string]any{"topic": topic, "group": group, "consumers": 2, "count": len(out),
		"failOnce": failOnce}, &res)
	for _, s := range res.Settings {
		if !s.FIFO || s.MaxAttempts != 4 {
			t.Errorf("consumer %d was told FIFO %v, max attempts %d; want FIFO, 4", s.Consumer, s.FIFO, s.MaxAttempts)
		}
	}
	ids := map[string]string{}
	for _, s := range sent {
		ids[s.Body] = s.ID
	}
	got := byBody(res.Deliveries)
	for _, m := range out {
		want := []int{1}
		if slices.Contains(failOnce, m.Body) {
			want = []int{1, 2}
		}
		if a := pushAttempts(got[m.Body]); !slices.Equal(a, want) {
			t.Errorf("%s delivered with attempts %v, want %v", m.Body, a, want)
		}
		for _, d := range got[m.Body] {
			if d.ID != ids[m.Body] || d.Group != m.Group {
				t.Errorf("%s (id %s, group %s) delivered as %v", m.Body, ids[m.Body], m.Group, d.nodeMessage)
			}
		}
	}
	// Per message group, in the order the listener was called: each
	// delivery after the one before was done, and the bodies, with
	// repeated deliveries collapsed, in send order.
	byGroup := map[string][]pushDelivery{}
	for _, d := range res.Deliveries {
		byGroup[d.Group] = append(byGroup[d.Group], d)
	}
	wantOrder := map[string][]string{}
	for _, m := range out {
		wantOrder[m.Group] = append(wantOrder[m.Group], m.Body)
	}
	for g, want := range wantOrder {
		ds := byGroup[g]
		slices.SortStableFunc(ds, func(a, b pushDelivery) int { return int(a.ReceivedAt - b.ReceivedAt) })
		var order []string
		for i, d := range ds {
			if i > 0 && d.ReceivedAt < ds[i-1].DoneAt {
				t.Errorf("message group %s: %s#%d (consumer %d) consumed from %d, before %s#%d (consumer %d) was done at %d",
					g, d.Body, d.Attempt, d.Consumer, d.ReceivedAt, ds[i-1].Body, ds[i-1].Attempt, ds[i-1].Consumer, ds[i-1].DoneAt)
			}
			if len(order) == 0 || order[len(order)-1] != d.Body {
				order = append(order, d.Body)
			}
		}
		if !slices.Equal(order, want) {
			t.Errorf("message group %s consumed in order %v, want %v", g, order, want)
		}
	}
	if len(res.Nacks) != 0 || len(res.Forwards) != 0 {
		t.Errorf("FIFO consumers sent nacks %v and dead-letter forwards %v", res.Nacks, res.Forwards)
	}
}

// TestGRPCPushRetryBackoff: a group with an exponential retry policy of
// 1 s, 2 s, 3 s (at most) and four delivery attempts. Its push consumers
// are told that policy in their settings, and the server redelivers what
// they fail (nack) after the delay the policy gives for the attempt, not
// earlier, with the delivery attempt raised by one each time. After the
// fourth failed delivery the message goes to the dead-letter topic,
// readable with a remoting pull and by a gRPC consumer.
func TestGRPCPushRetryBackoff(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, maxAttempts = "GrpcPushRetry", "grpc-push-retry", 4
	k.createTypedTopic(topic, 2, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: maxAttempts - 1,
		GroupRetryPolicy: &broker.GroupRetryPolicy{Type: broker.RetryPolicyExponential,
			ExponentialRetryPolicy: &broker.ExponentialRetryPolicy{Initial: 1000, Max: 3000, Multiplier: 2}}})
	out := []outMessage{{Body: "poison", Tag: "retry"}, {Body: "fail-once", Tag: "retry"}}
	for i := range 8 {
		out = append(out, outMessage{Body: "fine-" + strconv.Itoa(i), Tag: "retry"})
	}
	sent := k.nodeSend(topic, out)
	var res pushWatchResult
	// After its last attempt the poison message would come back 3 s
	// later; the consumer goes on for 5 s to see that it does not.
	k.node("pushwatch", map[string]any{"topic": topic, "group": group, "count": len(out) - 1,
		"poison": []string{"poison"}, "poisonAttempts": maxAttempts, "failOnce": []string{"fail-once"}, "lingerMs": 5000}, &res)

	wantDelays := []int64{1, 2, 3, 3} // seconds, after attempts 1..4
	for _, s := range res.Settings {
		if s.FIFO || s.MaxAttempts != maxAttempts || !slices.Equal(s.Delays, wantDelays) {
			t.Errorf("consumer %d was told FIFO %v, max attempts %d, delays %v s; want not FIFO, %d, %v s",
				s.Consumer, s.FIFO, s.MaxAttempts, s.Delays, maxAttempts, wantDelays)
		}
	}
	got := byBody(res.Deliveries)
	for body, n := range map[string]int{"poison": maxAttempts, "fail-once": 2} {
		ds := got[body]
		want := make([]int, n)
		for i := range want {
			want[i] = i + 1
		}
		if a := pushAttempts(ds); !slices.Equal(a, want) {
			t.Errorf("%s delivered with attempts %v, want %v", body, a, want)
			continue
		}
		for i := 1; i < len(ds); i++ {
			wait := time.Duration(ds[i].ReceivedAt-ds[i-1].DoneAt) * time.Millisecond
			delay := time.Duration(wantDelays[i-1]) * time.Second
			// The nack leaves the listener's process a few ms after the
			// listener returns; the redelivery may not come earlier than
			// the delay after that, nor much later.
			if wait < delay-50*time.Millisecond || wait > delay+3*time.Second {
				t.Errorf("%s: attempt %d came %s after attempt %d failed, want %s", body, ds[i].Attempt, wait, ds[i-1].Attempt, delay)
			}
		}
	}
	for _, m := range out[2:] {
		if a := pushAttempts(got[m.Body]); !slices.Equal(a, []int{1}) {
			t.Errorf("%s delivered with attempts %v, want [1]", m.Body, a)
		}
	}
	nacked := map[string]int{}
	for _, n := range res.Nacks {
		nacked[n.ID]++
		if n.Code != codeOK {
			t.Errorf("nack of %s answered with code %d", n.ID, n.Code)
		}
	}
	if nacked[sent[0].ID] != maxAttempts || nacked[sent[1].ID] != 1 || len(nacked) != 2 {
		t.Errorf("nacks per message id: %v; want %d of poison (%s), 1 of fail-once (%s)", nacked, maxAttempts, sent[0].ID, sent[1].ID)
	}
	if len(res.Forwards) != 0 {
		t.Errorf("a concurrent consumer forwarded to the dead-letter topic: %v", res.Forwards)
	}
	checkDeadLetter(t, k, group, topic, "poison", sent[0].ID)

	// A gRPC consumer of another group reads the dead letter too.
	dead := k.nodeReceive(map[string]any{"topic": message.DLQTopic(group), "group": group + "-dlq-reader", "count": 1})
	if len(dead) != 1 || dead[0].Body != "poison" || dead[0].ID != sent[0].ID || dead[0].Tag != "retry" {
		t.Errorf("a gRPC consumer of %s received %v, want poison (id %s)", message.DLQTopic(group), dead, sent[0].ID)
	}
}

// txnEnd is one EndTransaction txnmany.js's producers completed.
type txnEnd struct {
	ID         string `json:"id"`
	Resolution string `json:"resolution"`
	Source     string `json:"source"`
	Producer   int    `json:"producer"`
	At         int64  `json:"at"`
}

// TestGRPCPushTransactionsMany: fifty transactions begun at once, some
// committed or rolled back by the producer, the others left to the
// server's checks, some of which the checker leaves unanswered at first;
// then a producer shut down with transactions open, which the checks put
// to the producer that replaces it. Only the committed messages are
// delivered, once each; only the open transactions are checked, the
// unanswered ones again later, each ended once.
func TestGRPCPushTransactionsMany(t *testing.T) {
	t.Parallel()
	k := startKarman(t, "--transaction-timeout", "3s", "--transaction-check-interval", "500ms")
	const topic, group, count, restarts = "GrpcPushTxnMany", "grpc-push-txn-many", 50, 8
	k.createTypedTopic(topic, 2, "TRANSACTION")
	var res struct {
		Sent []struct {
			sentMessage
			Producer int `json:"producer"`
		} `json:"sent"`
		Checks []struct {
			nodeMessage
			Answer   string `json:"answer"`
			Producer int    `json:"producer"`
			At       int64  `json:"at"`
		} `json:"checks"`
		Ends       []txnEnd      `json:"ends"`
		Received   []nodeMessage `json:"received"`
		ShutdownAt int64         `json:"shutdownAt"`
	}
	k.startNodeTimeout("txnmany", 120*time.Second, map[string]any{"topic": topic, "group": group, "count": count,
		"restartCount": restarts, "lingerMs": 2000}).wait(&res)
	if len(res.Sent) != count+restarts {
		t.Fatalf("sent %d half messages, want %d", len(res.Sent), count+restarts)
	}
	// want is how each transaction ends: resolution, by whom, and whether
	// it is checked with no answer first.
	type outcome struct {
		resolution, source string
		unanswered         bool
	}
	want := map[string]outcome{}
	for i := range count {
		o := map[int]outcome{
			0: {"COMMIT", "SOURCE_CLIENT", false}, 4: {"COMMIT", "SOURCE_CLIENT", false},
			1: {"ROLLBACK", "SOURCE_CLIENT", false}, 5: {"ROLLBACK", "SOURCE_CLIENT", false},
			2: {"COMMIT", "SOURCE_SERVER_CHECK", false}, 3: {"ROLLBACK", "SOURCE_SERVER_CHECK", false},
			6: {"COMMIT", "SOURCE_SERVER_CHECK", true}, 7: {"ROLLBACK", "SOURCE_SERVER_CHECK", true},
		}[i%8]
		want["t-"+strconv.Itoa(i)] = o
	}
	for i := range restarts {
		want["r-"+strconv.Itoa(i)] = outcome{map[bool]string{true: "COMMIT", false: "ROLLBACK"}[i%2 == 0], "SOURCE_SERVER_CHECK", false}
	}
	byID := map[string]string{}
	for _, s := range res.Sent {
		byID[s.ID] = s.Body
	}
	ends := map[string][]txnEnd{}
	for _, e := range res.Ends {
		ends[byID[e.ID]] = append(ends[byID[e.ID]], e)
	}
	checks := map[string][]string{}
	for _, c := range res.Checks {
		checks[c.Body] = append(checks[c.Body], c.Answer)
		// A check that reached producer 0 before its shutdown may be
		// answered while it shuts down; none may reach it afterwards.
		if c.Producer == 0 && c.At > res.ShutdownAt {
			t.Errorf("%s checked by producer 0 %d ms after it shut down", c.Body, c.At-res.ShutdownAt)
		}
		if byID[c.ID] != c.Body || c.Tag != "txn" || !slices.Equal(c.Keys, []string{"key-" + c.Body}) || c.Corrupted {
			t.Errorf("check for %s carried %v", byID[c.ID], c.nodeMessage)
		}
	}
	for body, o := range want {
		es := ends[body]
		if len(es) != 1 || es[0].Resolution != o.resolution || es[0].Source != o.source {
			t.Errorf("%s ended as %+v, want once, %s from %s", body, es, o.resolution, o.source)
		}
		a := checks[body]
		switch {
		case o.source == "SOURCE_CLIENT" && len(a) != 0:
			t.Errorf("%s, ended by its producer, was checked: %v", body, a)
		case o.source == "SOURCE_SERVER_CHECK" && o.unanswered &&
			(len(a) < 2 || a[0] != "TRANSACTION_RESOLUTION_UNSPECIFIED" || a[len(a)-1] != o.resolution):
			t.Errorf("%s checked with answers %v, want no answer, then %s", body, a, o.resolution)
		case o.source == "SOURCE_SERVER_CHECK" && !o.unanswered && (len(a) == 0 || a[len(a)-1] != o.resolution):
			t.Errorf("%s checked with answers %v, want %s", body, a, o.resolution)
		}
	}
	got := deliveriesOf(res.Received)
	for body, o := range want {
		n := map[bool]int{true: 1}[o.resolution == "COMMIT"]
		if len(got[body]) != n {
			t.Errorf("%s delivered %d times, want %d", body, len(got[body]), n)
		}
		delete(got, body)
	}
	for body := range got {
		t.Errorf("received %s, which was never sent", body)
	}
}

// TestGRPCPushDelayMany: a hundred delayed messages with random delivery
// times in the next 10 s reach a push consumer each once, none before its
// delivery time and none more than 3 s after; recalled ones never do.
func TestGRPCPushDelayMany(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, n, recalls = "GrpcPushDelayMany", "grpc-push-delay-many", 100, 5
	k.createTypedTopic(topic, 2, "DELAY")
	r := rand.New(rand.NewPCG(7, 11))
	delays := make([]int64, n)
	for i := range delays {
		delays[i] = 300 + r.Int64N(9700)
	}
	var res struct {
		Sent []struct {
			sentMessage
			SentAt int64 `json:"sentAt"`
		} `json:"sent"`
		Recalls    []string      `json:"recalls"`
		Deliveries []nodeMessage `json:"deliveries"`
	}
	k.node("delaymany", map[string]any{"topic": topic, "group": group, "delays": delays, "recalls": recalls,
		"recallMs": 4000, "lingerMs": 2000}, &res)
	for i, r := range res.Recalls {
		if r != "ok" {
			t.Errorf("recall of recall-%d: %s", i, r)
		}
	}
	if len(res.Recalls) != recalls {
		t.Errorf("%d recalls, want %d", len(res.Recalls), recalls)
	}
	got := deliveriesOf(res.Deliveries)
	var late []int64
	for _, s := range res.Sent {
		ms := got[s.Body]
		delete(got, s.Body)
		if strings.HasPrefix(s.Body, "recall-") {
			if len(ms) != 0 {
				t.Errorf("%s, recalled, was delivered %d times", s.Body, len(ms))
			}
			continue
		}
		if len(ms) != 1 {
			t.Errorf("%s delivered %d times, want once", s.Body, len(ms))
			continue
		}
		m := ms[0]
		if m.ID != s.ID || m.DeliverAt != s.DeliverAt || m.Attempt != 1 || m.Corrupted {
			t.Errorf("%s (id %s, delivery time %d) received as %v, delivery time %d", s.Body, s.ID, s.DeliverAt, m, m.DeliverAt)
		}
		if early := s.DeliverAt - m.ReceivedAt; early > 0 {
			t.Errorf("%s arrived %d ms before its delivery time", s.Body, early)
		}
		lateness := m.ReceivedAt - s.DeliverAt
		late = append(late, lateness)
		if lateness > 3000 {
			t.Errorf("%s arrived %d ms after its delivery time", s.Body, lateness)
		}
	}
	for body := range got {
		t.Errorf("received %s, which was never sent", body)
	}
	slices.Sort(late)
	if len(late) > 0 {
		t.Logf("lateness: median %d ms, max %d ms", late[len(late)/2], late[len(late)-1])
	}
}

// TestGRPCPushFilters: push consumers subscribed with the tag expression
// "a || b" and with an SQL92 expression on a numeric property and IS NOT
// NULL each consume exactly the messages their expression selects, once.
func TestGRPCPushFilters(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "GrpcPushFilters"
	const sql = "num > 10 AND flag IS NOT NULL"
	k.createTypedTopic(topic, 1, "NORMAL")
	tags := []string{"a", "b", "c", ""}
	wantTag, wantSQL := map[string]bool{}, map[string]bool{}
	var out []outMessage
	for i := range 60 {
		m := outMessage{Body: "f-" + strconv.Itoa(i), Tag: tags[i%4], Properties: map[string]string{"num": strconv.Itoa(i)}}
		if i%3 == 0 {
			m.Properties["flag"] = "x" + strconv.Itoa(i)
		}
		if m.Tag == "a" || m.Tag == "b" {
			wantTag[m.Body] = true
		}
		if i > 10 && i%3 == 0 {
			wantSQL[m.Body] = true
		}
		out = append(out, m)
	}
	// num compares as a number: "9" < "10" as text, not as numbers.
	out = append(out, outMessage{Body: "f-nine", Tag: "c", Properties: map[string]string{"num": "9", "flag": "y"}})
	// The topic has one queue and the last message matches both: once it
	// arrived, every earlier one was delivered or filtered out.
	out = append(out, outMessage{Body: "last", Tag: "a", Properties: map[string]string{"num": "1000", "flag": "z"}})
	wantTag["last"], wantSQL["last"] = true, true
	k.nodeSend(topic, out)
	byTag := k.startNode("pushwatch", map[string]any{"topic": topic, "group": "grpc-push-filter-tag", "expression": "a || b",
		"until": "last", "lingerMs": 1000})
	bySQL := k.startNode("pushwatch", map[string]any{"topic": topic, "group": "grpc-push-filter-sql", "expression": sql, "sql": true,
		"until": "last", "lingerMs": 1000})
	for name, c := range map[string]struct {
		script *nodeScript
		want   map[string]bool
	}{"tag": {byTag, wantTag}, "SQL92": {bySQL, wantSQL}} {
		var res pushWatchResult
		c.script.wait(&res)
		got := byBody(res.Deliveries)
		for body, ds := range got {
			if !c.want[body] {
				t.Errorf("%s subscription consumed %s, which does not match", name, body)
			} else if a := pushAttempts(ds); !slices.Equal(a, []int{1}) {
				t.Errorf("%s subscription consumed %s with attempts %v", name, body, a)
			}
		}
		for body := range c.want {
			if len(got[body]) == 0 {
				t.Errorf("%s subscription missed %s", name, body)
			}
		}
	}
}

// Status codes of RocketMQ 5 the delay scenarios expect.
const (
	codeBadRequest          = 40000
	codeIllegalDeliveryTime = 40012
	codeNotFound            = 40400
)

// TestGRPCPushDelayEdges: a delivery time in the past is delivered at
// once; one beyond the server's timer horizon (three days) is refused
// with ILLEGAL_DELIVERY_TIME. A recall works once: recalling again, or
// after the message was delivered, is NOT_FOUND; a recall naming another
// topic than the message's is BAD_REQUEST and leaves it for the recall
// that names its own. Recalled messages are never delivered.
func TestGRPCPushDelayEdges(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, other, group = "GrpcPushDelayEdges", "GrpcPushDelayOther", "grpc-push-delay-edges"
	k.createTypedTopic(topic, 2, "DELAY")
	k.createTypedTopic(other, 1, "DELAY")
	type failure struct {
		Message string `json:"message"`
		Code    *int   `json:"code"`
	}
	var res struct {
		Sent []struct {
			sentMessage
			SentAt int64    `json:"sentAt"`
			Error  *failure `json:"error"`
		} `json:"sent"`
		Recalls []struct {
			Body  string   `json:"body"`
			What  string   `json:"what"`
			Error *failure `json:"error"`
		} `json:"recalls"`
		Deliveries []nodeMessage `json:"deliveries"`
	}
	k.node("delayedges", map[string]any{"topic": topic, "otherTopic": other, "group": group,
		"farMs": (4 * 24 * time.Hour).Milliseconds(), "lingerMs": 4000}, &res)
	got := deliveriesOf(res.Deliveries)
	for _, s := range res.Sent {
		ms := got[s.Body]
		delete(got, s.Body)
		switch s.Body {
		case "far":
			if s.Error == nil || s.Error.Code == nil || *s.Error.Code != codeIllegalDeliveryTime {
				t.Errorf("a delivery time four days ahead: sent as %s, error %+v; want code %d", s.ID, s.Error, codeIllegalDeliveryTime)
			}
			if len(ms) != 0 {
				t.Errorf("far delivered %d times", len(ms))
			}
			continue
		case "twice", "elsewhere":
			if len(ms) != 0 {
				t.Errorf("%s, recalled, delivered %d times", s.Body, len(ms))
			}
			continue
		}
		if s.Error != nil || len(ms) != 1 || ms[0].ID != s.ID || ms[0].Attempt != 1 {
			t.Errorf("%s: sent as %s (error %+v), delivered %v", s.Body, s.ID, s.Error, ms)
			continue
		}
		m := ms[0]
		if s.Body == "past" {
			if wait := m.ReceivedAt - s.SentAt; wait > 3000 {
				t.Errorf("a message due in the past arrived %d ms after it was sent", wait)
			}
			continue
		}
		if early := s.DeliverAt - m.ReceivedAt; early > 0 {
			t.Errorf("%s arrived %d ms before its delivery time", s.Body, early)
		}
		if late := m.ReceivedAt - s.DeliverAt; late > 3000 {
			t.Errorf("%s arrived %d ms after its delivery time", s.Body, late)
		}
	}
	for body := range got {
		t.Errorf("received %s, which was never sent", body)
	}
	want := map[string]int{ // the code of each recall, 0 for success
		"twice/first": 0, "twice/second": codeNotFound,
		"elsewhere/other topic": codeBadRequest, "elsewhere/own topic": 0,
		"late/after delivery": codeNotFound,
	}
	for _, r := range res.Recalls {
		key := r.Body + "/" + r.What
		// The client throws a refused recall as a plain error, its status
		// code in the message: "... (code: 40400)".
		code := 0
		if r.Error != nil {
			code = -1
			if _, c, ok := strings.Cut(r.Error.Message, "(code: "); ok {
				code, _ = strconv.Atoi(strings.TrimSuffix(c, ")"))
			}
		}
		if w, ok := want[key]; !ok || code != w {
			t.Errorf("recall of %s (%s): error %+v, want code %d", r.Body, r.What, r.Error, w)
		}
		delete(want, key)
	}
	for key := range want {
		t.Errorf("no recall %s", key)
	}
}

// TestGRPCPushFIFOHandover: FIFO push consumers of a group join and
// leave while a producer sends ten message groups: two consume from the
// start, a third joins and the first stops midway. Each is assigned every
// queue of the topic; per message group, messages are consumed in send
// order across the handover, each once, but for the one in eleven the
// listener fails once, which comes again (attempt 2) before the next of
// its group.
func TestGRPCPushFIFOHandover(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, groups, failEvery = "GrpcPushFifoHandover", "grpc-push-fifo-handover", 10, 11
	k.createTypedTopic(topic, 4, "FIFO")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeMessageOrderly: true,
		RetryMaxTimes: 3, GroupRetryPolicy: shortRetries})
	var res struct {
		Sent        []sentMessage  `json:"sent"`
		Deliveries  []pushDelivery `json:"deliveries"`
		Assignments []struct {
			Consumer int      `json:"consumer"`
			Code     int      `json:"code"`
			Queues   []string `json:"queues"`
		} `json:"assignments"`
		StoppedAt map[int]int64 `json:"stoppedAt"`
	}
	k.startNodeTimeout("pushcrowd", 150*time.Second, map[string]any{"topic": topic, "group": group, "groups": groups,
		"failEvery": failEvery, "lingerMs": 1000,
		"phases": []map[string]any{
			{"start": 2, "send": 150},
			{"start": 1, "stop": []int{0}, "send": 150},
		}}).wait(&res)
	for _, a := range res.Assignments {
		var ids []string
		for _, q := range a.Queues {
			name, _, _ := strings.Cut(q, "@")
			_, id, _ := strings.Cut(name, "/")
			ids = append(ids, id)
		}
		if a.Code != codeOK || !slices.Equal(ids, []string{"0", "1", "2", "3"}) {
			t.Errorf("consumer %d was assigned %v (code %d), want queues 0 to 3", a.Consumer, a.Queues, a.Code)
		}
	}
	wantOrder := map[string][]string{}
	outcome := map[string][]string{}
	for i, s := range res.Sent {
		g := "g" + strconv.Itoa(i%groups)
		wantOrder[g] = append(wantOrder[g], s.Body)
		outcome[s.Body] = []string{"SUCCESS#1"}
		if i%failEvery == 0 {
			outcome[s.Body] = []string{"FAILURE#1", "SUCCESS#2"}
		}
	}
	byGroup := map[string][]pushDelivery{}
	got := map[string][]string{}
	shares := map[int]int{}
	for _, d := range res.Deliveries {
		byGroup[d.Group] = append(byGroup[d.Group], d)
		got[d.Body] = append(got[d.Body], d.Result+"#"+strconv.Itoa(d.Attempt))
		shares[d.Consumer]++
		if d.Consumer == 0 && d.ReceivedAt > res.StoppedAt[0] {
			t.Errorf("%s consumed by consumer 0 after it stopped", d.Body)
		}
	}
	t.Logf("deliveries per consumer: %v", shares)
	for body, want := range outcome {
		if !slices.Equal(got[body], want) {
			t.Errorf("%s consumed as %v, want %v", body, got[body], want)
		}
	}
	for g, want := range wantOrder {
		ds := byGroup[g]
		slices.SortStableFunc(ds, func(a, b pushDelivery) int { return int(a.ReceivedAt - b.ReceivedAt) })
		var order []string
		for _, d := range ds {
			if len(order) == 0 || order[len(order)-1] != d.Body {
				order = append(order, d.Body)
			}
		}
		if !slices.Equal(order, want) {
			t.Errorf("message group %s consumed in order %v, want %v", g, order, want)
		}
	}
}
