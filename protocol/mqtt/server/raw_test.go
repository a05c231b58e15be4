package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// raw is a client on the codec, for what the real clients do not let a
// test control: packet ids, resends, acknowledgements held back.
type raw struct {
	t   testing.TB
	nc  net.Conn
	dec *packet.Decoder
	v   byte
}

func dialRaw(t testing.TB, addr string, v byte, cp *packet.Connect) (*raw, *packet.Connack) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	r := &raw{t: t, nc: nc, dec: packet.NewDecoder(nc), v: v}
	r.dec.Version = v
	cp.Version = v
	r.send(cp)
	ack, ok := r.read().(*packet.Connack)
	if !ok {
		t.Fatalf("no CONNACK")
	}
	return r, ack
}

func (r *raw) send(p packet.Packet) {
	r.t.Helper()
	if err := packet.Encode(r.nc, p, r.v); err != nil {
		r.t.Fatalf("send %s: %v", p.Type(), err)
	}
}

func (r *raw) read() packet.Packet {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	p, err := r.dec.Read()
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	if pub, ok := p.(*packet.Publish); ok { // it aliases the decoder's buffer
		pub.Payload = append([]byte(nil), pub.Payload...)
	}
	return p
}

// readType reads packets until one of type typ, skipping PUBLISHes when
// typ is not PUBLISH.
func (r *raw) expect(typ packet.Type) packet.Packet {
	r.t.Helper()
	for {
		p := r.read()
		if p.Type() == typ {
			return p
		}
		if p.Type() != packet.PUBLISH {
			r.t.Fatalf("got %s, want %s", p.Type(), typ)
		}
	}
}

// storedCount counts the messages of topic whose body is body.
func storedCount(t testing.TB, b *broker, topic, body string) int {
	t.Helper()
	ctx := context.Background()
	b.e.WaitDispatched(ctx)
	n := 0
	for q := int32(0); q < 8; q++ {
		res, err := b.e.Pull(ctx, topic, q, 0, 256, nil)
		if err != nil {
			continue
		}
		for _, rec := range res.Records {
			if m, _, err := message.DecodeStored(rec); err == nil && string(m.Body) == body {
				n++
			}
		}
		res.Release()
	}
	return n
}

// TestQoS2InboundExactlyOnce resends a QoS 2 PUBLISH before its PUBREL,
// across a reconnect and a restart: it is stored once.
func TestQoS2InboundExactlyOnce(t *testing.T) {
	for _, v := range []byte{packet.Version311, packet.Version5} {
		b := startBroker(t, "", nil)
		cp := func() *packet.Connect {
			c := &packet.Connect{ClientID: "q2pub", KeepAlive: 30}
			if v == packet.Version5 {
				c.Properties.SessionExpiry = 3600
			}
			return c
		}
		c, _ := dialRaw(t, b.addr, v, cp())
		pub := &packet.Publish{QoS: 2, Topic: "q2/x", PacketID: 7, Payload: []byte("once")}
		c.send(pub)
		if rec := c.expect(packet.PUBREC).(*packet.Pubrec); rec.PacketID != 7 || rec.ReasonCode != 0 {
			t.Fatalf("PUBREC %+v", rec)
		}
		pub.Dup = true
		c.send(pub) // again on the same connection
		c.expect(packet.PUBREC)
		c.nc.Close()

		c, ack := dialRaw(t, b.addr, v, cp()) // again after a reconnect
		if !ack.SessionPresent {
			t.Fatalf("v%d: no session present", v)
		}
		c.send(pub)
		c.expect(packet.PUBREC)
		c.nc.Close()
		b.restart()
		c, _ = dialRaw(t, b.addr, v, cp()) // and after a restart
		c.send(pub)
		c.expect(packet.PUBREC)
		c.send(&packet.Pubrel{PacketID: 7})
		if comp := c.expect(packet.PUBCOMP).(*packet.Pubcomp); comp.PacketID != 7 || comp.ReasonCode != 0 {
			t.Fatalf("PUBCOMP %+v", comp)
		}
		if n := storedCount(t, b, "q2", "once"); n != 1 {
			t.Fatalf("v%d: stored %d times", v, n)
		}
		// The id is free again: a new message with it is a new message.
		pub = &packet.Publish{QoS: 2, Topic: "q2/x", PacketID: 7, Payload: []byte("twice")}
		c.send(pub)
		c.expect(packet.PUBREC)
		if n := storedCount(t, b, "q2", "twice"); n != 1 {
			t.Fatalf("v%d: new message stored %d times", v, n)
		}
		// An unknown PUBREL still gets its PUBCOMP.
		c.send(&packet.Pubrel{PacketID: 99})
		comp := c.expect(packet.PUBCOMP).(*packet.Pubcomp)
		if v == packet.Version5 && comp.ReasonCode != packet.PacketIdentifierNotFound {
			t.Fatalf("unknown PUBREL: %+v", comp)
		}
	}
}

