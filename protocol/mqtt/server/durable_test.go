package server_test

import (
	"slices"
	"testing"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
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
