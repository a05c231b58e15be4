package mapping

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
)

// mapProperties is the contract's properties of m as a map, written the
// plain way: the oracle Encode's encoded form must decode to.
func mapProperties(m *Message) map[string]string {
	_, tag, _ := Split(m.Topic)
	p := map[string]string{PropOriginTopic: m.Topic, PropQoS: strconv.Itoa(int(m.QoS))}
	if tag != "" {
		p[message.PropertyTags] = tag
	}
	if len(m.Payload) == 0 {
		p[PropEmpty] = "true"
	}
	if m.Publisher != "" {
		p[PropClientID] = m.Publisher
	}
	if m.Retain {
		p[PropRetain] = "1"
	}
	if len(m.UserProperties) > 0 {
		pairs := [][2]string{}
		for _, u := range m.UserProperties {
			pairs = append(pairs, [2]string{u.Key, u.Value})
		}
		b, _ := json.Marshal(pairs)
		p[PropUserProps] = string(b)
		for _, u := range m.UserProperties {
			if _, dup := p[u.Key]; dup || u.Key == "" || reserved(u.Key) || strings.ContainsAny(u.Key+u.Value, "\x01\x02") {
				continue
			}
			p[u.Key] = u.Value
		}
	}
	if m.HasPayloadFormat {
		p[PropPayloadFormat] = strconv.Itoa(int(m.PayloadFormat))
	}
	if m.ContentType != "" {
		p[PropContentType] = m.ContentType
	}
	if m.ResponseTopic != "" {
		p[PropResponseTopic] = m.ResponseTopic
	}
	if m.CorrelationData != nil {
		p[PropCorrelationData] = base64.StdEncoding.EncodeToString(m.CorrelationData)
	}
	if !m.ExpireAt.IsZero() {
		p[PropExpireAt] = strconv.FormatInt(m.ExpireAt.UnixMilli(), 10)
	}
	return p
}

var encodeCases = []*Message{
	{Topic: "a", Payload: []byte("x"), QoS: 0},
	{Topic: "a/b/c", Payload: []byte("x"), QoS: 1, Publisher: "pub", Retain: true},
	{Topic: "a/", QoS: 2},
	{Topic: "dev/d1/temp", Payload: []byte("21.5"), QoS: 2,
		PayloadFormat: 1, HasPayloadFormat: true, ContentType: "text/plain",
		ResponseTopic: "dev/d1/resp", CorrelationData: []byte{0, 1, 2},
		UserProperties: []UserProperty{{"unit", "C"}, {"unit", "K"}, {"TAGS", "x"}, {"sep", "a\x01b"}, {"sep", "ok"}, {"", "empty"}, {"mqttX", "r"}, {"k\x02", "v"}},
		ExpireAt:       time.UnixMilli(1_900_000_000_000), Publisher: "d1", Retain: true},
	{Topic: "a/b", Payload: []byte("x"), HasPayloadFormat: true, CorrelationData: []byte{}},
}

