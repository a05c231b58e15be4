package server_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/route"
)

// TestRetainedInFlightAcrossRestart: retained messages of QoS 1 and 2
// sent to a persistent session at SUBSCRIBE and not acknowledged are
// sent again after a restart with their packet ids, QoS and retain flag;
// and the retained messages themselves are still there for a new
// subscriber, with their QoS.
func TestRetainedInFlightAcrossRestart(t *testing.T) {
	b := startBroker(t, "", nil)
	p, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "rp", CleanStart: true, KeepAlive: 30})
	for i, qos := range []byte{1, 2} {
		p.send(&packet.Publish{PacketID: uint16(i + 1), QoS: qos, Retain: true, Topic: []string{"rt/one", "rt/two"}[i], Payload: []byte{'0' + qos}})
		if qos == 1 {
			p.expect(packet.PUBACK)
		} else {
			p.expect(packet.PUBREC)
			p.send(&packet.Pubrel{PacketID: uint16(i + 1)})
			p.expect(packet.PUBCOMP)
		}
	}
	cp := func() *packet.Connect { return &packet.Connect{ClientID: "rs", KeepAlive: 30} }
	s, _ := dialRaw(t, b.addr, packet.Version311, cp())
	s.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "rt/#", QoS: 2}}})
	s.expect(packet.SUBACK)
	sent := map[string]*packet.Publish{}
	for len(sent) < 2 {
		pub := s.expect(packet.PUBLISH).(*packet.Publish)
		sent[pub.Topic] = pub
	}
	s.nc.Close()
	b.restart()

	s, ack := dialRaw(t, b.addr, packet.Version311, cp())
	if !ack.SessionPresent {
		t.Fatal("no session present after the restart")
	}
	var again []*packet.Publish
	for range 2 {
		pub := s.expect(packet.PUBLISH).(*packet.Publish)
		was := sent[pub.Topic]
		if was == nil || !pub.Dup || !pub.Retain || pub.PacketID != was.PacketID || pub.QoS != was.QoS || string(pub.Payload) != string(was.Payload) {
			t.Fatalf("after the restart: %+v, sent before %+v", pub, was)
		}
		delete(sent, pub.Topic)
		again = append(again, pub)
	}
	for _, pub := range again {
		if pub.QoS == 1 {
			s.send(&packet.Puback{PacketID: pub.PacketID})
		} else {
			s.send(&packet.Pubrec{PacketID: pub.PacketID})
			s.expect(packet.PUBREL)
			s.send(&packet.Pubcomp{PacketID: pub.PacketID})
		}
	}
	s.send(&packet.Pingreq{})
	s.expect(packet.PINGRESP)
	s.nc.Close()
	b.restart()
	// Acknowledged: not sent again.
	s, _ = dialRaw(t, b.addr, packet.Version311, cp())
	s.send(&packet.Pingreq{})
	if got := s.read(); got.Type() != packet.PINGRESP {
		t.Fatalf("after acknowledging and a restart: %s", got.Type())
	}

	n, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "rn", CleanStart: true, KeepAlive: 30})
	n.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "rt/#", QoS: 2}}})
	n.expect(packet.SUBACK)
	var qos []byte
	for range 2 {
		pub := n.expect(packet.PUBLISH).(*packet.Publish)
		if !pub.Retain {
			t.Errorf("%s without its retain flag", pub.Topic)
		}
		qos = append(qos, pub.QoS)
	}
	slices.Sort(qos)
	if !slices.Equal(qos, []byte{1, 2}) {
		t.Fatalf("retained messages came with QoS %v, want 1 and 2", qos)
	}
}

