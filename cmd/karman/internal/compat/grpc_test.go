//go:build !race && unix

package compat

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// The gRPC front-end against the RocketMQ Node.js client: each test runs
// scripts of testdata/node (see lib.js there) and checks what they sent
// and received.

// outMessage is a message a Node producer sends (send.js).
type outMessage struct {
	Body       string            `json:"body"`
	Repeat     int               `json:"repeat,omitempty"`
	Tag        string            `json:"tag,omitempty"`
	Keys       []string          `json:"keys,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
	Group      string            `json:"group,omitempty"`
	DelayMs    int64             `json:"delayMs,omitempty"`
}

// body returns the body the message is sent with.
func (m outMessage) body() string {
	if m.Repeat > 1 {
		return strings.Repeat(m.Body, m.Repeat)
	}
	return m.Body
}

// sentMessage is send.js's receipt for one message.
type sentMessage struct {
	Body      string `json:"body"`
	ID        string `json:"id"`
	Offset    int64  `json:"offset"`
	DeliverAt int64  `json:"deliverAt"`
}

// nodeMessage is a message as a Node consumer received it (view in
// lib.js).
type nodeMessage struct {
	ID         string            `json:"id"`
	Topic      string            `json:"topic"`
	Body       string            `json:"body"`
	Tag        string            `json:"tag"`
	Keys       []string          `json:"keys"`
	Group      string            `json:"group"`
	Properties map[string]string `json:"properties"`
	Attempt    int               `json:"attempt"`
	Corrupted  bool              `json:"corrupted"`
	BornAt     int64             `json:"bornAt"`
	DeliverAt  int64             `json:"deliverAt"`
	ReceivedAt int64             `json:"receivedAt"`
}

func (m nodeMessage) String() string {
	b := m.Body
	if len(b) > 40 {
		b = b[:40] + "..."
	}
	return fmt.Sprintf("%s{id %s tag %q keys %q group %q props %v attempt %d corrupted %v}", b, m.ID, m.Tag, m.Keys, m.Group, m.Properties, m.Attempt, m.Corrupted)
}

// createTypedTopic creates a topic that takes one message type (NORMAL,
// FIFO, DELAY or TRANSACTION).
func (k *karman) createTypedTopic(topic string, queues int32, typ string) {
	k.t.Helper()
	k.createTopic(topic, queues, wire.TopicAttribute{Key: "message.type", Value: typ})
}

// nodeSend sends msgs in order with a Node producer.
func (k *karman) nodeSend(topic string, msgs []outMessage) []sentMessage {
	k.t.Helper()
	var res struct {
		Sent []sentMessage `json:"sent"`
	}
	k.node("send", map[string]any{"topic": topic, "messages": msgs}, &res)
	if len(res.Sent) != len(msgs) {
		k.t.Fatalf("send.js sent %d messages, want %d", len(res.Sent), len(msgs))
	}
	return res.Sent
}

// nodeReceive receives with a Node simple consumer (simple.js) until the
// condition in params holds, and returns every delivery.
func (k *karman) nodeReceive(params map[string]any) []nodeMessage {
	k.t.Helper()
	var res struct {
		Received []nodeMessage `json:"received"`
	}
	k.node("simple", params, &res)
	return res.Received
}

// checkDelivered fails the test unless got holds every message of want
// exactly once, each as it was sent: id, tag, keys and properties intact,
// on its first delivery attempt, with a correct body digest.
func checkDelivered(t *testing.T, topic string, want []outMessage, sent []sentMessage, got []nodeMessage) {
	t.Helper()
	byBody := map[string][]nodeMessage{}
	for _, m := range got {
		byBody[m.Body] = append(byBody[m.Body], m)
	}
	for i, w := range want {
		ms := byBody[w.body()]
		if len(ms) != 1 {
			t.Errorf("%.40s delivered %d times, want once", w.body(), len(ms))
			continue
		}
		m := ms[0]
		if m.ID != sent[i].ID || m.Topic != topic || m.Tag != w.Tag || !slices.Equal(m.Keys, w.Keys) ||
			!maps.Equal(m.Properties, w.Properties) || m.Group != w.Group || m.Attempt != 1 || m.Corrupted || m.BornAt == 0 {
			t.Errorf("sent %.40s as id %s tag %q keys %q group %q properties %v;\nreceived %v on %s", w.body(), sent[i].ID, w.Tag, w.Keys, w.Group, w.Properties, m, m.Topic)
		}
		delete(byBody, w.body())
	}
	for body := range byBody {
		t.Errorf("received %.40s, which was never sent", body)
	}
}

// TestGRPCProducer: a Node producer's messages, with tags, keys and
// properties, reach a Node simple consumer intact.
func TestGRPCProducer(t *testing.T) {
	testGRPCProducer(t, startKarman(t))
}

func testGRPCProducer(t *testing.T, k *karman) {
	const topic, group = "GrpcNormal", "grpc-normal"
	k.createTypedTopic(topic, 4, "NORMAL")
	var out []outMessage
	for i := range 24 {
		out = append(out, outMessage{
			Body:       "normal-" + strconv.Itoa(i),
			Tag:        []string{"TagA", "TagB", "TagC"}[i%3],
			Keys:       []string{"key-" + strconv.Itoa(i), "shared"},
			Properties: map[string]string{"index": strconv.Itoa(i), "region": "eu"},
		})
	}
	out = append(out,
		outMessage{Body: "bare"},                                   // no tag, keys or properties
		outMessage{Body: "large-", Repeat: 40 << 10, Tag: "large"}, // 240 KiB
	)
	sent := k.nodeSend(topic, out)
	got := k.nodeReceive(map[string]any{"topic": topic, "group": group, "count": len(out)})
	checkDelivered(t, topic, out, sent, got)

	// The keys are indexed for look-ups over the other protocol.
	resp := k.invoke(wire.QueryMessage, &wire.QueryMessageRequestHeader{Topic: topic, Key: "shared", MaxNum: 64,
		EndTimestamp: time.Now().UnixMilli() + 1000}, nil)
	if resp.ResponseCode() != wire.Success || bytes.Count(resp.Body, []byte("normal-")) != 24 {
		t.Errorf("query by key: %s %s, %d messages", resp.ResponseCode(), resp.Remark, bytes.Count(resp.Body, []byte("normal-")))
	}
}
