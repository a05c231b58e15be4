package convert

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const testID = "01A0B1C2D3E4F5330A07A1B2C300000000"

// pubMsg returns a valid NORMAL message that edit may change.
func pubMsg(edit func(m *rmqpb.Message)) *rmqpb.Message {
	m := &rmqpb.Message{
		Topic: &rmqpb.Resource{Name: "T"},
		Body:  []byte("hello"),
		SystemProperties: &rmqpb.SystemProperties{
			MessageId:     testID,
			MessageType:   rmqpb.MessageType_NORMAL,
			BodyEncoding:  rmqpb.Encoding_IDENTITY,
			BornHost:      "node-host",
			BornTimestamp: timestamppb.New(time.UnixMilli(1_700_000_000_123)),
		},
	}
	if edit != nil {
		edit(m)
	}
	return m
}

func gz(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPublishProperties(t *testing.T) {
	born := netip.MustParseAddrPort("10.0.0.7:51000")
	due := time.UnixMilli(1_900_000_000_000)
	tests := []struct {
		name    string
		msg     *rmqpb.Message
		props   map[string]string // expected, besides UNIQ_KEY, __BORNHOST, BORN_TIMESTAMP
		sysFlag int32
	}{
		{
			name: "normal with tag, keys and user properties",
			msg: pubMsg(func(m *rmqpb.Message) {
				m.SystemProperties.Tag = proto.String("TagA")
				m.SystemProperties.Keys = []string{"k1", "k2"}
				m.UserProperties = map[string]string{"color": "red", "SHARDING_KEY": "go-key"}
				m.SystemProperties.TraceContext = proto.String("00-abc-01")
				m.SystemProperties.QueueId = 5 // ignored
			}),
			props: map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "color": "red", "SHARDING_KEY": "go-key", "TRACE_CONTEXT": "00-abc-01"},
		},
		{
			name: "fifo",
			msg: pubMsg(func(m *rmqpb.Message) {
				m.SystemProperties.MessageType = rmqpb.MessageType_FIFO
				m.SystemProperties.MessageGroup = proto.String("order-42")
			}),
			props: map[string]string{"__SHARDINGKEY": "order-42"},
		},
		{
			name: "delay",
			msg: pubMsg(func(m *rmqpb.Message) {
				m.SystemProperties.MessageType = rmqpb.MessageType_DELAY
				m.SystemProperties.DeliveryTimestamp = timestamppb.New(due)
			}),
			props: map[string]string{"TIMER_DELIVER_MS": "1900000000000"},
		},
		{
			name: "transaction",
			msg: pubMsg(func(m *rmqpb.Message) {
				m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION
				m.SystemProperties.OrphanedTransactionRecoveryDuration = durationpb.New(2500 * time.Millisecond)
			}),
			props:   map[string]string{"TRAN_MSG": "true", "PGROUP": "T", "CHECK_IMMUNITY_TIME_IN_SECONDS": "3"},
			sysFlag: message.SysFlagTransactionPrepared,
		},
		{
			name: "unspecified type with a group is FIFO",
			msg: pubMsg(func(m *rmqpb.Message) {
				m.SystemProperties.MessageType = rmqpb.MessageType_MESSAGE_TYPE_UNSPECIFIED
				m.SystemProperties.MessageGroup = proto.String("g")
			}),
			props: map[string]string{"__SHARDINGKEY": "g"},
		},
		{
			name: "empty lite topic and zero priority, as the Node.js client sends them",
			msg: pubMsg(func(m *rmqpb.Message) {
				m.SystemProperties.LiteTopic = proto.String("")
				m.SystemProperties.Priority = proto.Int32(0)
			}),
			props: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Publish(tt.msg, PublishOptions{MaxBodySize: 1024, BornHost: born})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"UNIQ_KEY": testID, "__BORNHOST": "node-host", "BORN_TIMESTAMP": "1700000000123"}
			for k, v := range tt.props {
				want[k] = v
			}
			if len(got.Properties) != len(want) {
				t.Errorf("properties %v, want %v", got.Properties, want)
			}
			for k, v := range want {
				if got.Properties[k] != v {
					t.Errorf("%s = %q, want %q", k, got.Properties[k], v)
				}
			}
			if got.Topic != "T" || string(got.Body) != "hello" || got.BornTimestamp != 1_700_000_000_123 || got.BornHost != born {
				t.Errorf("message %+v", got)
			}
			if got.SysFlag != tt.sysFlag {
				t.Errorf("sysFlag %#x, want %#x", got.SysFlag, tt.sysFlag)
			}
		})
	}
}

