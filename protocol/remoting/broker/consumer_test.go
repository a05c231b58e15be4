package broker

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func consumerList(t *testing.T, h *harness, group string) (wire.ResponseCode, []string) {
	t.Helper()
	resp := invoke(t, h.dial(nil), request(wire.GetConsumerListByGroup, &wire.GetConsumerListByGroupRequestHeader{ConsumerGroup: group}, nil))
	var body wire.ConsumerListResponseBody
	if resp.ResponseCode() == wire.Success {
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			t.Fatal(err)
		}
	}
	return resp.ResponseCode(), body.ConsumerIDList
}

// A heartbeat registers the client, creates its group and retry topic,
// and the client is forgotten when its connection closes.
func TestHeartbeat(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := h.eng.Clients().Watch(ctx)

	p := h.dial(nil)
	hb := request(wire.HeartBeat, nil, []byte(`{"clientID":"10.0.0.1@42","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"BROADCASTING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"TopicA","subString":"a || b","tagsSet":["a","b"],"codeSet":["97","98"],"subVersion":1700000000000000000,"expressionType":"TAG"}],"unitMode":false}]}`))
	hb.Language, hb.Version = wire.LanguageJava, 401
	resp := invoke(t, p, hb)
	wantCode(t, resp, wire.Success)
	if resp.Version <= 0 {
		t.Fatalf("heartbeat answered version %d", resp.Version)
	}
	waitChange(t, changes, "cg", registry.Joined)

	if _, err := h.eng.Group("cg"); err != nil {
		t.Fatalf("group: %v", err)
	}
	rt, err := h.eng.Topic("%RETRY%cg")
	if err != nil || rt.Queues() != 1 || !rt.Perm.Readable() || !rt.Perm.Writable() {
		t.Fatalf("retry topic %+v, %v", rt, err)
	}
	gi, ok := h.eng.Clients().ConsumerGroup("cg")
	if !ok || gi.Model != registry.Broadcasting || gi.From != registry.ConsumeFromFirstOffset || len(gi.Subscriptions) != 1 || gi.Subscriptions[0].Expression != "a || b" {
		t.Fatalf("registered %+v", gi)
	}
	if code, ids := consumerList(t, h, "cg"); code != wire.Success || !slices.Equal(ids, []string{"10.0.0.1@42"}) {
		t.Fatalf("consumer list %s %v", code, ids)
	}
	// The client's language and version, from the request's fields.
	if ps := h.eng.Clients().Producers("pg"); len(ps) != 1 || ps[0].Protocol != Protocol || ps[0].Language != "JAVA" || ps[0].Version != "V4_9_4" {
		t.Fatalf("producers %+v", ps)
	}

	p.Close()
	waitChange(t, changes, "cg", registry.Left)
	if code, _ := consumerList(t, h, "cg"); code != wire.SystemError {
		t.Fatalf("consumer list of an empty group: %s", code)
	}
}

func TestHeartbeatErrors(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	wantCode(t, invoke(t, p, request(wire.HeartBeat, nil, []byte("{not json"))), wire.InvalidParameter)
	wantCode(t, invoke(t, p, request(wire.HeartBeat, nil, []byte(`{"producerDataSet":[]}`))), wire.InvalidParameter)
}

// UNREGISTER_CLIENT drops a client from a group.
func TestUnregisterClient(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	heartbeat(t, p, "c1", "cg", "TopicA", "*")
	wantCode(t, invoke(t, p, request(wire.UnregisterClient, &wire.UnregisterClientRequestHeader{ClientID: "c1", ConsumerGroup: "cg"}, nil)), wire.Success)
	if ids := h.eng.Clients().ConsumerIDs("cg"); len(ids) != 0 {
		t.Fatalf("still registered: %v", ids)
	}
}

// Consumers of a group hear of every member that joins or leaves.
func TestNotifyConsumerIdsChanged(t *testing.T) {
	h := newHarness(t)
	first := make(recorder, 16)
	a := h.dial(first)
	heartbeat(t, a, "a", "cg", "TopicA", "*")
	first.next(t, wire.NotifyConsumerIdsChanged)

	b := h.dial(nil)
	heartbeat(t, b, "b", "cg", "TopicA", "*")
	req := first.next(t, wire.NotifyConsumerIdsChanged)
	if req.ExtFields["consumerGroup"] != "cg" || req.IsResponse() {
		t.Fatalf("notification %v", req)
	}
	b.Close()
	first.next(t, wire.NotifyConsumerIdsChanged)
}

