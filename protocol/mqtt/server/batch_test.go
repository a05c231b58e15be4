package server_test

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// TestPublishBurst sends a burst of PUBLISH packets in one write, so the
// reader stores them in batches: every message is stored once, in the
// order sent, each PUBACK comes in order with its own reason (one message
// the engine refuses as too large fails alone), and a subscriber gets
// the stored ones in order.
func TestPublishBurst(t *testing.T) {
	b, addr := smallMessageBroker(t)

	sub, _ := dialRaw(t, addr, packet.Version5, &packet.Connect{ClientID: "sub", CleanStart: true})
	sub.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "burst/#", QoS: 1}}})
	sub.expect(packet.SUBACK)

	pub, _ := dialRaw(t, addr, packet.Version5, &packet.Connect{ClientID: "pub", CleanStart: true})
	type msg struct {
		topic string
		qos   byte
		body  string
		code  packet.ReasonCode // of its PUBACK
	}
	var msgs []msg
	for i := range 100 {
		m := msg{topic: "burst/a", qos: 1, body: "a" + string(rune('0'+i%10)) + strings.Repeat("x", i), code: packet.Success}
		switch {
		case i == 40:
			m.body, m.code = strings.Repeat("big", 500), packet.ImplementationSpecificError
		case i%7 == 3:
			m.topic = "other/b" // another engine topic ends the batch
		case i%5 == 0:
			m.qos = 0
		}
		msgs = append(msgs, m)
	}
	var burst []byte
	var err error
	for i, m := range msgs {
		p := &packet.Publish{Topic: m.topic, QoS: m.qos, Payload: []byte(m.body)}
		if m.qos > 0 {
			p.PacketID = uint16(i + 1)
		}
		if burst, err = p.AppendTo(burst, packet.Version5); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pub.nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	var want []string // what the subscriber gets, in order
	for i, m := range msgs {
		if m.code == packet.Success && m.topic == "burst/a" {
			want = append(want, m.body)
		}
		if m.qos == 0 {
			continue
		}
		ack := pub.expect(packet.PUBACK).(*packet.Puback)
		if ack.PacketID != uint16(i+1) || ack.ReasonCode != m.code {
			t.Fatalf("PUBACK %d %#x, want %d %#x", ack.PacketID, byte(ack.ReasonCode), i+1, byte(m.code))
		}
	}
	for i, m := range msgs {
		stored := 0
		if m.code == packet.Success {
			stored = 1
		}
		first, _, _ := strings.Cut(m.topic, "/")
		if n := storedCount(t, b, first, m.body); n != stored {
			t.Fatalf("message %d stored %d times, want %d", i, n, stored)
		}
	}
	for i, w := range want {
		p := sub.expect(packet.PUBLISH).(*packet.Publish)
		if !bytes.Equal(p.Payload, []byte(w)) {
			t.Fatalf("delivery %d: %q, want %q", i, p.Payload, w)
		}
		if p.QoS > 0 {
			sub.send(&packet.Puback{PacketID: p.PacketID})
		}
	}
}

// smallMessageBroker is a broker whose engine takes bodies of at most
// 1 KiB.
func smallMessageBroker(t *testing.T) (*broker, string) {
	t.Helper()
	r := route.New()
	e, err := engine.Open(t.TempDir(), &engine.Options{Router: r, AutoCreateTopics: true, SegmentSize: 4 << 20, MaxMessageSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(e, r, nil)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); e.Close() })
	return &broker{t: t, e: e}, ln.Addr().String()
}

// TestPublishBurstV3Refused: MQTT 3.1.1 has no negative PUBACK, so a
// message the engine refuses in a burst ends the connection. The
// messages before it are stored, it and those after it are not, and no
// PUBACK comes for a message that was not stored.
func TestPublishBurstV3Refused(t *testing.T) {
	b, addr := smallMessageBroker(t)
	pub, _ := dialRaw(t, addr, packet.Version311, &packet.Connect{ClientID: "pub", CleanStart: true})
	bodies := []string{"v3-0", "v3-1", strings.Repeat("big", 500), "v3-3", "v3-4"}
	var burst []byte
	for i, body := range bodies {
		var err error
		burst, err = (&packet.Publish{Topic: "v3/a", QoS: 1, PacketID: uint16(i + 1), Payload: []byte(body)}).AppendTo(burst, packet.Version311)
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pub.nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	pub.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		p, err := pub.dec.Read()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the connection stayed open")
			}
			break // closed
		}
		if ack, ok := p.(*packet.Puback); !ok || ack.PacketID > 2 {
			t.Fatalf("got %v, want at most the PUBACKs of the first two", p)
		}
	}
	for i, body := range bodies {
		want := 0
		if i < 2 {
			want = 1
		}
		if n := storedCount(t, b, "v3", body); n != want {
			t.Fatalf("message %d stored %d times, want %d", i, n, want)
		}
	}
}
