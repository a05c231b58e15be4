package grpc

import (
	"bytes"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// marshal returns what the codec sends for v.
func marshal(t *testing.T, v any) []byte {
	t.Helper()
	bs, err := newCodec().Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bs.Materialize()
}

// unmarshal feeds b to the codec as n buffers.
func unmarshal(t *testing.T, b []byte, n int, v any) error {
	t.Helper()
	var bs mem.BufferSlice
	for i := range n {
		bs = append(bs, mem.SliceBuffer(b[len(b)*i/n:len(b)*(i+1)/n]))
	}
	return newCodec().Unmarshal(bs, v)
}

func TestSendRequest(t *testing.T) {
	body := bytes.Repeat([]byte("b"), 1024)
	s := newSendRequest("BenchTopic", "host-1", body)
	for _, born := range []time.Time{time.UnixMilli(1700000000123), time.UnixMilli(1700000001000), time.UnixMilli(0)} {
		id := []byte("01ABCDEF0123456789000000000000002A")
		var got rmqpb.SendMessageRequest
		if err := proto.Unmarshal(marshal(t, s.encode(id, born)), &got); err != nil {
			t.Fatal(err)
		}
		want := &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{{
			Topic: &rmqpb.Resource{Name: "BenchTopic"},
			SystemProperties: &rmqpb.SystemProperties{
				MessageId:     string(id),
				BodyEncoding:  rmqpb.Encoding_IDENTITY,
				MessageType:   rmqpb.MessageType_NORMAL,
				BornTimestamp: timestamppb.New(born),
				BornHost:      "host-1",
			},
			Body: body,
		}}}
		if !proto.Equal(want, &got) {
			t.Errorf("born %v: got %v, want %v", born, &got, want)
		}
	}
}

func TestAckBuilder(t *testing.T) {
	a := newAckBuilder("G", "T")
	frames := []*rmqpb.ReceiveMessageResponse{
		{Content: &rmqpb.ReceiveMessageResponse_Status{Status: &rmqpb.Status{Code: rmqpb.Code_OK}}},
		{Content: &rmqpb.ReceiveMessageResponse_Message{Message: &rmqpb.Message{
			Topic: &rmqpb.Resource{Name: "T"},
			SystemProperties: &rmqpb.SystemProperties{
				MessageId: "id-1", ReceiptHandle: proto.String("handle-1"), Tag: proto.String("x"),
				Keys: []string{"k"}, BornTimestamp: timestamppb.Now(),
			},
			UserProperties: map[string]string{"a": "b"},
			Body:           bytes.Repeat([]byte("z"), 2000),
		}}},
		{Content: &rmqpb.ReceiveMessageResponse_Message{Message: &rmqpb.Message{
			SystemProperties: &rmqpb.SystemProperties{MessageId: "id-2", ReceiptHandle: proto.String("handle-2")},
		}}},
	}
	for round := range 2 { // entries start again after reset
		a.reset()
		for i, f := range frames {
			b, err := proto.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := unmarshal(t, b, 1+i%3, a); err != nil {
				t.Fatalf("round %d, frame %d: %v", round, i, err)
			}
		}
		if a.code != rmqpb.Code_OK || a.entries != 2 {
			t.Fatalf("round %d: code %s, %d entries", round, a.code, a.entries)
		}
		var got rmqpb.AckMessageRequest
		if err := proto.Unmarshal(marshal(t, a.request()), &got); err != nil {
			t.Fatal(err)
		}
		want := &rmqpb.AckMessageRequest{
			Group: &rmqpb.Resource{Name: "G"},
			Topic: &rmqpb.Resource{Name: "T"},
			Entries: []*rmqpb.AckMessageEntry{
				{MessageId: "id-1", ReceiptHandle: "handle-1"},
				{MessageId: "id-2", ReceiptHandle: "handle-2"},
			},
		}
		if !proto.Equal(want, &got) {
			t.Errorf("round %d: got %v, want %v", round, &got, want)
		}
	}

	a.reset()
	b, _ := proto.Marshal(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{
		Status: &rmqpb.Status{Code: rmqpb.Code_MESSAGE_NOT_FOUND, Message: "none"},
	}})
	if err := unmarshal(t, b, 1, a); err != nil || a.code != rmqpb.Code_MESSAGE_NOT_FOUND || a.msg != "none" || a.entries != 0 {
		t.Fatalf("not found: %v, code %s %q, %d entries", err, a.code, a.msg, a.entries)
	}
	b, _ = proto.Marshal(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Message{Message: &rmqpb.Message{
		SystemProperties: &rmqpb.SystemProperties{MessageId: "id"},
	}}})
	if err := unmarshal(t, b, 1, a); err == nil {
		t.Fatal("a message without a receipt handle was accepted")
	}
	if err := unmarshal(t, []byte{0x12, 0x05, 0x1a}, 1, a); err == nil {
		t.Fatal("a truncated response was accepted")
	}
}