// An offset reset in the engine reaches the group's consumers with the new
// offsets, in the form the Go client parses.
func TestResetOffsetNotification(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	if err := h.eng.CreateTopic(meta.Topic{Name: "TopicR", ReadQueues: 2, WriteQueues: 2}); err != nil {
		t.Fatal(err)
	}
	h.send(p, "TopicR", 0, "m")
	h.send(p, "TopicR", 1, "m")
	reqs := make(recorder, 16)
	c := h.dial(reqs)
	heartbeat(t, c, "c1", "cg", "TopicR", "*")
	h.dispatched()
	if _, err := h.eng.ResetOffset(context.Background(), "cg", "TopicR", time.Now().Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	req := reqs.next(t, wire.ResetConsumerClientOffset)
	if req.ExtFields["topic"] != "TopicR" || req.ExtFields["group"] != "cg" {
		t.Fatalf("reset header %v", req.ExtFields)
	}
	want := `{"offsetTable":[[{"topic":"TopicR","brokerName":"broker-a","queueId":0},1],[{"topic":"TopicR","brokerName":"broker-a","queueId":1},1]]}`
	if string(req.Body) != want {
		t.Fatalf("reset body\n%s\nwant\n%s", req.Body, want)
	}
}

func TestConsumerOffsets(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	query := func(topic string, zero bool) *wire.Command {
		return invoke(t, p, request(wire.QueryConsumerOffset, &wire.QueryConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: topic, QueueID: 0, SetZeroIfNotFound: zero}, nil))
	}
	h.send(p, "TopicO", 0, "m")
	h.send(p, "TopicO", 0, "m")
	h.dispatched()

	// No offset on a queue that still has its first message: 0, as Java.
	resp := query("TopicO", true)
	wantCode(t, resp, wire.Success)
	if ext(t, resp, "offset") != 0 {
		t.Fatalf("offset %v", resp.ExtFields)
	}
	wantCode(t, query("TopicO", false), wire.QueryNotFound)
	wantCode(t, query("Nope", true), wire.QueryNotFound)

	wantCode(t, invoke(t, p, request(wire.UpdateConsumerOffset, &wire.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "TopicO", QueueID: 0, CommitOffset: 2}, nil)), wire.Success)
	resp = query("TopicO", false)
	wantCode(t, resp, wire.Success)
	if ext(t, resp, "offset") != 2 {
		t.Fatalf("offset %v", resp.ExtFields)
	}
	wantCode(t, invoke(t, p, request(wire.UpdateConsumerOffset, &wire.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "TopicO", QueueID: 0, CommitOffset: 99}, nil)), wire.InvalidParameter)
}