func TestPublishBornHostFallsBackToPeer(t *testing.T) {
	born := netip.MustParseAddrPort("10.0.0.7:51000")
	got, err := Publish(pubMsg(func(m *rmqpb.Message) {
		m.SystemProperties.BornHost = ""
		m.SystemProperties.BornTimestamp = nil
	}), PublishOptions{BornHost: born})
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties["__BORNHOST"] != "10.0.0.7:51000" || got.BornTimestamp != 0 {
		t.Errorf("properties %v, born %d", got.Properties, got.BornTimestamp)
	}
	if _, ok := got.Properties["BORN_TIMESTAMP"]; ok {
		t.Error("BORN_TIMESTAMP set without a born timestamp")
	}
}

func TestPublishGzipBody(t *testing.T) {
	body := bytes.Repeat([]byte("abcdefgh"), 100)
	got, err := Publish(pubMsg(func(m *rmqpb.Message) {
		m.Body = gz(t, body)
		m.SystemProperties.BodyEncoding = rmqpb.Encoding_GZIP
	}), PublishOptions{MaxBodySize: 800})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Body, body) || got.SysFlag&message.SysFlagCompressed != 0 {
		t.Errorf("body %d bytes, sysFlag %#x", len(got.Body), got.SysFlag)
	}
	_, err = Publish(pubMsg(func(m *rmqpb.Message) {
		m.Body = gz(t, body)
		m.SystemProperties.BodyEncoding = rmqpb.Encoding_GZIP
	}), PublishOptions{MaxBodySize: 799})
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("inflating past the limit: %v, want ErrBodyTooLarge", err)
	}
}