// TestWillsAtShutdown: a graceful shutdown ends connections without
// DISCONNECT, so wills are due. A will without delay, and the will of a
// session that ends with its connection, are in the commit log when
// Close returns (only the delayed will is left stored); a clean
// DISCONNECT before leaves no will; the delayed will is published after
// the restart once what was left of its delay has passed, counted from
// the shutdown.
func TestWillsAtShutdown(t *testing.T) {
	b := startBroker(t, "", nil)
	watch := func() *raw {
		w, _ := dialRaw(t, b.addr, packet.Version5, v5connect("watch", false, 600))
		return w
	}
	w := watch()
	w.subscribe(1, packet.Subscription{Filter: "will/#", QoS: 1})

	will := func(topic string, delay uint32) *packet.Will {
		wl := &packet.Will{Topic: topic, QoS: 1, Payload: []byte(topic)}
		wl.Properties.WillDelay = delay
		return wl
	}
	a := v5connect("a", false, 600) // persistent, no delay
	a.Will = will("will/a", 0)
	dialRaw(t, b.addr, packet.Version5, a)
	dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "b", CleanStart: true, KeepAlive: 30, Will: will("will/b", 0)})
	cc := v5connect("c", true, 0) // the session ends with the connection: the delay with it
	cc.Will = will("will/c", 60)
	dialRaw(t, b.addr, packet.Version5, cc)
	d := v5connect("d", false, 600) // delayed 2 s
	d.Will = will("will/d", 2)
	dialRaw(t, b.addr, packet.Version5, d)
	e := v5connect("e", true, 0) // disconnects cleanly: no will
	e.Will = will("will/e", 0)
	ec, _ := dialRaw(t, b.addr, packet.Version5, e)
	ec.send(&packet.Disconnect{})
	ec.closed()

	dir := b.dir
	stopped := time.Now() // before the connections end
	b.stop()
	// The engine alone: what the shutdown left.
	eng, err := engine.Open(dir, &engine.Options{Router: route.New(), SegmentSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	eng.State(route.Namespace).Scan("w/", func(k string, _ []byte) error {
		stored = append(stored, k)
		return nil
	})
	inLog := map[string]int{}
	eng.WaitDispatched(context.Background())
	for q := int32(0); q < 8; q++ {
		res, err := eng.Pull(context.Background(), "will", q, 0, 64, nil)
		if err != nil {
			continue
		}
		for _, rec := range res.Records {
			if m, _, err := message.DecodeStored(rec); err == nil {
				inLog[string(m.Body)]++
			}
		}
		res.Release()
	}
	eng.Close()
	if !slices.Equal(stored, []string{"w/d"}) {
		t.Errorf("wills stored after the shutdown: %q, want only w/d", stored)
	}
	if want := map[string]int{"will/a": 1, "will/b": 1, "will/c": 1}; !maps.Equal(inLog, want) {
		t.Errorf("wills in the commit log after the shutdown: %v, want %v", inLog, want)
	}

	// Time passes while the broker is down; the delay counts it.
	time.Sleep(1500*time.Millisecond - time.Since(stopped))
	b.start()
	restarted := time.Now()
	w = watch()
	got := map[string]bool{}
	for len(got) < 4 {
		p := w.expect(packet.PUBLISH).(*packet.Publish)
		got[p.Topic] = true
		w.send(&packet.Puback{PacketID: p.PacketID})
		if p.Topic == "will/d" {
			if since := time.Since(stopped); since < 2*time.Second {
				t.Errorf("the delayed will came %v after the shutdown, before its 2 s", since)
			}
			if since := time.Since(restarted); since > 1900*time.Millisecond {
				t.Errorf("the delayed will came %v after the restart: its delay ran again from the start", since)
			}
		}
	}
	if !got["will/a"] || !got["will/b"] || !got["will/c"] || !got["will/d"] {
		t.Fatalf("wills after the restart: %v", got)
	}
	w.send(&packet.Pingreq{})
	w.expect(packet.PINGRESP) // and not will/e
}

// TestQoS2BurstStateBeforeAnswers: the answers of a burst of QoS 2
// packets from a persistent session come in order, each once the state
// it promises is stored: at PUBREC the ids awaiting PUBREL are in the
// store, at PUBCOMP they are gone; a PINGREQ behind them is answered
// after them.
func TestQoS2BurstStateBeforeAnswers(t *testing.T) {
	b := startBroker(t, "", nil)
	c, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "burst", KeepAlive: 30})
	stored := func(pid byte) bool {
		_, ok, err := b.e.State(route.Namespace).Get("q/burst\x00\x00" + string([]byte{pid}))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	var burst []byte
	for pid := uint16(1); pid <= 2; pid++ {
		burst, _ = (&packet.Publish{PacketID: pid, QoS: 2, Topic: "burst/x", Payload: []byte("b")}).AppendTo(burst, packet.Version311)
	}
	burst, _ = (&packet.Pingreq{}).AppendTo(burst, packet.Version311)
	c.nc.Write(burst)
	for _, want := range []packet.Type{packet.PUBREC, packet.PUBREC, packet.PINGRESP} {
		if got := c.read(); got.Type() != want {
			t.Fatalf("got %s, want %s", got.Type(), want)
		}
		if want == packet.PUBREC && (!stored(1) || !stored(2)) {
			t.Fatal("PUBREC before the ids awaiting PUBREL were stored")
		}
	}
	burst = burst[:0]
	for pid := uint16(1); pid <= 2; pid++ {
		burst, _ = (&packet.Pubrel{PacketID: pid}).AppendTo(burst, packet.Version311)
	}
	burst, _ = (&packet.Pingreq{}).AppendTo(burst, packet.Version311)
	c.nc.Write(burst)
	for _, want := range []packet.Type{packet.PUBCOMP, packet.PUBCOMP, packet.PINGRESP} {
		if got := c.read(); got.Type() != want {
			t.Fatalf("got %s, want %s", got.Type(), want)
		}
		if want == packet.PUBCOMP && (stored(1) || stored(2)) {
			t.Fatal("PUBCOMP before the ids were deleted")
		}
	}
	if n := storedCount(t, b, "burst", "b"); n != 2 {
		t.Fatalf("%d messages stored, want 2", n)
	}
}