// TestQoS2OutboundAcrossRestart: a message the client PUBRECed is
// followed by PUBREL after a restart, never sent again; one it did not
// acknowledge is sent again with DUP and the same id.
func TestQoS2OutboundAcrossRestart(t *testing.T) {
	b := startBroker(t, "", nil)
	cp := func() *packet.Connect { return &packet.Connect{ClientID: "q2sub", KeepAlive: 30} }
	s, _ := dialRaw(t, b.addr, packet.Version311, cp())
	s.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "out/#", QoS: 2}}})
	s.expect(packet.SUBACK)
	p, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "q2p", CleanStart: true, KeepAlive: 30})
	for i, body := range []string{"a", "b"} {
		p.send(&packet.Publish{QoS: 1, Topic: "out/1", PacketID: uint16(i + 1), Payload: []byte(body)})
		p.expect(packet.PUBACK)
	}
	first := s.expect(packet.PUBLISH).(*packet.Publish)
	second := s.expect(packet.PUBLISH).(*packet.Publish)
	if string(first.Payload) != "a" || string(second.Payload) != "b" || first.QoS != 1 {
		t.Fatalf("got %q QoS %d, %q", first.Payload, first.QoS, second.Payload)
	}
	s.nc.Close()
	p.send(&packet.Publish{QoS: 2, Topic: "out/2", PacketID: 3, Payload: []byte("c")})
	p.expect(packet.PUBREC)
	p.send(&packet.Pubrel{PacketID: 3})
	p.expect(packet.PUBCOMP)
	p.send(&packet.Publish{QoS: 2, Topic: "out/2", PacketID: 4, Payload: []byte("d")})
	p.expect(packet.PUBREC)
	p.send(&packet.Pubrel{PacketID: 4})
	p.expect(packet.PUBCOMP)

	s, _ = dialRaw(t, b.addr, packet.Version311, cp())
	// a and b again (never acknowledged), then c and d.
	var got []*packet.Publish
	for len(got) < 4 {
		got = append(got, s.expect(packet.PUBLISH).(*packet.Publish))
	}
	if !got[0].Dup || got[0].PacketID != first.PacketID || string(got[1].Payload) != "b" || !got[1].Dup {
		t.Fatalf("resent %+v %+v", got[0], got[1])
	}
	s.send(&packet.Puback{PacketID: got[0].PacketID})
	s.send(&packet.Puback{PacketID: got[1].PacketID})
	c, d := got[2], got[3]
	if string(c.Payload) != "c" || c.QoS != 2 || string(d.Payload) != "d" {
		t.Fatalf("got %q %q", c.Payload, d.Payload)
	}
	s.send(&packet.Pubrec{PacketID: c.PacketID}) // c received, d not
	if rel := s.expect(packet.PUBREL).(*packet.Pubrel); rel.PacketID != c.PacketID {
		t.Fatalf("PUBREL %d, want %d", rel.PacketID, c.PacketID)
	}
	s.nc.Close()
	b.restart()

	s, _ = dialRaw(t, b.addr, packet.Version311, cp())
	// c: PUBREL only; d: PUBLISH again with DUP; in the order they were sent.
	if rel, ok := s.read().(*packet.Pubrel); !ok || rel.PacketID != c.PacketID {
		t.Fatalf("after restart: want PUBREL %d first", c.PacketID)
	}
	again, ok := s.read().(*packet.Publish)
	if !ok || !again.Dup || again.PacketID != d.PacketID || string(again.Payload) != "d" {
		t.Fatalf("after restart: %+v", again)
	}
	s.send(&packet.Pubcomp{PacketID: c.PacketID})
	s.send(&packet.Pubrec{PacketID: d.PacketID})
	s.expect(packet.PUBREL)
	s.send(&packet.Pubcomp{PacketID: d.PacketID})
	s.send(&packet.Pingreq{})
	s.expect(packet.PINGRESP) // and nothing else in between
}

