package mapping

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in, topic, tag string
		bad            bool
	}{
		{"first/rest", "first", "rest", false},
		{"first", "first", "", false},
		{"first/a/b/", "first", "a/b/", false},
		{"first/", "first", "", false},
		{"/x", "", "", true},
		{"$SYS/x", "", "", true},
		{"é/x", "", "", true},
		{"%RETRY%g/x", "", "", true},
		{"a b/c", "", "", true},
	} {
		topic, tag, err := Split(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrTopic) {
				t.Errorf("Split(%q) error %v, want ErrTopic", tc.in, err)
			}
			continue
		}
		if err != nil || topic != tc.topic || tag != tc.tag {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q", tc.in, topic, tag, err, tc.topic, tc.tag)
		}
	}
}

func TestName(t *testing.T) {
	for _, tc := range []struct{ topic, tags, origin, want string }{
		{"first", "rest", "first/rest/x", "first/rest/x"},
		{"first", "d1/temp", "", "first/d1/temp"},
		{"first", "", "", "first"},
	} {
		if got := Name(tc.topic, tc.tags, tc.origin); got != tc.want {
			t.Errorf("Name(%q, %q, %q) = %q, want %q", tc.topic, tc.tags, tc.origin, got, tc.want)
		}
	}
}

// roundTrip stores m as the engine would and reads it back.
func roundTrip(t *testing.T, m *Message) (*message.Message, *Message) {
	t.Helper()
	r, err := ToRocketMQ(m)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := message.AppendStored(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	dec, _, err := message.DecodeStored(enc)
	if err != nil {
		t.Fatal(err)
	}
	return r, FromRocketMQ(dec)
}

func TestRoundTrip(t *testing.T) {
	m := &Message{
		Topic: "dev/d1/temp", Payload: []byte("21.5"), QoS: 2,
		PayloadFormat: 1, HasPayloadFormat: true, ContentType: "text/plain",
		ResponseTopic: "dev/d1/resp", CorrelationData: []byte{0, 1, 2},
		UserProperties: []UserProperty{{"unit", "C"}, {"unit", "K"}, {"TAGS", "x"}, {"sep", "a\x01b"}, {"", "empty"}},
		ExpireAt:       time.UnixMilli(1_900_000_000_000), Publisher: "d1", Retain: true,
	}
	r, got := roundTrip(t, m)
	if r.Topic != "dev" || r.Tags() != "d1/temp" {
		t.Errorf("stored in %s tag %s", r.Topic, r.Tags())
	}
	if r.Property("unit") != "C" || r.Property("sep") != "" {
		t.Errorf("user properties as RocketMQ properties: unit=%q sep=%q", r.Property("unit"), r.Property("sep"))
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
	}

	_, got = roundTrip(t, &Message{Topic: "dev", QoS: 0})
	if got.Payload != nil || got.Topic != "dev" || got.QoS != 0 {
		t.Errorf("empty payload round trip: %+v", got)
	}
	// A RocketMQ message: no qosLevel, so QoS 1.
	rm := &message.Message{Topic: "dev", Body: []byte("cmd")}
	rm.SetTags("d1/cmd")
	if got := FromRocketMQ(rm); got.Topic != "dev/d1/cmd" || got.QoS != 1 || string(got.Payload) != "cmd" {
		t.Errorf("RocketMQ message as MQTT: %+v", got)
	}
}

func TestMarshal(t *testing.T) {
	for _, m := range []*Message{
		{Topic: "a/b", Payload: []byte("x"), QoS: 1, Retain: true},
		{Topic: "a", UserProperties: []UserProperty{{"k", "v"}}, HasPayloadFormat: true, ExpireAt: time.UnixMilli(5), CorrelationData: []byte("c")},
	} {
		got, err := Unmarshal(Marshal(m))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("Unmarshal(Marshal(%+v)) = %+v, %v", m, got, err)
		}
	}
	if _, err := Unmarshal([]byte("{")); err == nil {
		t.Error("a broken record decoded")
	}
}
