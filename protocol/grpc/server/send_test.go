package server

import (
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/proto"
)

func TestSendNormal(t *testing.T) {
	e := defaultPubEnv(t)
	if err := e.eng.CreateTopic(meta.Topic{Name: "T", ReadQueues: 1, WriteQueues: 1}); err != nil {
		t.Fatal(err)
	}
	m := e.msg("T", "hello", func(m *rmqpb.Message) {
		m.SystemProperties.Tag = proto.String("TagA")
		m.SystemProperties.Keys = []string{"k1", "k2"}
		m.SystemProperties.QueueId = 7 // ignored: the topic has one queue
		m.UserProperties = map[string]string{"color": "red"}
	})
	for i := range 2 {
		ent := e.send(m)
		if ent.GetMessageId() != m.GetSystemProperties().GetMessageId() || ent.GetOffset() != int64(i) ||
			ent.GetTransactionId() != "" || ent.GetRecallHandle() != "" {
			t.Fatalf("entry %d: %v", i, ent)
		}
	}
	got := e.visible("T")
	if len(got) != 2 {
		t.Fatalf("%d messages visible", len(got))
	}
	s := got[0]
	if string(s.Body) != "hello" || s.UniqKey() != m.GetSystemProperties().GetMessageId() || s.Tags() != "TagA" ||
		s.Properties["KEYS"] != "k1 k2" || s.Properties["color"] != "red" || s.Properties["__BORNHOST"] != "test-host" ||
		s.BornTimestamp != m.GetSystemProperties().GetBornTimestamp().AsTime().UnixMilli() || !s.BornHost.Addr().IsLoopback() {
		t.Fatalf("stored %+v", s)
	}
}

// Messages of one group land in one queue, in order.
func TestSendFIFO(t *testing.T) {
	e := defaultPubEnv(t)
	if err := e.eng.CreateTopic(meta.Topic{Name: "F", ReadQueues: 8, WriteQueues: 8, MessageType: meta.MessageTypeFIFO}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		e.send(e.fifo("F", string(rune('a'+i)), "order-1"))
	}
	got := e.visible("F")
	if len(got) != 10 {
		t.Fatalf("%d messages visible", len(got))
	}
	for i, m := range got {
		if m.QueueID != got[0].QueueID || string(m.Body) != string(rune('a'+i)) || m.Properties["__SHARDINGKEY"] != "order-1" {
			t.Fatalf("message %d: queue %d, body %q, properties %v", i, m.QueueID, m.Body, m.Properties)
		}
	}
	// A NORMAL message is refused by a FIFO topic.
	resp, err := e.cli.SendMessage(e.as("producer@1"), &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{e.msg("F", "x", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE)
}

func TestSendDelayAndRecall(t *testing.T) {
	e := defaultPubEnv(t)
	if err := e.eng.CreateTopic(meta.Topic{Name: "D", ReadQueues: 2, WriteQueues: 2}); err != nil {
		t.Fatal(err)
	}
	soon := e.send(e.delay("D", "soon", time.Now().Add(300*time.Millisecond)))
	later := e.send(e.delay("D", "later", time.Now().Add(time.Hour)))
	past := e.send(e.delay("D", "past", time.Now().Add(-time.Minute)))
	if soon.GetRecallHandle() == "" || later.GetRecallHandle() == "" {
		t.Fatalf("no recall handles: %v %v", soon, later)
	}
	if past.GetRecallHandle() != "" {
		t.Fatalf("a message due now has a recall handle: %v", past)
	}
	if got := e.visible("D"); len(got) != 1 || string(got[0].Body) != "past" {
		t.Fatalf("visible before the delay: %v", got)
	}

	resp, err := e.cli.RecallMessage(e.as("producer@1"), &rmqpb.RecallMessageRequest{Topic: &rmqpb.Resource{Name: "D"}, RecallHandle: later.GetRecallHandle()})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	if resp.GetMessageId() != later.GetMessageId() {
		t.Fatalf("recalled %q, want %q", resp.GetMessageId(), later.GetMessageId())
	}
	// Recalled once; the second recall finds nothing to recall.
	resp, err = e.cli.RecallMessage(e.as("producer@1"), &rmqpb.RecallMessageRequest{Topic: &rmqpb.Resource{Name: "D"}, RecallHandle: later.GetRecallHandle()})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_NOT_FOUND)

	e.eventually("the delayed message is delivered", func() bool { return len(e.visible("D")) == 2 })
	for _, m := range e.visible("D") {
		if string(m.Body) == "later" {
			t.Fatal("the recalled message was delivered")
		}
	}
	// Delivered: too late to recall.
	resp, err = e.cli.RecallMessage(e.as("producer@1"), &rmqpb.RecallMessageRequest{RecallHandle: soon.GetRecallHandle()})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_NOT_FOUND)
}

func TestSendResults(t *testing.T) {
	e := newPubEnv(t, engine.Options{}, Options{MaxBodySize: 16})
	if err := e.eng.CreateTopic(meta.Topic{Name: "T", ReadQueues: 1, WriteQueues: 1}); err != nil {
		t.Fatal(err)
	}
	send := func(msgs ...*rmqpb.Message) *rmqpb.SendMessageResponse {
		t.Helper()
		resp, err := e.cli.SendMessage(e.as("producer@1"), &rmqpb.SendMessageRequest{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// Each message gets its own entry; the response's status is theirs
	// when they agree, MULTIPLE_RESULTS when they differ.
	ok1, ok2 := e.msg("T", "a", nil), e.msg("T", "b", nil)
	resp := send(ok1, ok2)
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	if len(resp.GetEntries()) != 2 || resp.GetEntries()[1].GetMessageId() != ok2.GetSystemProperties().GetMessageId() || resp.GetEntries()[1].GetOffset() != 1 {
		t.Fatalf("entries %v", resp.GetEntries())
	}
	big := e.msg("T", "seventeen bytes!!", nil)
	resp = send(e.msg("T", "c", nil), big)
	e.want(resp.GetStatus(), rmqpb.Code_MULTIPLE_RESULTS)
	e.want(resp.GetEntries()[0].GetStatus(), rmqpb.Code_OK)
	e.want(resp.GetEntries()[1].GetStatus(), rmqpb.Code_MESSAGE_BODY_TOO_LARGE)
	if resp.GetEntries()[1].GetMessageId() != big.GetSystemProperties().GetMessageId() {
		t.Fatalf("refused entry %v", resp.GetEntries()[1])
	}
	// Without auto-creation, an unknown topic is TOPIC_NOT_FOUND.
	resp = send(e.msg("Unknown", "x", nil))
	e.want(resp.GetStatus(), rmqpb.Code_TOPIC_NOT_FOUND)
	e.want(resp.GetEntries()[0].GetStatus(), rmqpb.Code_TOPIC_NOT_FOUND)
	// Sending to the engine's own topics is forbidden.
	resp = send(e.msg("RMQ_SYS_TRANS_HALF_TOPIC", "x", nil))
	e.want(resp.GetStatus(), rmqpb.Code_FORBIDDEN)
}

// A first send to an unknown topic creates it when the engine
// auto-creates topics.
func TestSendAutoCreates(t *testing.T) {
	e := defaultPubEnv(t)
	e.send(e.msg("Brand-New", "x", nil))
	if got := e.visible("Brand-New"); len(got) != 1 {
		t.Fatalf("%d messages", len(got))
	}
}
