package chaos

import (
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ack := func(key string, seq int) Send {
		return Send{Key: key, Seq: seq, Group: "broker-a", Acked: true, Start: t0, End: t0}
	}
	fail := func(key string, seq int) Send { return Send{Key: key, Seq: seq, Group: "broker-a", Start: t0, End: t0} }
	at := func(key string, seq int, off int64) Delivery {
		return Delivery{Key: key, Seq: seq, Group: "broker-a", Offset: off, At: t0.Add(time.Duration(off) * time.Millisecond)}
	}
	cases := []struct {
		name  string
		sends []Send
		got   []Delivery
		want  Verdict
	}{
		{"empty", nil, nil, Verdict{}},
		{"all delivered in order",
			[]Send{ack("k", 0), ack("k", 1), ack("k", 2)},
			[]Delivery{at("k", 0, 0), at("k", 1, 1), at("k", 2, 2)},
			Verdict{Acked: 3, Consumed: 3}},
		{"delivered out of order but stored in order",
			[]Send{ack("k", 0), ack("k", 1)},
			[]Delivery{{Key: "k", Seq: 1, Group: "broker-a", Offset: 1, At: t0}, {Key: "k", Seq: 0, Group: "broker-a", Offset: 0, At: t0.Add(time.Second)}},
			Verdict{Acked: 2, Consumed: 2}},
		{"one lost",
			[]Send{ack("k", 0), ack("k", 1), ack("j", 0)},
			[]Delivery{at("k", 0, 0), at("j", 0, 5)},
			Verdict{Acked: 3, Consumed: 2, Lost: 1}},
		{"duplicate counted once per message",
			[]Send{ack("k", 0), ack("k", 1)},
			[]Delivery{at("k", 0, 0), at("k", 1, 1), at("k", 1, 1), at("k", 1, 1), at("k", 0, 0)},
			Verdict{Acked: 2, Consumed: 2, Duplicated: 2}},
		{"stored out of order",
			[]Send{ack("k", 0), ack("k", 1), ack("k", 2)},
			[]Delivery{at("k", 1, 0), at("k", 0, 1), at("k", 2, 2)},
			Verdict{Acked: 3, Consumed: 3, OrderViolations: 1}},
		{"keys are independent",
			[]Send{ack("k", 0), ack("j", 0), ack("j", 1)},
			[]Delivery{at("j", 0, 0), at("k", 0, 1), at("j", 1, 2)},
			Verdict{Acked: 3, Consumed: 3}},
		{"a failed send stored anyway is neither lost nor a violation",
			[]Send{ack("k", 0), fail("k", 1), ack("k", 2)},
			[]Delivery{at("k", 0, 0), at("k", 2, 1), at("k", 1, 2)},
			Verdict{Acked: 2, Failed: 1, Consumed: 3, UnackedConsumed: 1}},
		{"a failed send never stored is not lost",
			[]Send{ack("k", 0), fail("k", 1)},
			[]Delivery{at("k", 0, 0)},
			Verdict{Acked: 1, Failed: 1, Consumed: 1}},
		{"other queues are other orders",
			[]Send{ack("k", 0), ack("k", 1)},
			[]Delivery{{Key: "k", Seq: 1, Group: "broker-a", Queue: 0, Offset: 0}, {Key: "k", Seq: 0, Group: "broker-a", Queue: 1, Offset: 7}},
			Verdict{Acked: 2, Consumed: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Check(c.sends, c.got); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestFirstAck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sends := []Send{
		{Group: "broker-a", Acked: true, Start: t0.Add(-time.Second), End: t0.Add(time.Second)},    // started before
		{Group: "broker-b", Acked: true, Start: t0.Add(time.Second), End: t0.Add(2 * time.Second)}, // other group
		{Group: "broker-a", Start: t0.Add(time.Second), End: t0.Add(2 * time.Second)},              // failed
		{Group: "broker-a", Acked: true, Start: t0.Add(3 * time.Second), End: t0.Add(5 * time.Second)},
		{Group: "broker-a", Acked: true, Start: t0.Add(2 * time.Second), End: t0.Add(4 * time.Second)},
	}
	got, ok := FirstAck(sends, "broker-a", t0)
	if !ok || !got.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("FirstAck = %v %v, want %v", got, ok, t0.Add(4*time.Second))
	}
	if _, ok := FirstAck(sends, "broker-c", t0); ok {
		t.Fatal("FirstAck found a send to a group nobody sent to")
	}
}
