package convert

import (
	"bytes"
	"compress/zlib"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"google.golang.org/protobuf/proto"
)

var (
	bornHost  = netip.MustParseAddrPort("10.0.0.7:53211")
	storeHost = netip.MustParseAddrPort("192.168.1.2:10911")
)

// stored returns the stored record of a message of topic with body and
// properties given as name, value pairs.
func stored(t testing.TB, topic string, body []byte, sysFlag int32, props ...string) []byte {
	t.Helper()
	m := &message.Message{
		Topic: topic, Body: body, SysFlag: sysFlag,
		BornTimestamp: 1_700_000_000_123, BornHost: bornHost,
		StoreTimestamp: 1_700_000_000_456, StoreHost: storeHost,
		QueueID: 3, QueueOffset: 41, CommitLogOffset: 8192, ReconsumeTimes: 2,
	}
	for i := 0; i+1 < len(props); i += 2 {
		m.SetProperty(props[i], props[i+1])
	}
	rec, err := message.AppendStored(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	message.PatchStored(rec, m.QueueOffset, m.CommitLogOffset, m.StoreTimestamp)
	return rec
}

func md5Upper(b []byte) string {
	s := md5.Sum(b)
	return strings.ToUpper(hex.EncodeToString(s[:]))
}

func TestDeliverFields(t *testing.T) {
	rec := stored(t, "T", []byte("hello"), 0,
		message.PropertyTags, "TagA",
		message.PropertyKeys, "k1  k2 k3",
		message.PropertyUniqKey, "01A0B1C2D3E4F5330A07A1B2C300000000",
		message.PropertyBornHost, "producer-host",
		message.PropertyTraceContext, "trace-1",
		message.PropertyWait, "true",
		message.PropertyConsumeStartTime, "1",
		"__RMQ.TRANSIENT.x", "local",
		"color", "red",
		"SHARDING_KEY", "go-sharding-key-is-a-user-property",
	)
	m, err := Deliver(rec, Delivery{Topic: "T", Namespace: "ns", Handle: "h1", Attempt: 4, Invisible: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sp := m.GetSystemProperties()
	if m.GetTopic().GetName() != "T" || m.GetTopic().GetResourceNamespace() != "ns" {
		t.Errorf("topic %v", m.GetTopic())
	}
	if string(m.GetBody()) != "hello" {
		t.Errorf("body %q", m.GetBody())
	}
	wantUser := map[string]string{"color": "red", "SHARDING_KEY": "go-sharding-key-is-a-user-property"}
	if !reflect.DeepEqual(m.GetUserProperties(), wantUser) {
		t.Errorf("user properties %v, want %v", m.GetUserProperties(), wantUser)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"tag", sp.GetTag(), "TagA"},
		{"keys", sp.GetKeys(), []string{"k1", "k2", "k3"}},
		{"message id", sp.GetMessageId(), "01A0B1C2D3E4F5330A07A1B2C300000000"},
		{"digest type", sp.GetBodyDigest().GetType(), rmqpb.DigestType_MD5},
		{"digest", sp.GetBodyDigest().GetChecksum(), md5Upper([]byte("hello"))},
		{"encoding", sp.GetBodyEncoding(), rmqpb.Encoding_IDENTITY},
		{"type", sp.GetMessageType(), rmqpb.MessageType_NORMAL},
		{"born ms", sp.GetBornTimestamp().AsTime().UnixMilli(), int64(1_700_000_000_123)},
		{"born host", sp.GetBornHost(), "producer-host"},
		{"store ms", sp.GetStoreTimestamp().AsTime().UnixMilli(), int64(1_700_000_000_456)},
		{"store host", sp.GetStoreHost(), "192.168.1.2:10911"},
		{"delivery ts", sp.DeliveryTimestamp == nil, true},
		{"handle", sp.GetReceiptHandle(), "h1"},
		{"queue", sp.GetQueueId(), int32(3)},
		{"offset", sp.GetQueueOffset(), int64(41)},
		{"invisible", sp.GetInvisibleDuration().AsDuration(), 1500 * time.Millisecond},
		{"attempt", sp.GetDeliveryAttempt(), int32(4)},
		{"group", sp.MessageGroup == nil, true},
		{"trace", sp.GetTraceContext(), "trace-1"},
		{"dlq", sp.DeadLetterQueue == nil, true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if _, err := proto.Marshal(m); err != nil {
		t.Fatalf("marshal: %v", err)
	}
}

func TestDeliverDefaults(t *testing.T) {
	rec := stored(t, "T", []byte("x"), 0)
	m, err := Deliver(rec, Delivery{Topic: "other"})
	if err != nil {
		t.Fatal(err)
	}
	sp := m.GetSystemProperties()
	if got, want := sp.GetMessageId(), message.OffsetID(storeHost, 8192); got != want {
		t.Errorf("message id %q, want the offset id %q", got, want)
	}
	if sp.GetDeliveryAttempt() != 3 {
		t.Errorf("attempt %d, want reconsume times 2 + 1", sp.GetDeliveryAttempt())
	}
	if sp.ReceiptHandle != nil || sp.InvisibleDuration != nil || sp.Tag != nil || len(sp.Keys) != 0 || m.UserProperties != nil {
		t.Errorf("unexpected fields: %v", sp)
	}
	if sp.GetBornHost() != "10.0.0.7" {
		t.Errorf("born host %q", sp.GetBornHost())
	}
	if m.GetTopic().GetName() != "T" {
		t.Errorf("topic %q, want the record's", m.GetTopic().GetName())
	}
}

func TestDeliverMessageTypes(t *testing.T) {
	tests := []struct {
		name  string
		props []string
		want  rmqpb.MessageType
		due   int64 // delivery timestamp (ms), 0 for none
		group string
	}{
		{"normal", nil, rmqpb.MessageType_NORMAL, 0, ""},
		{"transaction", []string{message.PropertyTransactionPrepared, "TRUE"}, rmqpb.MessageType_TRANSACTION, 0, ""},
		{"transaction false", []string{message.PropertyTransactionPrepared, "false"}, rmqpb.MessageType_NORMAL, 0, ""},
		{"delay level", []string{message.PropertyDelayLevel, "3"}, rmqpb.MessageType_DELAY, 0, ""},
		{"timer", []string{message.PropertyTimerDeliverMS, "1700000100000"}, rmqpb.MessageType_DELAY, 1_700_000_100_000, ""},
		{"timer delay sec", []string{message.PropertyTimerDelaySec, "10"}, rmqpb.MessageType_DELAY, 0, ""},
		{"delivered timer", []string{"TIMER_SRC", "1700000200000,4096"}, rmqpb.MessageType_DELAY, 1_700_000_200_000, ""},
		{"fifo", []string{message.PropertyShardingKey, "order-1"}, rmqpb.MessageType_FIFO, 0, "order-1"},
		{"transaction wins", []string{message.PropertyTransactionPrepared, "true", message.PropertyShardingKey, "g"}, rmqpb.MessageType_TRANSACTION, 0, "g"},
		{"delay wins over fifo", []string{message.PropertyTimerDeliverMS, "5", message.PropertyShardingKey, "g"}, rmqpb.MessageType_DELAY, 5, "g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Deliver(stored(t, "T", []byte("b"), 0, tt.props...), Delivery{Topic: "T", Attempt: 1})
			if err != nil {
				t.Fatal(err)
			}
			sp := m.GetSystemProperties()
			if sp.GetMessageType() != tt.want {
				t.Errorf("type %v, want %v", sp.GetMessageType(), tt.want)
			}
			var due int64
			if sp.DeliveryTimestamp != nil {
				due = sp.GetDeliveryTimestamp().AsTime().UnixMilli()
			}
			if due != tt.due {
				t.Errorf("delivery timestamp %d, want %d", due, tt.due)
			}
			if sp.GetMessageGroup() != tt.group {
				t.Errorf("message group %q, want %q", sp.GetMessageGroup(), tt.group)
			}
			if len(m.GetUserProperties()) != 0 {
				t.Errorf("system properties leaked into user properties: %v", m.GetUserProperties())
			}
		})
	}
}

func TestDeliverRetryAndDeadLetter(t *testing.T) {
	rec := stored(t, "%RETRY%G", []byte("b"), 0, message.PropertyRetryTopic, "Orders")
	m, err := Deliver(rec, Delivery{Topic: "Orders"})
	if err != nil {
		t.Fatal(err)
	}
	if m.GetTopic().GetName() != "Orders" {
		t.Errorf("retry message topic %q, want the original", m.GetTopic().GetName())
	}

	rec = stored(t, "%DLQ%G", []byte("b"), 0,
		message.PropertyRetryTopic, "Orders",
		message.PropertyDLQOriginTopic, "Orders",
		message.PropertyDLQOriginMessageID, "ID-1",
		message.PropertyUniqKey, "ID-1")
	m, err = Deliver(rec, Delivery{Topic: "%DLQ%G"})
	if err != nil {
		t.Fatal(err)
	}
	sp := m.GetSystemProperties()
	if m.GetTopic().GetName() != "%DLQ%G" {
		t.Errorf("dead letter topic %q", m.GetTopic().GetName())
	}
	if sp.GetDeadLetterQueue().GetTopic() != "Orders" || sp.GetDeadLetterQueue().GetMessageId() != "ID-1" {
		t.Errorf("dead_letter_queue %v", sp.GetDeadLetterQueue())
	}
	if len(m.GetUserProperties()) != 0 {
		t.Errorf("user properties %v", m.GetUserProperties())
	}
}

func zlibBytes(t testing.TB, b []byte) []byte {
	return compress(t, b, func(w io.Writer) (io.WriteCloser, error) { return zlib.NewWriter(w), nil })
}

func lz4Bytes(t testing.TB, b []byte) []byte {
	return compress(t, b, func(w io.Writer) (io.WriteCloser, error) { return lz4.NewWriter(w), nil })
}

func zstdBytes(t testing.TB, b []byte) []byte {
	return compress(t, b, func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) })
}

// compress writes b through the writer open makes and returns what it
// wrote.
func compress(t testing.TB, b []byte, open func(io.Writer) (io.WriteCloser, error)) []byte {
	var buf bytes.Buffer
	w, err := open(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// compressors gives, for each compression a RocketMQ client may set in
// SYSFLAG, a function that compresses as that client does.
func compressors() map[int32]func(testing.TB, []byte) []byte {
	return map[int32]func(testing.TB, []byte) []byte{
		message.SysFlagCompressed:                                  zlibBytes, // Go client, Java 4.x
		message.SysFlagCompressed | message.SysFlagCompressionZlib: zlibBytes,
		message.SysFlagCompressed | message.SysFlagCompressionLZ4:  lz4Bytes,
		message.SysFlagCompressed | message.SysFlagCompressionZstd: zstdBytes,
	}
}

func TestDeliverInflates(t *testing.T) {
	body := bytes.Repeat([]byte("compressible "), 1000)
	for flag, compress := range compressors() {
		m, err := Deliver(stored(t, "T", compress(t, body), flag), Delivery{Topic: "T"})
		if err != nil {
			t.Fatal(err)
		}
		sp := m.GetSystemProperties()
		if !bytes.Equal(m.GetBody(), body) {
			t.Fatalf("sysflag %#x: body not inflated (%d bytes)", flag, len(m.GetBody()))
		}
		if sp.GetBodyEncoding() != rmqpb.Encoding_IDENTITY || sp.GetBodyDigest().GetChecksum() != md5Upper(body) {
			t.Errorf("sysflag %#x: encoding %v digest %s", flag, sp.GetBodyEncoding(), sp.GetBodyDigest().GetChecksum())
		}
	}

	// Data that does not inflate, and unknown codecs, are delivered as
	// stored, with the digest of what is sent.
	const unknownCodec = 0x400
	for _, c := range []struct {
		flag int32
		body []byte
	}{
		{message.SysFlagCompressed, []byte("not zlib")},
		{message.SysFlagCompressed | message.SysFlagCompressionLZ4, []byte("not an lz4 frame")},
		{message.SysFlagCompressed | message.SysFlagCompressionZstd, []byte("not a zstd frame")},
		{message.SysFlagCompressed, zlibBytes(t, body)[:20]},
		{message.SysFlagCompressed | message.SysFlagCompressionLZ4, lz4Bytes(t, body)[:20]},
		{message.SysFlagCompressed | message.SysFlagCompressionZstd, zstdBytes(t, body)[:20]},
		{message.SysFlagCompressed | message.SysFlagCompressionZstd, zlibBytes(t, body)},
		{message.SysFlagCompressed | unknownCodec, zlibBytes(t, body)},
	} {
		m, err := Deliver(stored(t, "T", c.body, c.flag), Delivery{Topic: "T"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.GetBody(), c.body) || m.GetSystemProperties().GetBodyDigest().GetChecksum() != md5Upper(c.body) {
			t.Errorf("sysflag %#x: body %q", c.flag, m.GetBody())
		}
	}
}

// A body that would inflate past MaxInflatedBody is delivered as stored,
// whatever its codec, rather than held in memory whole.
func TestDeliverInflateBounded(t *testing.T) {
	huge := make([]byte, MaxInflatedBody+1)
	for flag, compress := range compressors() {
		z := compress(t, huge)
		m, err := Deliver(stored(t, "T", z, flag), Delivery{Topic: "T"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.GetBody(), z) {
			t.Errorf("sysflag %#x: a body of %d bytes inflated to %d", flag, len(z), len(m.GetBody()))
		}
	}
}

func TestDeliverInvalidUTF8(t *testing.T) {
	rec := stored(t, "T", []byte("b"), 0, message.PropertyTags, "t\xff", "k\xfe", "v\xc3")
	m, err := Deliver(rec, Delivery{Topic: "T"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proto.Marshal(m); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if m.GetSystemProperties().GetTag() != "t\uFFFD" || m.GetUserProperties()["k\uFFFD"] != "v\uFFFD" {
		t.Errorf("tag %q, user properties %q", m.GetSystemProperties().GetTag(), m.GetUserProperties())
	}
}

func TestDeliverCorrupt(t *testing.T) {
	rec := stored(t, "T", []byte("b"), 0)
	for _, bad := range [][]byte{nil, rec[:10], rec[:len(rec)-1]} {
		if _, err := Deliver(bad, Delivery{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d bytes: err %v, want ErrCorrupt", len(bad), err)
		}
	}
}

// FuzzDeliver checks that any record either fails to decode or becomes
// a message that marshals, with a digest of its body and an attempt of at
// least one.
func FuzzDeliver(f *testing.F) {
	f.Add(stored(f, "T", []byte("hello"), 0, message.PropertyTags, "a", message.PropertyKeys, "k1 k2", "u", "v"))
	f.Add(stored(f, "%RETRY%G", []byte{}, 0, message.PropertyRetryTopic, "T", "TIMER_SRC", "17,3"))
	f.Add(stored(f, "T", zlibBytes(f, []byte("zzzzzzzzzzzzzzzzzzzzzz")), message.SysFlagCompressed, message.PropertyShardingKey, "g"))
	f.Add(stored(f, "T", lz4Bytes(f, []byte("llllllllllllllllllllll")), message.SysFlagCompressed|message.SysFlagCompressionLZ4))
	f.Add(stored(f, "T", zstdBytes(f, []byte("ssssssssssssssssssssss")), message.SysFlagCompressed|message.SysFlagCompressionZstd))
	f.Add([]byte{0, 0, 0, 91})
	f.Fuzz(func(t *testing.T, rec []byte) {
		m, err := Deliver(rec, Delivery{Topic: "T", Handle: "h"})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		sp := m.GetSystemProperties()
		if sp.GetDeliveryAttempt() < 1 {
			t.Fatalf("attempt %d", sp.GetDeliveryAttempt())
		}
		if sp.GetBodyDigest().GetChecksum() != md5Upper(m.GetBody()) {
			t.Fatal("digest does not match the body")
		}
		if sp.GetMessageId() == "" {
			t.Fatal("no message id")
		}
		if _, err := proto.Marshal(m); err != nil {
			t.Fatalf("marshal: %v", err)
		}
		checkWire(t, rec, Delivery{Topic: "T", Handle: "h"}, m)
		for _, dg := range allDigests[1:] {
			d := Delivery{Topic: "T", Handle: "h", Digest: dg}
			m, err := Deliver(rec, d)
			if err != nil {
				t.Fatalf("digest %d: %v", dg, err)
			}
			if bd := m.GetSystemProperties().GetBodyDigest(); bd.GetType() != rmqpb.DigestType_CRC32 || bd.GetChecksum() != checksumOf(m.GetBody(), dg) {
				t.Fatalf("digest %d: %v does not match the body", dg, bd)
			}
			checkWire(t, rec, d, m)
		}
	})
}

// checkWire checks that AppendMessage encodes the message Deliver built.
func checkWire(t *testing.T, rec []byte, d Delivery, want *rmqpb.Message) {
	t.Helper()
	prefix := []byte("prefix")
	b, err := AppendMessage(prefix, rec, d)
	if err != nil {
		t.Fatalf("AppendMessage: %v", err)
	}
	if string(b[:len(prefix)]) != "prefix" {
		t.Fatal("AppendMessage changed what dst held")
	}
	var got rmqpb.Message
	if err := proto.Unmarshal(b[len(prefix):], &got); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !proto.Equal(&got, want) {
		t.Fatalf("AppendMessage decodes to\n%v\nDeliver built\n%v", &got, want)
	}
}

func BenchmarkDeliver(b *testing.B) {
	rec := stored(b, "T", bytes.Repeat([]byte("x"), 1024), 0,
		message.PropertyTags, "TagA", message.PropertyKeys, "k1", message.PropertyUniqKey, "01A0B1C2D3E4F5330A07A1B2C300000000",
		"a", "1", "b", "2")
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if _, err := Deliver(rec, Delivery{Topic: "T", Handle: "1 T 0 1 2 3 0011223344556677", Attempt: 1, Invisible: time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
}