func TestReply(t *testing.T) {
	ok := &rmqpb.Status{Code: rmqpb.Code_OK}
	busy := &rmqpb.Status{Code: rmqpb.Code_TOO_MANY_REQUESTS, Message: "busy"}
	cases := []struct {
		name string
		resp proto.Message
		r    reply
		code rmqpb.Code
		msg  string
	}{
		{"send ok", &rmqpb.SendMessageResponse{Status: ok, Entries: []*rmqpb.SendResultEntry{{Status: ok, MessageId: "m", Offset: 7}}}, reply{entryStatus: fieldSendEntryStatus}, rmqpb.Code_OK, ""},
		{"send entry fails", &rmqpb.SendMessageResponse{Status: ok, Entries: []*rmqpb.SendResultEntry{{Status: ok}, {Status: busy}}}, reply{entryStatus: fieldSendEntryStatus}, rmqpb.Code_TOO_MANY_REQUESTS, "busy"},
		{"send fails", &rmqpb.SendMessageResponse{Status: &rmqpb.Status{Code: rmqpb.Code_BAD_REQUEST, Message: "bad"}}, reply{entryStatus: fieldSendEntryStatus}, rmqpb.Code_BAD_REQUEST, "bad"},
		{"ack ok", &rmqpb.AckMessageResponse{Status: ok, Entries: []*rmqpb.AckMessageResultEntry{{MessageId: "m", ReceiptHandle: "h", Status: ok}}}, reply{entryStatus: fieldAckEntryStatus}, rmqpb.Code_OK, ""},
		{"ack entry fails", &rmqpb.AckMessageResponse{Status: &rmqpb.Status{Code: rmqpb.Code_MULTIPLE_RESULTS}, Entries: []*rmqpb.AckMessageResultEntry{{Status: ok}, {Status: &rmqpb.Status{Code: rmqpb.Code_INVALID_RECEIPT_HANDLE}}}}, reply{entryStatus: fieldAckEntryStatus}, rmqpb.Code_INVALID_RECEIPT_HANDLE, ""},
	}
	for _, c := range cases {
		b, err := proto.Marshal(c.resp)
		if err != nil {
			t.Fatal(err)
		}
		r := c.r
		r.code = rmqpb.Code_INTERNAL_ERROR // a previous answer is forgotten
		if err := unmarshal(t, b, 2, &r); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.code != c.code || r.msg != c.msg || (r.err("x") == nil) != (c.code == rmqpb.Code_OK) {
			t.Errorf("%s: code %s %q, err %v", c.name, r.code, r.msg, r.err("x"))
		}
	}
}

// Other messages go through protocol buffers.
func TestCodecFallback(t *testing.T) {
	in := &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "T"}}
	var out rmqpb.QueryRouteRequest
	if err := unmarshal(t, marshal(t, in), 2, &out); err != nil || out.GetTopic().GetName() != "T" {
		t.Fatalf("%v, %v", &out, err)
	}
	if newCodec().Name() != "proto" {
		t.Fatal("the codec is not protocol buffers to the server")
	}
}
