//go:build !race && unix

package compat

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// TestGRPCToRemoting: messages a Node producer sends over gRPC reach a Go
// push consumer over remoting with id, body, tag, keys, message group and
// properties intact; the delayed one no earlier than its delivery time.
func TestGRPCToRemoting(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "GrpcToRemoting"
	k.createTopic(topic, 2)
	var out []outMessage
	for i := range 10 {
		out = append(out, outMessage{
			Body:       "to-remoting-" + strconv.Itoa(i),
			Tag:        "from-grpc",
			Keys:       []string{"key-" + strconv.Itoa(i), "cross"},
			Properties: map[string]string{"index": strconv.Itoa(i), "origin": "node"},
		})
	}
	out = append(out,
		outMessage{Body: "bare"},
		outMessage{Body: "ordered", Tag: "from-grpc", Group: "order-1"},
		outMessage{Body: "large-", Repeat: 2 << 10, Tag: "from-grpc"}, // 12 KiB
		outMessage{Body: "delayed", Tag: "from-grpc", DelayMs: 1000},
	)
	sent := k.nodeSend(topic, out)

	got := newReceived()
	var delayedAt time.Time
	k.pushConsumer("grpc-to-remoting", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		for _, m := range msgs {
			if string(m.Body) == "delayed" {
				got.mu.Lock()
				delayedAt = time.Now()
				got.mu.Unlock()
			}
		}
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	got.waitFor(t, "every message", time.Minute, func() bool { return got.distinct() == len(out) })
	got.mu.Lock()
	defer got.mu.Unlock()
	byBody := map[string]*primitive.MessageExt{}
	for _, m := range got.msgs {
		byBody[string(m.Body)] = m
	}
	for i, w := range out {
		m := byBody[w.body()]
		if n := got.bySeq[w.body()]; n != 1 {
			t.Errorf("%.40s delivered %d times", w.body(), n)
		}
		if m == nil {
			continue
		}
		props := map[string]string{}
		for key := range w.Properties {
			props[key] = m.GetProperty(key)
		}
		if sent[i].DeliverAt != 0 {
			if early := time.UnixMilli(sent[i].DeliverAt).Sub(delayedAt); early > 0 {
				t.Errorf("%s arrived %s before its delivery time", w.Body, early)
			}
		}
		if m.MsgId != sent[i].ID || m.Topic != topic || m.GetTags() != w.Tag || m.GetKeys() != strings.Join(w.Keys, " ") ||
			m.GetProperty(message.PropertyShardingKey) != w.Group || !maps.Equal(props, w.Properties) ||
			m.ReconsumeTimes != 0 || m.BornTimestamp == 0 {
			t.Errorf("sent %.40s as id %s tag %q keys %q group %q properties %v;\nreceived id %s on %s tag %q keys %q properties %v",
				w.body(), sent[i].ID, w.Tag, w.Keys, w.Group, w.Properties, m.MsgId, m.Topic, m.GetTags(), m.GetKeys(), m.GetProperties())
		}
	}
}

// TestCompressedBodiesToGRPC: bodies a RocketMQ Java client sends
// compressed with each of its codecs (zlib, LZ4 frame, zstd frame, named
// in SYSFLAG's compression type) reach a Node simple consumer inflated,
// with a digest the client accepts. The test's own remoting client sends
// them as the Java producer does, since the Go client only knows zlib.
func TestCompressedBodiesToGRPC(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "CompressedToGrpc"
	k.createTopic(topic, 1)
	codecs := []struct {
		name     string
		sysFlag  int32
		compress func([]byte) ([]byte, error)
	}{
		{"zlib", message.SysFlagCompressed | message.SysFlagCompressionZlib, zlibCompress},
		{"lz4", message.SysFlagCompressed | message.SysFlagCompressionLZ4, lz4Compress},
		{"zstd", message.SysFlagCompressed | message.SysFlagCompressionZstd, zstdCompress},
	}
	want := map[string]bool{}
	for i, c := range codecs {
		body := strings.Repeat(c.name+"-compressed-", 1<<9)
		z, err := c.compress([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		props := message.AppendProperties(nil, map[string]string{
			message.PropertyUniqKey: fmt.Sprintf("C0A80001000018B4AAC2%012X", i),
			message.PropertyTags:    c.name,
		})
		resp := k.invoke(wire.SendMessageV2, &wire.SendMessageRequestHeader{
			ProducerGroup: "java-style", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
			SysFlag: c.sysFlag, BornTimestamp: time.Now().UnixMilli(), Properties: string(props),
		}, z)
		if resp.ResponseCode() != wire.Success {
			t.Fatalf("send %s: %s %s", c.name, resp.ResponseCode(), resp.Remark)
		}
		want[body] = true
	}
	got := k.nodeReceive(map[string]any{"topic": topic, "group": "compressed-to-grpc", "count": len(want)})
	for body, ms := range deliveriesOf(got) {
		if !want[body] {
			t.Errorf("received a body of %d bytes that was not sent: %.40q", len(body), body)
			continue
		}
		if len(ms) != 1 || ms[0].Corrupted {
			t.Errorf("%.20s… delivered %d times, corrupted %v", body, len(ms), len(ms) > 0 && ms[0].Corrupted)
		}
		delete(want, body)
	}
	for body := range want {
		t.Errorf("%.20s… was not delivered inflated", body)
	}
}

func zlibCompress(b []byte) ([]byte, error) {
	return compressWith(b, func(w io.Writer) (io.WriteCloser, error) { return zlib.NewWriter(w), nil })
}

func lz4Compress(b []byte) ([]byte, error) {
	return compressWith(b, func(w io.Writer) (io.WriteCloser, error) { return lz4.NewWriter(w), nil })
}

func zstdCompress(b []byte) ([]byte, error) {
	return compressWith(b, func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) })
}

// compressWith writes b through the writer open makes and returns what
// it wrote.
func compressWith(b []byte, open func(io.Writer) (io.WriteCloser, error)) ([]byte, error) {
	var buf bytes.Buffer
	w, err := open(&buf)
	if err != nil {
		return nil, err
	}
	w.Write(b)
	err = w.Close()
	return buf.Bytes(), err
}

// TestRemotingToGRPC: messages a Go producer sends over remoting (single,
// batched, and a body large enough for the Go client to compress) reach a
// Node simple consumer over gRPC with id, body, tag, keys and user
// properties intact, and no broker-internal property.
func TestRemotingToGRPC(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic = "RemotingToGrpc"
	k.createTopic(topic, 2)
	p := k.producer()
	var want []outMessage
	var ids []string
	newMessage := func(w outMessage) *primitive.Message {
		m := primitive.NewMessage(topic, []byte(w.body()))
		if w.Tag != "" {
			m.WithTag(w.Tag)
		}
		if len(w.Keys) > 0 {
			m.WithKeys(w.Keys)
		}
		for key, value := range w.Properties {
			m.WithProperty(key, value)
		}
		want = append(want, w)
		return m
	}
	for i := range 8 {
		res := p.send(newMessage(outMessage{
			Body:       "to-grpc-" + strconv.Itoa(i),
			Tag:        "from-remoting",
			Keys:       []string{"key-" + strconv.Itoa(i), "cross"},
			Properties: map[string]string{"index": strconv.Itoa(i), "origin": "go"},
		}))
		ids = append(ids, res.MsgID)
	}
	res := p.send(newMessage(outMessage{Body: "bare"}))
	ids = append(ids, res.MsgID)
	// Above 4 KiB the Go client sends the body zlib-compressed.
	res = p.send(newMessage(outMessage{Body: "compressed-", Repeat: 1 << 10, Tag: "from-remoting"}))
	ids = append(ids, res.MsgID)
	// The Go client gives a batch one id and its messages none: the
	// broker gives each one.
	p.send(
		newMessage(outMessage{Body: "batch-0", Tag: "batched", Properties: map[string]string{"in": "batch"}}),
		newMessage(outMessage{Body: "batch-1", Tag: "batched", Properties: map[string]string{"in": "batch"}}),
	)
	ids = append(ids, "", "")

	got := k.nodeReceive(map[string]any{"topic": topic, "group": "remoting-to-grpc", "count": len(want)})
	byBody := deliveriesOf(got)
	seen := map[string]bool{}
	for i, w := range want {
		ms := byBody[w.body()]
		if len(ms) != 1 {
			t.Errorf("%.40s delivered %d times, want once", w.body(), len(ms))
			continue
		}
		m := ms[0]
		props := w.Properties
		if props == nil {
			props = map[string]string{}
		}
		if ids[i] == "" {
			ids[i] = m.ID // any id the other deliveries do not have
			if m.ID == "" || seen[m.ID] {
				t.Errorf("batched message %s delivered with id %q", w.body(), m.ID)
			}
		}
		seen[m.ID] = true
		if m.ID != ids[i] || m.Topic != topic || m.Tag != w.Tag || !slices.Equal(m.Keys, w.Keys) ||
			!maps.Equal(m.Properties, props) || m.Attempt != 1 || m.Corrupted || m.BornAt == 0 {
			t.Errorf("sent %.40s as id %s tag %q keys %q properties %v;\nreceived %v on %s", w.body(), ids[i], w.Tag, w.Keys, props, m, m.Topic)
		}
	}
}