func TestEncodeProperties(t *testing.T) {
	for _, m := range encodeCases {
		r, err := ToRocketMQ(m)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if r.Properties != nil {
			t.Errorf("%s: a property map was made", m.Topic)
		}
		if err := message.CheckEncodedProperties(r.EncodedProperties); err != nil {
			t.Errorf("%s: %v", m.Topic, err)
		}
		got, _ := message.DecodeProperties(r.EncodedProperties)
		if want := mapProperties(m); !maps.Equal(got, want) {
			t.Errorf("%s: properties\n got %q\nwant %q", m.Topic, got, want)
		}
		// Each name once: the encoded form holds as many pairs as the map.
		if n := strings.Count(string(r.EncodedProperties), "\x02"); n != len(got) {
			t.Errorf("%s: %d pairs encoded for %d names", m.Topic, n, len(got))
		}
		if wantBody := m.Payload; len(wantBody) == 0 {
			if string(r.Body) != "\x00" {
				t.Errorf("%s: empty payload stored as %q", m.Topic, r.Body)
			}
		} else if &r.Body[0] != &m.Payload[0] {
			t.Errorf("%s: body copied", m.Topic)
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		m    *Message
		want error
	}{
		{&Message{Topic: "$SYS/x", Payload: []byte("x")}, ErrTopic},
		{&Message{Topic: "a/b\x01", Payload: []byte("x")}, message.ErrInvalidProperty},
		{&Message{Topic: "a", Payload: []byte("x"), Publisher: "p\x02"}, message.ErrInvalidProperty},
		{&Message{Topic: "a", Payload: []byte("x"), ContentType: "c\x01"}, message.ErrInvalidProperty},
		{&Message{Topic: "a", Payload: []byte("x"), ContentType: strings.Repeat("c", message.MaxPropertiesSize)}, message.ErrPropertiesTooLarge},
	} {
		buf := []byte("keep")
		var r message.Message
		got, err := Encode(&r, tc.m, buf)
		if !errors.Is(err, tc.want) {
			t.Errorf("%q: error %v, want %v", tc.m.Topic, err, tc.want)
		}
		if string(got) != "keep" {
			t.Errorf("%q: buf %q after a refusal", tc.m.Topic, got)
		}
	}
}

func TestEncodeAllocs(t *testing.T) {
	m := &Message{Topic: "a/b", QoS: 1, Payload: []byte("x"), Publisher: "p", ExpireAt: time.UnixMilli(5)}
	buf := make([]byte, 0, 256)
	var r message.Message
	n := testing.AllocsPerRun(100, func() {
		if _, err := Encode(&r, m, buf[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per message, want 0", n)
	}
}

// storedRecords are records as the engine stores them: from Encode, and
// from RocketMQ producers (tags, no origin; repeated names; pieces that
// are not pairs).
func storedRecords(t testing.TB) [][]byte {
	var recs [][]byte
	add := func(r *message.Message) {
		r.QueueOffset = int64(len(recs) + 7)
		b, err := message.AppendStored(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, b)
	}
	for _, m := range encodeCases {
		r, err := ToRocketMQ(m)
		if err != nil {
			t.Fatal(err)
		}
		add(r)
	}
	rm := &message.Message{Topic: "dev", Body: []byte("cmd")}
	rm.SetTags("d1/cmd")
	add(rm)
	add(&message.Message{Topic: "dev", Body: []byte("plain")})
	add(&message.Message{Topic: "dev", Body: []byte("x"), EncodedProperties: []byte(
		"qosLevel\x01" + "2\x02qosLevel\x010\x02TAGS\x01t\x02originMqttTopic\x01o/1\x02originMqttTopic\x01o/2\x02mqttRetain\x011\x02mqttRetain\x010\x02" +
			"mqttExpireAt\x01nope\x02mqttPayloadFormat\x017\x02mqttCorrelationData\x01!!\x02mqttUserProps\x01[1]\x02")})
	add(&message.Message{Topic: "dev", Body: []byte("x"), EncodedProperties: []byte(
		"IS_EMPTY_MSG\x01true\x02qosLevel\x019\x02mqttClientId\x01c\x02mqttUserProps\x01[[\"a\",\"b\"]]\x02")})
	return recs
}

func TestDecoderMatchesFromRocketMQ(t *testing.T) {
	var d Decoder
	for round := range 2 { // the second round reuses the decoder's names
		for i, rec := range storedRecords(t) {
			checkDecode(t, &d, rec, strconv.Itoa(round)+"/"+strconv.Itoa(i))
		}
	}
}

// checkDecode compares d's decoding of rec with FromRocketMQ of
// message.DecodeStored: both fail, or both give the same message.
func checkDecode(t *testing.T, d *Decoder, rec []byte, name string) {
	t.Helper()
	want, _, werr := message.DecodeStored(rec)
	var got Message
	buf := []byte("prefix")
	off, buf2, err := d.Decode(&got, rec, buf)
	if (err != nil) != (werr != nil) {
		t.Fatalf("%s: Decode error %v, DecodeStored error %v", name, err, werr)
	}
	if err != nil {
		if !errors.Is(err, message.ErrMalformed) {
			t.Fatalf("%s: error %v does not wrap ErrMalformed", name, err)
		}
		return
	}
	if off != want.QueueOffset {
		t.Errorf("%s: offset %d, want %d", name, off, want.QueueOffset)
	}
	if string(buf2[:len(buf)]) != "prefix" {
		t.Errorf("%s: buf's bytes changed: %q", name, buf2)
	}
	wm := FromRocketMQ(want)
	if len(wm.Payload) == 0 && len(got.Payload) == 0 {
		wm.Payload, got.Payload = nil, nil
	}
	if !reflect.DeepEqual(&got, wm) {
		t.Errorf("%s:\n got %+v\nwant %+v", name, &got, wm)
	}
}

func TestDecoderAllocs(t *testing.T) {
	recs := storedRecords(t)
	var d Decoder
	var m Message
	buf := make([]byte, 0, 1024)
	n := testing.AllocsPerRun(100, func() {
		if _, _, err := d.Decode(&m, recs[1], buf[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if m.Topic != "a/b/c" || m.Publisher != "pub" || !m.Retain || string(m.Payload) != "x" {
		t.Fatalf("got %+v", m)
	}
	if n != 0 {
		t.Fatalf("%v allocations per message of the last topic and publisher, want 0", n)
	}
}

// FuzzDecoder: any bytes decode as message.DecodeStored and FromRocketMQ
// would have it, or fail as DecodeStored does.
func FuzzDecoder(f *testing.F) {
	for _, rec := range storedRecords(f) {
		f.Add(rec)
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		checkDecode(t, &d, rec, "input")
		checkDecode(t, &d, rec, "again")
	})
}
