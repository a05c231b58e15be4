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

func TestRecovery(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(startMS, endMS int, ok bool, by string) Send {
		return Send{Group: "broker-a", Acked: ok, By: by,
			Start: t0.Add(time.Duration(startMS) * time.Millisecond), End: t0.Add(time.Duration(endMS) * time.Millisecond)}
	}
	const old, replica = "10.0.0.5:10911", "10.0.0.6:10911"
	cases := []struct {
		name  string
		sends []Send
		not   string
		want  int // ms; -1: none
	}{
		{"nothing sent", nil, "", -1},
		{"started before the fault", []Send{at(-10, 5, true, old)}, "", -1},
		{"no failure: the first ack", []Send{at(30, 40, true, old), at(10, 20, true, old)}, "", 20},
		{"acks before the first failure do not count",
			[]Send{at(1, 2, true, old), at(5, 3000, false, ""), at(2000, 2100, true, old), at(3100, 3200, true, old)}, "", 3200},
		{"the old master's acks do not count",
			[]Send{at(5, 10, false, ""), at(20, 30, true, old), at(40, 2500, true, replica)}, old, 2500},
		{"another group", []Send{{Group: "broker-b", Acked: true, Start: t0, End: t0}}, "", -1},
	}
	for _, c := range cases {
		got, ok := Recovery(c.sends, "broker-a", t0, c.not)
		if c.want < 0 {
			if ok {
				t.Errorf("%s: Recovery = %v, want none", c.name, got.Sub(t0))
			}
			continue
		}
		if !ok || got.Sub(t0) != time.Duration(c.want)*time.Millisecond {
			t.Errorf("%s: Recovery = %v %v, want %dms", c.name, got.Sub(t0), ok, c.want)
		}
	}
	sends := []Send{at(5, 10, true, old), at(20, 30, true, old), at(-5, 10, true, old), at(20, 30, true, replica)}
	if n := AcksBy(sends, "broker-a", t0, old); n != 2 {
		t.Fatalf("AcksBy = %d, want 2", n)
	}
}

func TestStoreHost(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"0A00000500002A9F0000000000001234", "10.0.0.5:10911"},
		{"7F00000100002A9F0000000000000000", "127.0.0.1:10911"},
		{"", ""},
		{"0A000005", ""},
		{"zz00000500002A9F0000000000001234", ""},
	} {
		if got := storeHost(c.id); got != c.want {
			t.Errorf("storeHost(%q) = %q, want %q", c.id, got, c.want)
		}
	}
}

func TestWriteGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int, ok bool) Send {
		return Send{Acked: ok, End: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	cases := []struct {
		name  string
		sends []Send
		to    int
		want  time.Duration
	}{
		{"no acks", []Send{at(100, false)}, 1000, time.Second},
		{"steady", []Send{at(100, true), at(200, true), at(300, true)}, 350, 100 * time.Millisecond},
		{"a gap in the middle", []Send{at(300, true), at(100, true), at(2300, true), at(1000, false)}, 2400, 2000 * time.Millisecond},
		{"a gap at the end", []Send{at(100, true)}, 900, 800 * time.Millisecond},
		{"acks outside ignored", []Send{at(-50, true), at(5000, true), at(400, true)}, 500, 400 * time.Millisecond},
	}
	for _, c := range cases {
		if got := WriteGap(c.sends, t0, t0.Add(time.Duration(c.to)*time.Millisecond)); got != c.want {
			t.Errorf("%s: WriteGap = %v, want %v", c.name, got, c.want)
		}
	}
}
