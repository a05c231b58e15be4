package mapping

import (
	"testing"

	"github.com/karmanmq/karman/engine/message"
)

// TestFromRocketMQAllocs: a delivered message without the optional
// properties costs its Message alone; absent properties are not parsed
// (a failed parse allocates its error).
func TestFromRocketMQAllocs(t *testing.T) {
	enc, err := ToRocketMQ(&Message{Topic: "a/b", QoS: 1, Payload: []byte("x"), Publisher: "p"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := message.AppendStored(nil, enc)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := message.DecodeStored(rec) // as a stored message comes back
	if err != nil {
		t.Fatal(err)
	}
	var m *Message
	n := testing.AllocsPerRun(100, func() { m = FromRocketMQ(r) })
	if m.QoS != 1 || m.HasPayloadFormat || !m.ExpireAt.IsZero() {
		t.Fatalf("got %+v", m)
	}
	if n > 1 {
		t.Fatalf("%v allocations per message, want 1", n)
	}
}
