package server_test

import (
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// TestPayloadFormatIndicator: a payload its indicator declares UTF-8
// and that is not is refused — PUBACK or PUBREC 0x99, DISCONNECT 0x99 at
// QoS 0 (no acknowledgement to refuse with), CONNACK 0x99 for a will —
// and not stored; a valid one, and invalid bytes without the indicator,
// pass with the indicator kept.
func TestPayloadFormatIndicator(t *testing.T) {
	b := startBroker(t, "", nil)
	sub, _ := dialRaw(t, b.addr, packet.Version5, v5connect("pf-sub", true, 0))
	sub.subscribe(1, packet.Subscription{Filter: "pf/#", QoS: 1})
	c, _ := dialRaw(t, b.addr, packet.Version5, v5connect("pf", true, 0))
	bad := []byte{'o', 0xff, 'k'}
	pub := func(pid uint16, qos byte, format byte, payload []byte) *packet.Publish {
		p := &packet.Publish{PacketID: pid, QoS: qos, Topic: "pf/x", Payload: payload}
		if format != 0 {
			p.Properties.PayloadFormat = format
			p.Properties.SetPresent(packet.PropPayloadFormat)
		}
		return p
	}
	c.send(pub(1, 1, 1, bad))
	if ack := c.expect(packet.PUBACK).(*packet.Puback); ack.ReasonCode != packet.PayloadFormatInvalid {
		t.Errorf("QoS 1: PUBACK %#x, want 0x99", byte(ack.ReasonCode))
	}
	c.send(pub(2, 2, 1, bad))
	if ack := c.expect(packet.PUBREC).(*packet.Pubrec); ack.ReasonCode != packet.PayloadFormatInvalid {
		t.Errorf("QoS 2: PUBREC %#x, want 0x99", byte(ack.ReasonCode))
	}
	c.send(pub(3, 1, 1, []byte("grüße")))
	if ack := c.expect(packet.PUBACK).(*packet.Puback); ack.ReasonCode != packet.Success {
		t.Errorf("valid UTF-8: PUBACK %#x", byte(ack.ReasonCode))
	}
	c.send(pub(4, 1, 0, bad))
	if ack := c.expect(packet.PUBACK).(*packet.Puback); ack.ReasonCode != packet.Success {
		t.Errorf("no indicator: PUBACK %#x", byte(ack.ReasonCode))
	}
	for _, want := range []struct {
		body   string
		format byte
	}{{"grüße", 1}, {string(bad), 0}} {
		got := sub.expect(packet.PUBLISH).(*packet.Publish)
		if string(got.Payload) != want.body || got.Properties.PayloadFormat != want.format {
			t.Errorf("delivered %q format %d, want %q format %d", got.Payload, got.Properties.PayloadFormat, want.body, want.format)
		}
		sub.send(&packet.Puback{PacketID: got.PacketID})
	}
	c.send(pub(0, 0, 1, bad))
	if got := c.closed(); len(got) != 1 || got[0].(*packet.Disconnect).ReasonCode != packet.PayloadFormatInvalid {
		t.Errorf("QoS 0: %v, want DISCONNECT 0x99", got)
	}
	if n := storedCount(t, b, "pf", string(bad)); n != 1 {
		t.Errorf("%d messages with the invalid payload stored, want 1 (the one without the indicator)", n)
	}

	cp := v5connect("pf-will", true, 0)
	cp.Will = &packet.Will{Topic: "pf/will", Payload: bad}
	cp.Will.Properties.PayloadFormat = 1
	cp.Will.Properties.SetPresent(packet.PropPayloadFormat)
	if _, ack := dialRaw(t, b.addr, packet.Version5, cp); ack.ReasonCode != packet.PayloadFormatInvalid {
		t.Errorf("will: CONNACK %#x, want 0x99", byte(ack.ReasonCode))
	}
}

// TestServerKeepAlive: with Options.MaxKeepAlive, a 5.0 client asking
// for more (or for none) gets the server's value in CONNACK's Server Keep
// Alive and is closed, with DISCONNECT 0x8D, once silent for 1.5 times
// it; a client asking for less keeps its own and gets no property.
func TestServerKeepAlive(t *testing.T) {
	b := startBroker(t, "", &server.Options{MaxKeepAlive: time.Second})
	for _, ask := range []uint16{60, 0} {
		cp := v5connect("ska", true, 0)
		cp.KeepAlive = ask
		c, ack := dialRaw(t, b.addr, packet.Version5, cp)
		if !ack.Properties.Has(packet.PropServerKeepAlive) || ack.Properties.ServerKeepAlive != 1 {
			t.Fatalf("asked %d s: CONNACK Server Keep Alive %d (present %v), want 1", ask, ack.Properties.ServerKeepAlive, ack.Properties.Has(packet.PropServerKeepAlive))
		}
		start := time.Now()
		got := c.closed()
		if d := time.Since(start); d < 1400*time.Millisecond || d > 5*time.Second {
			t.Errorf("asked %d s: closed after %v, want 1.5 s", ask, d)
		}
		if len(got) != 1 || got[0].(*packet.Disconnect).ReasonCode != packet.KeepAliveTimeout {
			t.Errorf("asked %d s: %v, want DISCONNECT 0x8D", ask, got)
		}
	}
	// A client within the maximum that pings stays.
	cp := v5connect("ska-ok", true, 0)
	cp.KeepAlive = 1
	c, ack := dialRaw(t, b.addr, packet.Version5, cp)
	if ack.Properties.Has(packet.PropServerKeepAlive) {
		t.Errorf("Server Keep Alive %d sent to a client within the maximum", ack.Properties.ServerKeepAlive)
	}
	for range 3 {
		time.Sleep(700 * time.Millisecond) // a client's ping interval, below the keep alive
		c.send(&packet.Pingreq{})
		c.expect(packet.PINGRESP)
	}
}
