package server_test

import (
	"bytes"
	"net"
	"strings"
	"testing"

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
	b := &broker{t: t, e: e}

	sub, _ := dialRaw(t, ln.Addr().String(), packet.Version5, &packet.Connect{ClientID: "sub", CleanStart: true})
	sub.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "burst/#", QoS: 1}}})
	sub.expect(packet.SUBACK)

	pub, _ := dialRaw(t, ln.Addr().String(), packet.Version5, &packet.Connect{ClientID: "pub", CleanStart: true})
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