// TestQoS1InMemoryQoS2Marked: a persistent session's QoS 1 messages in
// flight are not stored, so after a restart they come again from the
// committed offset; a QoS 2 message completed after one of them (the
// offset cannot pass it) is marked and never sent again; what was
// acknowledged before the restart is not sent again either.
func TestQoS1InMemoryQoS2Marked(t *testing.T) {
	b := startBroker(t, "", nil)
	cp := func() *packet.Connect { return &packet.Connect{ClientID: "mix", KeepAlive: 30} }
	s, _ := dialRaw(t, b.addr, packet.Version311, cp())
	s.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "mix/#", QoS: 2}}})
	s.expect(packet.SUBACK)
	p, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "mixp", CleanStart: true, KeepAlive: 30})
	p.publish(1, "mix/1", 1, "acked")
	p.publish(2, "mix/1", 1, "unacked")
	p.publish(3, "mix/2", 2, "exactly-once")
	p.publish(4, "mix/1", 1, "acked-after")

	acked := s.expect(packet.PUBLISH).(*packet.Publish)
	s.send(&packet.Puback{PacketID: acked.PacketID})
	if un := s.expect(packet.PUBLISH).(*packet.Publish); string(un.Payload) != "unacked" {
		t.Fatalf("second message %q", un.Payload)
	}
	q2 := s.expect(packet.PUBLISH).(*packet.Publish)
	if string(q2.Payload) != "exactly-once" || q2.QoS != 2 {
		t.Fatalf("third message %q QoS %d", q2.Payload, q2.QoS)
	}
	// The fourth message may come before the PUBREL.
	after := s.expect(packet.PUBLISH).(*packet.Publish)
	s.send(&packet.Pubrec{PacketID: q2.PacketID})
	s.expect(packet.PUBREL)
	s.send(&packet.Pubcomp{PacketID: q2.PacketID})
	s.send(&packet.Puback{PacketID: after.PacketID})
	s.send(&packet.Pingreq{})
	s.expect(packet.PINGRESP) // every acknowledgement handled
	s.nc.Close()
	b.restart()

	s, _ = dialRaw(t, b.addr, packet.Version311, cp())
	p, _ = dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "mixp", CleanStart: true, KeepAlive: 30})
	p.publish(5, "mix/1", 1, "end")
	var got []string
	for {
		m := s.expect(packet.PUBLISH).(*packet.Publish)
		got = append(got, string(m.Payload))
		if m.QoS == 1 {
			s.send(&packet.Puback{PacketID: m.PacketID})
		}
		if string(m.Payload) == "end" {
			break
		}
	}
	// "unacked" again; "acked-after" may come again (at least once:
	// its offset sat behind "unacked"); never "exactly-once", never "acked".
	if len(got) < 2 || got[0] != "unacked" || got[len(got)-1] != "end" {
		t.Fatalf("after restart got %q, want unacked first and end last", got)
	}
	for _, g := range got[1 : len(got)-1] {
		if g != "acked-after" {
			t.Fatalf("after restart got %q: %q sent again", got, g)
		}
	}
}

// TestOffsetWrittenLazily: the acknowledgements of a persistent session
// move its offset in memory, and the offset reaches the engine state
// within OffsetCommitInterval, with the connection still open (what a
// kill -9 would find).
func TestOffsetWrittenLazily(t *testing.T) {
	b := startBroker(t, "", &server.Options{OffsetCommitInterval: 20 * time.Millisecond})
	s, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "lazy", KeepAlive: 30})
	s.subscribe(1, packet.Subscription{Filter: "lazy/t", QoS: 1})
	p, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "lazyp", CleanStart: true, KeepAlive: 30})
	for i := range 3 {
		p.publish(uint16(i+1), "lazy/t", 1, fmt.Sprint("m", i))
	}
	for range 3 {
		m := s.expect(packet.PUBLISH).(*packet.Publish)
		s.send(&packet.Puback{PacketID: m.PacketID})
	}
	st := b.e.State(route.Namespace)
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, ok, err := st.Get("o/lazy\x00lazy/t")
		if err != nil {
			t.Fatal(err)
		}
		if ok && len(v) == 8 && binary.BigEndian.Uint64(v) == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("offset stored %x (found %v), want 3", v, ok)
		}
		time.Sleep(5 * time.Millisecond) // polling the store: no signal to wait on
	}
}
