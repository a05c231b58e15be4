package convert

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/proto"
)

// AppendMessage writes what Deliver builds, for every kind of record the
// other tests use.
func TestAppendMessageMatchesDeliver(t *testing.T) {
	z := zlibBytes(t, bytes.Repeat([]byte("z"), 5000))
	long := string(bytes.Repeat([]byte("p"), 20000)) // a 3-byte length of the system properties
	recs := map[string][]byte{
		"plain":      stored(t, "T", []byte("hello"), 0),
		"empty body": stored(t, "T", nil, 0),
		"everything": stored(t, "T", []byte("b"), 0,
			message.PropertyTags, "TagA", message.PropertyKeys, " k1  k2 ", message.PropertyUniqKey, "ID",
			message.PropertyBornHost, "host", message.PropertyTraceContext, "", message.PropertyShardingKey, "",
			message.PropertyTimerDeliverMS, "1700000000001", "u1", "v1", "u2", "", "__RMQ.TRANSIENT.x", "y"),
		"empty tag": stored(t, "T", []byte("b"), 0, message.PropertyTags, ""),
		"retry":     stored(t, "%RETRY%G", []byte("b"), 0, message.PropertyRetryTopic, "Orders"),
		"dead letter": stored(t, "%DLQ%G", []byte("b"), 0,
			message.PropertyDLQOriginTopic, "Orders", message.PropertyDLQOriginMessageID, "ID"),
		"timer source": stored(t, "T", []byte("b"), 0, "TIMER_SRC", "1700000000999,12"),
		"compressed":   stored(t, "T", z, message.SysFlagCompressed),
		"invalid utf8": stored(t, "T", []byte("b"), 0, message.PropertyTags, "\xff", "k\xfe", "v"),
		"long trace":   stored(t, "T", []byte("b"), 0, message.PropertyTraceContext, long),
		"before 1970": func() []byte {
			m := &message.Message{Topic: "T", Body: []byte("b"), BornTimestamp: -1500, StoreTimestamp: -1}
			rec, err := message.AppendStored(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}(),
	}
	deliveries := []Delivery{
		{},
		{Topic: "T", Namespace: "ns", Handle: "handle", Attempt: 3, Invisible: 1500 * time.Millisecond},
		{Topic: "Orders", Invisible: time.Minute},
	}
	for name, rec := range recs {
		for _, d := range deliveries {
			m, err := Deliver(rec, d)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			t.Run(name, func(t *testing.T) { checkWire(t, rec, d, m) })
		}
	}
}

func TestAppendMessageCorrupt(t *testing.T) {
	rec := stored(t, "T", []byte("b"), 0)
	b, err := AppendMessage([]byte("x"), rec[:len(rec)-2], Delivery{})
	if !errors.Is(err, ErrCorrupt) || string(b) != "x" {
		t.Fatalf("got %q, %v", b, err)
	}
}

// BenchmarkDeliverMarshal is the cost AppendMessage saves: building the
// message, then marshalling it.
func BenchmarkDeliverMarshal(b *testing.B) {
	rec, d := benchRecord(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		m, err := Deliver(rec, d)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := proto.Marshal(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Message{Message: m}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMessage(b *testing.B) {
	rec, d := benchRecord(b)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if _, err := AppendMessage(buf[:0], rec, d); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRecord(b *testing.B) ([]byte, Delivery) {
	rec := stored(b, "T", bytes.Repeat([]byte("x"), 1024), 0,
		message.PropertyTags, "TagA", message.PropertyKeys, "k1", message.PropertyUniqKey, "01A0B1C2D3E4F5330A07A1B2C300000000",
		"a", "1", "b", "2")
	return rec, Delivery{Topic: "T", Handle: "1 T 0 1 2 3 0011223344556677", Attempt: 1, Invisible: time.Minute}
}
