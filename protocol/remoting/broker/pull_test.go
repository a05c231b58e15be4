package broker

import (
	"context"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// The response code and nextBeginOffset of every position a pull can ask
// for, as Java answers them.
func TestPullCodes(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	for _, name := range []string{"Empty", "Full"} {
		if err := h.eng.CreateTopic(meta.Topic{Name: name, ReadQueues: 1, WriteQueues: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		h.send(p, "Full", 0, "m", "TAGS", []string{"a", "b", "a"}[i])
	}
	tagged := func(offset int64, expr string) *wire.PullMessageRequestHeader {
		ph := pullHeader("g", "Full", 0, offset)
		ph.Subscription = expr
		return ph
	}
	tests := []struct {
		name     string
		ph       *wire.PullMessageRequestHeader
		code     wire.ResponseCode
		next     int64
		messages int
	}{
		{"empty queue at 0", pullHeader("g", "Empty", 0, 0), wire.PullNotFound, 0, 0},
		{"empty queue past 0", pullHeader("g", "Empty", 0, 5), wire.PullOffsetMoved, 0, 0},
		{"found", pullHeader("g", "Full", 0, 0), wire.Success, 3, 3},
		{"found from 1", pullHeader("g", "Full", 0, 1), wire.Success, 3, 2},
		{"caught up", pullHeader("g", "Full", 0, 3), wire.PullNotFound, 3, 0},
		{"beyond max", pullHeader("g", "Full", 0, 10), wire.PullOffsetMoved, 3, 0},
		{"tag matches some", tagged(0, "a"), wire.Success, 3, 2},
		{"tag matches none", tagged(0, "zzz"), wire.PullRetryImmediately, 3, 0},
		{"tag alternatives", tagged(1, "b || a"), wire.Success, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.pull(p, tt.ph)
			wantCode(t, resp, tt.code)
			if got := ext(t, resp, "nextBeginOffset"); got != tt.next {
				t.Errorf("nextBeginOffset %d, want %d", got, tt.next)
			}
			ext(t, resp, "minOffset")
			ext(t, resp, "maxOffset")
			ext(t, resp, "suggestWhichBrokerId")
			if n := len(records(t, resp.Body)); n != tt.messages {
				t.Errorf("%d messages, want %d", n, tt.messages)
			}
		})
	}
}

// A pull asking for no messages gets one, as from Java: the Go pull
// consumer asks for 0 unless told a batch size.
func TestPullZeroMessages(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	for _, body := range []string{"one", "two"} {
		h.send(p, "TopicA", 0, body)
	}
	for _, n := range []int32{0, -1} {
		ph := pullHeader("g", "TopicA", 0, 0)
		ph.MaxMsgNums = n
		resp := h.pull(p, ph)
		wantCode(t, resp, wire.Success)
		if msgs := records(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "one" || ext(t, resp, "nextBeginOffset") != 1 {
			t.Fatalf("maxMsgNums %d: %d messages, next %d", n, len(msgs), ext(t, resp, "nextBeginOffset"))
		}
	}
}

// Requests the broker refuses, with the code that says why.
func TestPullErrors(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	h.send(p, "TopicA", 0, "m")
	noSub := pullHeader("g", "TopicA", 0, 0)
	noSub.SysFlag = 0
	badTag := pullHeader("g", "TopicA", 0, 0)
	badTag.Subscription = "||"
	badSQL := pullHeader("g", "TopicA", 0, 0)
	badSQL.ExpressionType, badSQL.Subscription = wire.ExpressionSQL92, "a >"
	badType := pullHeader("g", "TopicA", 0, 0)
	badType.ExpressionType = "XPATH"
	tests := []struct {
		name string
		req  *wire.Command
		want wire.ResponseCode
	}{
		{"no header", &wire.Command{Code: int32(wire.PullMessage)}, wire.InvalidParameter},
		{"no group", request(wire.PullMessage, pullHeader("", "TopicA", 0, 0), nil), wire.InvalidParameter},
		{"unknown topic", request(wire.PullMessage, pullHeader("g", "Nope", 0, 0), nil), wire.TopicNotExist},
		{"bad queue", request(wire.PullMessage, pullHeader("g", "TopicA", 99, 0), nil), wire.InvalidParameter},
		{"no subscription", request(wire.PullMessage, noSub, nil), wire.SubscriptionNotExist},
		{"bad tag expression", request(wire.PullMessage, badTag, nil), wire.SubscriptionParseFailed},
		{"bad SQL expression", request(wire.PullMessage, badSQL, nil), wire.SubscriptionParseFailed},
		{"unknown expression type", request(wire.PullMessage, badType, nil), wire.SubscriptionParseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, invoke(t, p, tt.req), tt.want)
		})
	}
}

// Without the SUBSCRIPTION flag the group's subscription from its
// heartbeats filters, as for Go push consumers.
func TestPullHeartbeatSubscription(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	h.send(p, "TopicA", 0, "one", "TAGS", "x")
	h.send(p, "TopicA", 0, "two", "TAGS", "y")
	heartbeat(t, p, "c1", "g", "TopicA", "y")
	ph := pullHeader("g", "TopicA", 0, 0)
	ph.SysFlag, ph.Subscription = wire.PullFlagSuspend, ""
	resp := h.pull(p, ph)
	wantCode(t, resp, wire.Success)
	msgs := records(t, resp.Body)
	if len(msgs) != 1 || string(msgs[0].Body) != "two" {
		t.Fatalf("pulled %d messages", len(msgs))
	}
	// An older subscription version than the broker's is fine; a newer one
	// means the heartbeat has not arrived yet.
	ph.SubVersion = time.Now().Add(time.Hour).UnixNano()
	wantCode(t, h.pull(p, ph), wire.SubscriptionNotLatest)
}

func TestPullSQL92(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	h.send(p, "TopicS", 0, "cheap", "price", "3", "TAGS", "t")
	h.send(p, "TopicS", 0, "dear", "price", "30", "TAGS", "t")
	ph := pullHeader("g", "TopicS", 0, 0)
	ph.ExpressionType, ph.Subscription = wire.ExpressionSQL92, "price > 10 AND TAGS = 't'"
	resp := h.pull(p, ph)
	wantCode(t, resp, wire.Success)
	if msgs := records(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "dear" {
		t.Fatalf("pulled %v", msgs)
	}
}

// Java's lite pull consumer sends LITE_PULL_MESSAGE with the lite-pull
// flag; it is served as PULL_MESSAGE, long polling included.
func TestLitePull(t *testing.T) {
	h := newHarness(t)
	holding := h.holds()
	p := h.dial(nil)
	h.send(p, "TopicL", 0, "one")
	h.dispatched()
	ph := pullHeader("g", "TopicL", 0, 0)
	ph.SysFlag = wire.PullFlagSubscription | wire.PullFlagSuspend | wire.PullFlagLitePull
	ph.SuspendTimeoutMillis = 20_000
	resp := invoke(t, p, request(wire.LitePullMessage, ph, nil))
	wantCode(t, resp, wire.Success)
	if msgs := records(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "one" || ext(t, resp, "nextBeginOffset") != 1 {
		t.Fatalf("lite pull: %d messages, next %d", len(msgs), ext(t, resp, "nextBeginOffset"))
	}

	ph.QueueOffset = 1
	got := make(chan *wire.Command, 1)
	go func() {
		resp, err := p.Invoke(context.Background(), request(wire.LitePullMessage, ph, nil))
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	<-holding
	h.send(p, "TopicL", 0, "two")
	resp = <-got
	wantCode(t, resp, wire.Success)
	if msgs := records(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "two" {
		t.Fatalf("held lite pull answered %d messages", len(msgs))
	}
}

// A caught-up pull with SUSPEND waits for the next message and is woken
// by it; without one it answers PULL_NOT_FOUND at its timeout.
func TestPullLongPolling(t *testing.T) {
	h := newHarness(t)
	holding := h.holds()
	p := h.dial(nil)
	h.send(p, "TopicL", 0, "first")
	ph := pullHeader("g", "TopicL", 0, 1)
	ph.SysFlag |= wire.PullFlagSuspend
	ph.SuspendTimeoutMillis = 20000

	held := make(chan *wire.Command, 1)
	go func() {
		resp, err := p.Invoke(context.Background(), request(wire.PullMessage, ph, nil))
		if err != nil {
			t.Error(err)
		}
		held <- resp
	}()
	<-holding
	start := time.Now()
	h.send(h.dial(nil), "TopicL", 0, "second")
	resp := <-held
	if resp == nil {
		t.FailNow()
	}
	wantCode(t, resp, wire.Success)
	if msgs := records(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "second" || time.Since(start) > 10*time.Second {
		t.Fatalf("held pull answered %d messages after %v", len(msgs), time.Since(start))
	}

	ph.QueueOffset = 2
	ph.SuspendTimeoutMillis = 200
	start = time.Now()
	resp = h.pull(p, ph)
	wantCode(t, resp, wire.PullNotFound)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("answered after %v, before the 200ms suspend timeout", d)
	}
	if ext(t, resp, "nextBeginOffset") != 2 {
		t.Fatalf("nextBeginOffset %v", resp.ExtFields)
	}
}

// A held pull skips messages its filter rejects and answers the first one
// that matches, with nextBeginOffset past both.
func TestPullLongPollingFilter(t *testing.T) {
	h := newHarness(t)
	holding := h.holds()
	p := h.dial(nil)
	if err := h.eng.CreateTopic(meta.Topic{Name: "TopicF", ReadQueues: 1, WriteQueues: 1}); err != nil {
		t.Fatal(err)
	}
	ph := pullHeader("g", "TopicF", 0, 0)
	ph.Subscription = "want"
	ph.SysFlag |= wire.PullFlagSuspend
	ph.SuspendTimeoutMillis = 20000
	held := make(chan *wire.Command, 1)
	go func() {
		resp, _ := p.Invoke(context.Background(), request(wire.PullMessage, ph, nil))
		held <- resp
	}()
	<-holding
	q := h.dial(nil)
	h.send(q, "TopicF", 0, "skip", "TAGS", "other")
	h.send(q, "TopicF", 0, "take", "TAGS", "want")
	resp := <-held
	if resp == nil {
		t.Fatal("pull failed")
	}
	// The pull may have been woken by the first message alone; then it
	// says retry at once, past it.
	switch resp.ResponseCode() {
	case wire.PullRetryImmediately:
		if ext(t, resp, "nextBeginOffset") != 1 {
			t.Fatalf("retry at %v", resp.ExtFields)
		}
		ph.QueueOffset = 1
		resp = h.pull(p, ph)
		fallthrough
	case wire.Success:
		wantCode(t, resp, wire.Success)
		msgs := records(t, resp.Body)
		if len(msgs) != 1 || string(msgs[0].Body) != "take" || ext(t, resp, "nextBeginOffset") != 2 {
			t.Fatalf("held pull answered %d messages, %v", len(msgs), resp.ExtFields)
		}
	default:
		t.Fatalf("held pull: %s %q", resp.ResponseCode(), resp.Remark)
	}
}

// Closing the broker ends held pulls promptly.
func TestPullReleasedOnClose(t *testing.T) {
	h := newHarness(t)
	holding := h.holds()
	p := h.dial(nil)
	if err := h.eng.CreateTopic(meta.Topic{Name: "TopicC"}); err != nil {
		t.Fatal(err)
	}
	ph := pullHeader("g", "TopicC", 0, 0)
	ph.SysFlag |= wire.PullFlagSuspend
	ph.SuspendTimeoutMillis = 20000
	held := make(chan *wire.Command, 1)
	go func() {
		resp, _ := p.Invoke(context.Background(), request(wire.PullMessage, ph, nil))
		held <- resp
	}()
	<-holding
	start := time.Now()
	h.b.Close()
	resp := <-held
	if resp == nil || resp.ResponseCode() != wire.PullNotFound || time.Since(start) > 5*time.Second {
		t.Fatalf("held pull after close: %v after %v", resp, time.Since(start))
	}
}

// The COMMIT_OFFSET flag stores the consumer's offset before the pull.
func TestPullCommitOffset(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	for range 3 {
		h.send(p, "TopicO", 0, "m")
	}
	ph := pullHeader("g", "TopicO", 0, 2)
	ph.SysFlag |= wire.PullFlagCommitOffset
	ph.CommitOffset = 2
	wantCode(t, h.pull(p, ph), wire.Success)
	if off, err := h.eng.ConsumerOffset("g", "TopicO", 0); err != nil || off != 2 {
		t.Fatalf("committed offset %d, %v", off, err)
	}
}

// The tools group reads queues even where consumer groups are not
// created on first use, as on a Java broker; other unknown groups are
// refused.
func TestPullToolsGroupWithoutAutoCreate(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true},
		broker: Options{AutoCreateTopics: true},
	})
	p := h.dial(nil)
	h.send(p, "T", 0, "hello")
	wantCode(t, h.pull(p, pullHeader("stranger", "T", 0, 0)), wire.SubscriptionGroupNotExist)
	resp := h.pull(p, pullHeader(message.GroupTools, "T", 0, 0))
	wantCode(t, resp, wire.Success)
	if ms := records(t, resp.Body); len(ms) != 1 || string(ms[0].Body) != "hello" {
		t.Fatalf("the tools group pulled %d messages", len(ms))
	}
}