func TestPublishDoesNotModifyInput(t *testing.T) {
	m := pubMsg(func(m *rmqpb.Message) {
		m.UserProperties = map[string]string{"a": "b"}
		m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION
	})
	before := proto.Clone(m)
	if _, err := Publish(m, PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(m, before) {
		t.Error("Publish changed its argument")
	}
}

func TestPublishRejects(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		name string
		msg  *rmqpb.Message
		want error
	}{
		{"nil message", nil, ErrMissingField},
		{"no topic", pubMsg(func(m *rmqpb.Message) { m.Topic = nil }), ErrIllegalTopic},
		{"empty topic", pubMsg(func(m *rmqpb.Message) { m.Topic.Name = "" }), ErrIllegalTopic},
		{"bad topic", pubMsg(func(m *rmqpb.Message) { m.Topic.Name = "a b" }), ErrIllegalTopic},
		{"no system properties", pubMsg(func(m *rmqpb.Message) { m.SystemProperties = nil }), ErrIllegalMessageID},
		{"empty message id", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageId = "" }), ErrIllegalMessageID},
		{"blank message id", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageId = "  " }), ErrIllegalMessageID},
		{"long message id", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageId = long }), ErrIllegalMessageID},
		{"control in message id", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageId = "a\x01b" }), ErrIllegalMessageID},
		{"empty body", pubMsg(func(m *rmqpb.Message) { m.Body = nil }), ErrEmptyBody},
		{"body too large", pubMsg(func(m *rmqpb.Message) { m.Body = make([]byte, 11) }), ErrBodyTooLarge},
		{"corrupt gzip", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.BodyEncoding = rmqpb.Encoding_GZIP }), ErrCorruptedBody},
		{"unknown encoding", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.BodyEncoding = 9 }), ErrCorruptedBody},
		{"empty tag", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.Tag = proto.String("") }), ErrIllegalTag},
		{"blank tag", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.Tag = proto.String(" \t") }), ErrIllegalTag},
		{"tag with bar", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.Tag = proto.String("a|b") }), ErrIllegalTag},
		{"tag with control", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.Tag = proto.String("a\nb") }), ErrIllegalTag},
		{"empty key", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.Keys = []string{"k", ""} }), ErrIllegalKey},
		{"key with control", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.Keys = []string{"k\x7f"} }), ErrIllegalKey},
		{"empty group", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_FIFO
			m.SystemProperties.MessageGroup = proto.String("")
		}), ErrIllegalGroup},
		{"long group", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_FIFO
			m.SystemProperties.MessageGroup = proto.String(long)
		}), ErrIllegalGroup},
		{"group with control", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_FIFO
			m.SystemProperties.MessageGroup = proto.String("g\x00")
		}), ErrIllegalGroup},
		{"system property as user property", pubMsg(func(m *rmqpb.Message) { m.UserProperties = map[string]string{"DELAY": "3"} }), ErrIllegalPropertyKey},
		{"transient property", pubMsg(func(m *rmqpb.Message) {
			m.UserProperties = map[string]string{message.PropertyTransientPrefix + "x": "1"}
		}), ErrIllegalPropertyKey},
		{"empty property key", pubMsg(func(m *rmqpb.Message) { m.UserProperties = map[string]string{"": "v"} }), ErrIllegalPropertyKey},
		{"property key with control", pubMsg(func(m *rmqpb.Message) { m.UserProperties = map[string]string{"a\x02": "v"} }), ErrIllegalPropertyKey},
		{"property value with separator", pubMsg(func(m *rmqpb.Message) { m.UserProperties = map[string]string{"a": "v\x01"} }), ErrIllegalProperty},
		{"properties too large", pubMsg(func(m *rmqpb.Message) { m.UserProperties = map[string]string{"big": strings.Repeat("v", 40000)} }), ErrPropertiesTooLarge},
		{"born host with separator", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.BornHost = "h\x02" }), ErrIllegalProperty},
		{"invalid delivery time", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_DELAY
			m.SystemProperties.DeliveryTimestamp = &timestamppb.Timestamp{Seconds: 1, Nanos: -5}
		}), ErrIllegalDelivery},
		{"delivery time before 1970", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_DELAY
			m.SystemProperties.DeliveryTimestamp = &timestamppb.Timestamp{Seconds: -10}
		}), ErrIllegalDelivery},
		{"negative recovery duration", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION
			m.SystemProperties.OrphanedTransactionRecoveryDuration = durationpb.New(-time.Second)
		}), ErrIllegalProperty},
		{"normal with group", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageGroup = proto.String("g") }), ErrTypeConflict},
		{"normal with delivery time", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.DeliveryTimestamp = timestamppb.Now() }), ErrTypeConflict},
		{"fifo without group", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageType = rmqpb.MessageType_FIFO }), ErrTypeConflict},
		{"fifo with delivery time", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_FIFO
			m.SystemProperties.MessageGroup = proto.String("g")
			m.SystemProperties.DeliveryTimestamp = timestamppb.Now()
		}), ErrTypeConflict},
		{"delay without delivery time", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageType = rmqpb.MessageType_DELAY }), ErrTypeConflict},
		{"delay with group", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_DELAY
			m.SystemProperties.DeliveryTimestamp = timestamppb.Now()
			m.SystemProperties.MessageGroup = proto.String("g")
		}), ErrTypeConflict},
		{"transaction with group", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION
			m.SystemProperties.MessageGroup = proto.String("g")
		}), ErrTypeConflict},
		{"transaction with delivery time", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION
			m.SystemProperties.DeliveryTimestamp = timestamppb.Now()
		}), ErrTypeConflict},
		{"unspecified with group and delivery time", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_MESSAGE_TYPE_UNSPECIFIED
			m.SystemProperties.MessageGroup = proto.String("g")
			m.SystemProperties.DeliveryTimestamp = timestamppb.Now()
		}), ErrTypeConflict},
		{"lite", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_LITE
			m.SystemProperties.LiteTopic = proto.String("lt")
		}), ErrUnsupportedType},
		{"lite topic on a normal message", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.LiteTopic = proto.String("lt") }), ErrUnsupportedType},
		{"priority", pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_PRIORITY
			m.SystemProperties.Priority = proto.Int32(3)
		}), ErrUnsupportedType},
		{"unknown type", pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageType = 42 }), ErrUnsupportedType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Publish(tt.msg, PublishOptions{MaxBodySize: 10})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Publish = %v, %v; want %v", got, err, tt.want)
			}
			if n := matching(err); n != 1 {
				t.Errorf("%v matches %d errors of the package, want 1", err, n)
			}
		})
	}
}

