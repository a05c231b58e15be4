package engine

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
)

// encoded builds an encoded properties string from name, value pairs.
func encoded(pairs ...string) []byte {
	var b []byte
	for i := 0; i+1 < len(pairs); i += 2 {
		b = append(b, pairs[i]+"\x01"+pairs[i+1]+"\x02"...)
	}
	return b
}

// storedProps pulls queue q of topic from offset from and returns the
// properties string of each record as stored.
func storedProps(t *testing.T, e *Engine, topic string, q int32, from int64) [][]byte {
	t.Helper()
	ctx := context.Background()
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.Pull(ctx, topic, q, from, 32, nil)
	if err != nil {
		t.Fatalf("Pull(%s/%d@%d): %v", topic, q, from, err)
	}
	var out [][]byte
	for _, rec := range res.Records {
		h, err := message.PeekStored(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(h.Properties))
	}
	return out
}

func TestSendEncodedPropertiesStoredAsSent(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()

	props := encoded(message.PropertyUniqKey, "ID-1", message.PropertyTags, "red", message.PropertyKeys, "k1 k2", "WAIT", "true")
	m := &message.Message{Topic: "T", Body: []byte("a"), EncodedProperties: bytes.Clone(props)}
	res, err := e.Send(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if res.MsgID != "ID-1" {
		t.Fatalf("MsgID %q, want the message's UNIQ_KEY", res.MsgID)
	}
	if m.Properties != nil || !bytes.Equal(m.EncodedProperties, props) {
		t.Fatalf("message modified: %v %q", m.Properties, m.EncodedProperties)
	}
	// Without a UNIQ_KEY the engine appends the one it generates.
	bare := encoded(message.PropertyTags, "blue")
	res2, err := e.Send(ctx, &message.Message{Topic: "T", Body: []byte("b"), EncodedProperties: bare})
	if err != nil {
		t.Fatal(err)
	}
	got := storedProps(t, e, "T", 0, 0)
	want := [][]byte{props, append(bytes.Clone(bare), encoded(message.PropertyUniqKey, res2.MsgID)...)}
	if len(got) != 2 || !bytes.Equal(got[0], want[0]) || !bytes.Equal(got[1], want[1]) {
		t.Fatalf("stored properties %q, want %q", got, want)
	}

	// The id and key lookups and tag filters read them as usual.
	if found, err := e.MessageByID("ID-1"); err != nil || string(found.Body) != "a" {
		t.Fatalf("by id: %v %v", found, err)
	}
	if found, err := e.MessageByID(res2.MsgID); err != nil || string(found.Body) != "b" {
		t.Fatalf("by generated id: %v %v", found, err)
	}
	if ms, err := e.MessagesByKey("T", "k2", 0, time.Now().UnixMilli()+1000, 10); err != nil || len(ms) != 1 || string(ms[0].Body) != "a" {
		t.Fatalf("by key: %v %v", ms, err)
	}
	f, err := TagFilter("blue")
	if err != nil {
		t.Fatal(err)
	}
	if ms := pullAll(t, e, "T", 0, 0, f); len(ms) != 1 || string(ms[0].Body) != "b" {
		t.Fatalf("tag filter: %v", ms)
	}
}

// TestSendEncodedPropertiesActedOn checks that a message with encoded
// properties is stored as the same message with decoded ones would be,
// whatever properties it carries.
func TestSendEncodedPropertiesActedOn(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 4)
	ctx := context.Background()

	tests := []struct {
		name  string
		props []byte
	}{
		{"plain", encoded("A", "1", "B", "2")},
		{"message group", encoded(message.PropertyShardingKey, "order-7", "A", "1")},
		{"timer source", encoded("TIMER_SRC", "1,2", "A", "1")},
		{"transaction source", encoded("TRAN_SRC", "12", "A", "1")},
		{"repeated name", encoded("A", "1", "A", "2")},
		{"no final separator", []byte("A\x011\x02B\x012")},
		{"empty piece", []byte("A\x011\x02\x02B\x012\x02")},
		{"piece without a value", []byte("A\x02B\x012\x02")},
		{"two separators in a piece", []byte("A\x011\x012\x02B\x012\x02")},
		{"empty name", []byte("\x011\x02B\x012\x02")},
		{"empty", nil},
	}
	for _, tt := range tests {
		decoded, _ := message.DecodeProperties(tt.props)
		byMap, err := e.Send(ctx, &message.Message{Topic: "T", Body: []byte("x"), Properties: maps.Clone(decoded)})
		if err != nil {
			t.Fatalf("%s: send decoded: %v", tt.name, err)
		}
		byEnc, err := e.Send(ctx, &message.Message{Topic: "T", Body: []byte("x"), EncodedProperties: tt.props})
		if err != nil {
			t.Fatalf("%s: send encoded: %v", tt.name, err)
		}
		if strings.Contains(tt.name, "group") && byEnc.QueueID != byMap.QueueID {
			t.Errorf("%s: stored in queue %d, decoded in %d", tt.name, byEnc.QueueID, byMap.QueueID)
		}
		mapRec, err := e.MessageAt(byMap.CommitLogOffset)
		if err != nil {
			t.Fatal(err)
		}
		encRec, err := e.MessageAt(byEnc.CommitLogOffset)
		if err != nil {
			t.Fatal(err)
		}
		// The generated ids differ; everything else must not.
		for _, p := range []map[string]string{mapRec.Properties, encRec.Properties} {
			delete(p, message.PropertyUniqKey)
		}
		if !maps.Equal(mapRec.Properties, encRec.Properties) {
			t.Errorf("%s: stored %v, decoded %v", tt.name, encRec.Properties, mapRec.Properties)
		}
	}
}

func TestSendEncodedPropertiesScheduledAndRefused(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()

	if _, err := e.Send(ctx, &message.Message{Topic: "T", Body: []byte("later"), EncodedProperties: encoded(message.PropertyDelayLevel, "3")}); err != nil {
		t.Fatal(err)
	}
	if ms := pullAll(t, e, "T", 0, 0, nil); len(ms) != 0 {
		t.Fatalf("a delayed message is in its queue at once: %v", ms)
	}
	_, err := e.Send(ctx, &message.Message{Topic: "T", Body: []byte("x"), EncodedProperties: encoded(message.PropertyInnerMultiDispatch, "plain")})
	if !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("send naming a topic as light queue: %v, want ErrInvalidMessage", err)
	}
	_, err = e.Send(ctx, &message.Message{Topic: "T", Body: []byte("x"), EncodedProperties: encoded("K", strings.Repeat("v", message.MaxPropertiesSize))})
	if !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("send with properties over the limit: %v, want ErrInvalidMessage", err)
	}
}