func TestQueueOffsets(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	before := time.Now().UnixMilli() - 1
	for range 3 {
		h.send(p, "TopicQ", 1, "m")
	}
	h.dispatched()
	after := time.Now().UnixMilli() + 1
	tests := []struct {
		name string
		req  *wire.Command
		code wire.ResponseCode
		want int64
	}{
		{"max", request(wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: "TopicQ", QueueID: 1}, nil), wire.Success, 3},
		{"max of unknown topic", request(wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: "Nope", QueueID: 1}, nil), wire.Success, 0},
		{"max of unknown queue", request(wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: "TopicQ", QueueID: 100}, nil), wire.Success, 0},
		{"max without header", &wire.Command{Code: int32(wire.GetMaxOffset)}, wire.InvalidParameter, 0},
		{"min", request(wire.GetMinOffset, &wire.GetMinOffsetRequestHeader{Topic: "TopicQ", QueueID: 1}, nil), wire.Success, 0},
		{"search before", request(wire.SearchOffsetByTimestamp, &wire.SearchOffsetRequestHeader{Topic: "TopicQ", QueueID: 1, Timestamp: before}, nil), wire.Success, 0},
		{"search after", request(wire.SearchOffsetByTimestamp, &wire.SearchOffsetRequestHeader{Topic: "TopicQ", QueueID: 1, Timestamp: after}, nil), wire.Success, 3},
		{"search upper after", request(wire.SearchOffsetByTimestamp, &wire.SearchOffsetRequestHeader{Topic: "TopicQ", QueueID: 1, Timestamp: after, BoundaryType: wire.BoundaryUpper}, nil), wire.Success, 2},
		{"search empty queue", request(wire.SearchOffsetByTimestamp, &wire.SearchOffsetRequestHeader{Topic: "TopicQ", QueueID: 0, Timestamp: before}, nil), wire.Success, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := invoke(t, p, tt.req)
			wantCode(t, resp, tt.code)
			if got := ext(t, resp, "offset"); got != tt.want {
				t.Fatalf("offset %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLockBatchMQ(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	qs := []wire.MessageQueue{{Topic: "T", BrokerName: "broker-a", QueueID: 0}, {Topic: "T", BrokerName: "broker-a", QueueID: 1}}
	lock := func(client string, mqs []wire.MessageQueue) []wire.MessageQueue {
		body, _ := wire.EncodeJSONBody(wire.LockBatchRequestBody{ConsumerGroup: "cg", ClientID: client, MQSet: mqs})
		resp := invoke(t, p, request(wire.LockBatchMQ, nil, body))
		wantCode(t, resp, wire.Success)
		var out wire.LockBatchResponseBody
		if err := json.Unmarshal(resp.Body, &out); err != nil {
			t.Fatal(err)
		}
		return out.LockOKMQSet
	}
	if got := lock("a", qs); len(got) != 2 {
		t.Fatalf("a locked %v", got)
	}
	if got := lock("b", qs); len(got) != 0 {
		t.Fatalf("b locked %v while a holds them", got)
	}
	body, _ := wire.EncodeJSONBody(wire.LockBatchRequestBody{ConsumerGroup: "cg", ClientID: "a", MQSet: qs[:1]})
	wantCode(t, invoke(t, p, request(wire.UnlockBatchMQ, nil, body)), wire.Success)
	if got := lock("b", qs); len(got) != 1 || got[0] != qs[0] {
		t.Fatalf("b locked %v after a released queue 0", got)
	}
	wantCode(t, invoke(t, p, request(wire.LockBatchMQ, nil, []byte(`{"clientId":"x"}`))), wire.InvalidParameter)
}

// A message sent back is redelivered through the retry topic after the
// group's backoff, and goes to the dead-letter topic once it has been
// delivered maxReconsumeTimes+1 times.
func TestConsumerSendMsgBack(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	if err := h.eng.CreateGroup(meta.Group{Name: "cg", RetryBackoff: []time.Duration{10 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	h.send(p, "TopicS", 0, "fail me", "UNIQ_KEY", "id-1")
	msg := records(t, h.pull(p, pullHeader("cg", "TopicS", 0, 0)).Body)[0]
	max := int32(1)
	back := func(offset int64) *wire.Command {
		return invoke(t, p, request(wire.ConsumerSendMsgBack, &wire.ConsumerSendMsgBackRequestHeader{
			Group: "cg", Offset: offset, OriginTopic: "TopicS", OriginMsgID: "id-1", MaxReconsumeTimes: &max,
		}, nil))
	}
	wantCode(t, back(msg.CommitLogOffset), wire.Success)

	// The retry arrives after the backoff: wait for it with a long poll.
	ph := pullHeader("cg", "%RETRY%cg", 0, 0)
	ph.SysFlag |= wire.PullFlagSuspend
	ph.SuspendTimeoutMillis = 10000
	resp := h.pull(p, ph)
	wantCode(t, resp, wire.Success)
	retry := records(t, resp.Body)[0]
	if retry.UniqKey() != "id-1" || retry.ReconsumeTimes != 1 || retry.Properties["RETRY_TOPIC"] != "TopicS" {
		t.Fatalf("retry %+v", retry)
	}

	wantCode(t, back(retry.CommitLogOffset), wire.Success)
	resp = h.pull(p, pullHeader("cg", "%DLQ%cg", 0, 0))
	wantCode(t, resp, wire.Success)
	if dead := records(t, resp.Body)[0]; dead.UniqKey() != "id-1" {
		t.Fatalf("dead letter %+v", dead)
	}

	wantCode(t, back(1<<40), wire.QueryNotFound)
	wantCode(t, invoke(t, p, request(wire.ConsumerSendMsgBack, nil, nil)), wire.InvalidParameter)
}