// publishErrors are the errors Publish may wrap.
var publishErrors = []error{
	ErrMissingField, ErrIllegalTopic, ErrIllegalMessageID, ErrIllegalTag, ErrIllegalKey,
	ErrIllegalGroup, ErrIllegalPropertyKey, ErrIllegalProperty, ErrIllegalDelivery, ErrEmptyBody,
	ErrBodyTooLarge, ErrCorruptedBody, ErrPropertiesTooLarge, ErrTypeConflict, ErrUnsupportedType,
}

func matching(err error) int {
	n := 0
	for _, e := range publishErrors {
		if errors.Is(err, e) {
			n++
		}
	}
	return n
}

func TestIsSystemProperty(t *testing.T) {
	for _, k := range []string{"UNIQ_KEY", "TAGS", "DELAY", "TIMER_DELIVER_MS", "TRAN_MSG", "PGROUP", "__SHARDINGKEY", "TRAN_SRC", "TIMER_SRC", "__RMQ.TRANSIENT.x"} {
		if !IsSystemProperty(k) {
			t.Errorf("IsSystemProperty(%q) = false", k)
		}
	}
	for _, k := range []string{"color", "SHARDING_KEY", "uniq_key"} {
		if IsSystemProperty(k) {
			t.Errorf("IsSystemProperty(%q) = true", k)
		}
	}
}

// FuzzPublish unmarshals arbitrary bytes into a message and converts it:
// Publish must never panic, and must either accept the message (with a
// result the engine can encode) or reject it with exactly one of its
// errors.
func FuzzPublish(f *testing.F) {
	for _, m := range []*rmqpb.Message{
		pubMsg(nil),
		pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_FIFO
			m.SystemProperties.MessageGroup = proto.String("g")
			m.SystemProperties.Tag = proto.String("t")
			m.SystemProperties.Keys = []string{"a", "b"}
			m.UserProperties = map[string]string{"k": "v"}
		}),
		pubMsg(func(m *rmqpb.Message) {
			m.SystemProperties.MessageType = rmqpb.MessageType_DELAY
			m.SystemProperties.DeliveryTimestamp = timestamppb.New(time.UnixMilli(1_900_000_000_000))
		}),
		pubMsg(func(m *rmqpb.Message) { m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION }),
		pubMsg(func(m *rmqpb.Message) {
			m.Body = gz(f, []byte("compressed body"))
			m.SystemProperties.BodyEncoding = rmqpb.Encoding_GZIP
		}),
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m rmqpb.Message
		if err := proto.Unmarshal(b, &m); err != nil {
			return
		}
		const limit = 1 << 16
		got, err := Publish(&m, PublishOptions{MaxBodySize: limit})
		if err != nil {
			if n := matching(err); n != 1 {
				t.Fatalf("error %v matches %d errors of the package, want 1", err, n)
			}
			return
		}
		if len(got.Body) == 0 || len(got.Body) > limit {
			t.Fatalf("accepted a body of %d bytes", len(got.Body))
		}
		if got.UniqKey() != m.GetSystemProperties().GetMessageId() {
			t.Fatalf("UNIQ_KEY %q, message id %q", got.UniqKey(), m.GetSystemProperties().GetMessageId())
		}
		if err := message.ValidateTopic(got.Topic); err != nil {
			t.Fatal(err)
		}
		if _, err := message.AppendStored(nil, got); err != nil {
			t.Fatalf("accepted message does not encode: %v", err)
		}
		for k := range m.GetUserProperties() {
			if IsSystemProperty(k) {
				t.Fatalf("accepted user property %q", k)
			}
		}
	})
}
