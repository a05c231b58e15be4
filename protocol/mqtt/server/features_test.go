package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

func v5connect(id string, clean bool, expiry uint32) *packet.Connect {
	c := &packet.Connect{ClientID: id, CleanStart: clean, KeepAlive: 30}
	c.Properties.SessionExpiry = expiry
	return c
}

func (r *raw) subscribe(pid uint16, subs ...packet.Subscription) *packet.Suback {
	r.t.Helper()
	r.send(&packet.Subscribe{PacketID: pid, Subscriptions: subs})
	return r.expect(packet.SUBACK).(*packet.Suback)
}

func (r *raw) publish(pid uint16, topic string, qos byte, payload string) {
	r.t.Helper()
	r.send(&packet.Publish{PacketID: pid, Topic: topic, QoS: qos, Payload: []byte(payload)})
	switch qos {
	case 1:
		r.expect(packet.PUBACK)
	case 2:
		r.expect(packet.PUBREC)
		r.send(&packet.Pubrel{PacketID: pid})
		r.expect(packet.PUBCOMP)
	}
}

// closed waits for the server to close the connection, returning what it
// sent before.
func (r *raw) closed() []packet.Packet {
	r.t.Helper()
	var got []packet.Packet
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		p, err := r.dec.Read()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				r.t.Fatal("the server did not close the connection")
			}
			return got
		}
		got = append(got, p)
	}
}

func TestTakeover(t *testing.T) {
	b := startBroker(t, "", nil)
	old, _ := dialRaw(t, b.addr, packet.Version5, v5connect("dup", true, 0))
	dialRaw(t, b.addr, packet.Version5, v5connect("dup", true, 0))
	got := old.closed()
	if len(got) != 1 || got[0].(*packet.Disconnect).ReasonCode != packet.SessionTakenOver {
		t.Fatalf("the old connection got %v", got)
	}
}

func TestSharedSubscription(t *testing.T) {
	b := startBroker(t, "", nil)
	m1, _ := dialRaw(t, b.addr, packet.Version5, v5connect("m1", true, 0))
	m2, _ := dialRaw(t, b.addr, packet.Version5, v5connect("m2", true, 0))
	for _, m := range []*raw{m1, m2} {
		if sa := m.subscribe(1, packet.Subscription{Filter: "$share/g/work/#", QoS: 1}); sa.ReasonCodes[0] != 1 {
			t.Fatalf("SUBACK %v", sa.ReasonCodes)
		}
	}
	// No Local on a shared subscription is a protocol error.
	m1.send(&packet.Subscribe{PacketID: 2, Subscriptions: []packet.Subscription{{Filter: "$share/g/x", QoS: 1, NoLocal: true}}})
	if got := m1.closed(); len(got) != 1 || got[0].(*packet.Disconnect).ReasonCode != packet.ProtocolError {
		t.Fatalf("shared No Local: %v", got)
	}
	m1, _ = dialRaw(t, b.addr, packet.Version5, v5connect("m1", true, 0))
	m1.subscribe(1, packet.Subscription{Filter: "$share/g/work/#", QoS: 1})

	p, _ := dialRaw(t, b.addr, packet.Version5, v5connect("p", true, 0))
	const n = 20
	for i := range n {
		p.publish(uint16(i+1), "work/j", 1, fmt.Sprint(i))
	}
	// m2 takes what comes to it without acknowledging, then leaves; m1
	// acknowledges everything: every message reaches m1 once, either
	// first or after m2 left.
	seen := map[string]int{}
	m2got := 0
	m2.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	for {
		pk, err := m2.dec.Read()
		if err != nil {
			break
		}
		if _, ok := pk.(*packet.Publish); ok {
			m2got++
		}
	}
	m2.nc.Close()
	for len(seen) < n {
		pub := m1.expect(packet.PUBLISH).(*packet.Publish)
		seen[string(pub.Payload)]++
		m1.send(&packet.Puback{PacketID: pub.PacketID})
	}
	if m2got == 0 {
		t.Error("the second member got nothing")
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("message %s reached m1 %d times", k, c)
		}
	}
}

func TestNoLocalSubscriptionIDRetainOptions(t *testing.T) {
	b := startBroker(t, "", nil)
	c, _ := dialRaw(t, b.addr, packet.Version5, v5connect("c", true, 0))
	c.publish(1, "opt/r", 1, "kept") // retained below
	c.send(&packet.Publish{PacketID: 2, QoS: 1, Retain: true, Topic: "opt/r", Payload: []byte("kept")})
	c.expect(packet.PUBACK)
	s := &packet.Subscribe{PacketID: 3, Subscriptions: []packet.Subscription{
		{Filter: "opt/#", QoS: 1, NoLocal: true},
		{Filter: "opt/+", QoS: 1, RetainHandling: 2, RetainAsPublished: true},
	}}
	s.Properties.SubscriptionIdentifiers = []int{42}
	c.send(s)
	c.expect(packet.SUBACK) // no retained message: No Local does not stop retained ones, but RH 2 ...
	// ... opt/# (RH 0) gets the retained one.
	r := c.expect(packet.PUBLISH).(*packet.Publish)
	if !r.Retain || string(r.Payload) != "kept" || len(r.Properties.SubscriptionIdentifiers) != 1 || r.Properties.SubscriptionIdentifiers[0] != 42 {
		t.Fatalf("retained %+v", r)
	}
	c.send(&packet.Puback{PacketID: r.PacketID})
	c.send(&packet.Publish{QoS: 0, Retain: true, Topic: "opt/live", Payload: []byte("mine")})
	// Only opt/+ delivers it (No Local stops opt/#), with RETAIN kept
	// (Retain As Published).
	live := c.expect(packet.PUBLISH).(*packet.Publish)
	if !live.Retain || string(live.Payload) != "mine" {
		t.Fatalf("live %+v", live)
	}
	c.send(&packet.Pingreq{})
	c.expect(packet.PINGRESP) // nothing else came
}

func TestTopicAliasReceiveMaximumPacketSize(t *testing.T) {
	b := startBroker(t, "", nil)
	cp := v5connect("rm", true, 0)
	cp.Properties.ReceiveMaximum = 2
	cp.Properties.MaximumPacketSize = 200
	s, ack := dialRaw(t, b.addr, packet.Version5, cp)
	if ack.Properties.TopicAliasMaximum == 0 || ack.Properties.ReceiveMaximum == 0 || ack.Properties.MaximumPacketSize == 0 {
		t.Fatalf("CONNACK properties %+v", ack.Properties)
	}
	s.subscribe(1, packet.Subscription{Filter: "flow/#", QoS: 1})
	p, _ := dialRaw(t, b.addr, packet.Version5, v5connect("p", true, 0))
	pub := &packet.Publish{PacketID: 1, QoS: 1, Topic: "flow/a", Payload: []byte("0")}
	pub.Properties.TopicAlias = 1
	p.send(pub)
	p.expect(packet.PUBACK)
	big := strings.Repeat("x", 300) // over the subscriber's maximum: skipped
	p.send(&packet.Publish{PacketID: 2, QoS: 1, Topic: "flow/a", Payload: []byte(big)})
	p.expect(packet.PUBACK)
	for i := 1; i <= 3; i++ {
		alias := &packet.Publish{PacketID: uint16(i + 2), QoS: 1, Payload: []byte(fmt.Sprint(i))} // by alias only
		alias.Properties.TopicAlias = 1
		p.send(alias)
		p.expect(packet.PUBACK)
	}
	// Receive maximum 2: two messages, then nothing until an ack.
	first := s.expect(packet.PUBLISH).(*packet.Publish)
	if string(first.Payload) != "0" || first.Topic != "flow/a" {
		t.Fatalf("first %q on %s", first.Payload, first.Topic)
	}
	second := s.expect(packet.PUBLISH).(*packet.Publish) // the oversized one was skipped
	if string(second.Payload) != "1" || second.Topic != "flow/a" {
		t.Fatalf("second %q on %s", second.Payload, second.Topic)
	}
	s.send(&packet.Pingreq{})
	s.expect(packet.PINGRESP) // no third PUBLISH before it
	s.send(&packet.Puback{PacketID: first.PacketID})
	if third := s.expect(packet.PUBLISH).(*packet.Publish); string(third.Payload) != "2" {
		t.Fatalf("third %q", third.Payload)
	}
	// An unknown alias is a protocol error.
	bad := &packet.Publish{PacketID: 9, QoS: 1}
	bad.Properties.TopicAlias = 5
	p.send(bad)
	got := p.closed()
	if len(got) != 1 || got[0].(*packet.Disconnect).ReasonCode != packet.ProtocolError {
		t.Fatalf("unknown alias: %v", got)
	}
}

func TestWillDelayAndSessionExpiry(t *testing.T) {
	b := startBroker(t, "", nil)
	w := dialV5(t, b.addr, &paho.Connect{ClientID: "watch", CleanStart: true})
	w.sub("will/#", 1)

	// A will with a delay is cancelled by a reconnect within it.
	cp := v5connect("wd", false, 60)
	cp.Will = &packet.Will{Topic: "will/wd", QoS: 1, Payload: []byte("late")}
	cp.Will.Properties.WillDelay = 60
	c, _ := dialRaw(t, b.addr, packet.Version5, cp)
	c.nc.Close()
	c, ack := dialRaw(t, b.addr, packet.Version5, v5connect("wd", false, 60))
	if !ack.SessionPresent {
		t.Fatal("no session present")
	}
	c.send(&packet.Disconnect{})

	// A will with a delay longer than the session: published when the
	// session ends (expiry 1 s).
	cp = v5connect("we", false, 1)
	cp.Will = &packet.Will{Topic: "will/we", QoS: 1, Payload: []byte("ended")}
	cp.Will.Properties.WillDelay = 600
	c, _ = dialRaw(t, b.addr, packet.Version5, cp)
	start := time.Now()
	c.nc.Close()
	got := w.wait(1)
	if got[0].Topic != "will/we" || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("will %s after %v", got[0].Topic, time.Since(start))
	}
	// The session is gone with it.
	_, ack = dialRaw(t, b.addr, packet.Version5, v5connect("we", false, 1))
	if ack.SessionPresent {
		t.Error("an expired session was present")
	}
	w.none(1, 100*time.Millisecond)
}

func TestMessageExpiry(t *testing.T) {
	b := startBroker(t, "", nil)
	s, _ := dialRaw(t, b.addr, packet.Version5, v5connect("exp", false, 300))
	s.subscribe(1, packet.Subscription{Filter: "exp/#", QoS: 1})
	s.nc.Close()
	p, _ := dialRaw(t, b.addr, packet.Version5, v5connect("p", true, 0))
	short := &packet.Publish{PacketID: 1, QoS: 1, Topic: "exp/short", Payload: []byte("s")}
	short.Properties.MessageExpiry = 1
	p.send(short)
	p.expect(packet.PUBACK)
	long := &packet.Publish{PacketID: 2, QoS: 1, Topic: "exp/long", Payload: []byte("l")}
	long.Properties.MessageExpiry = 100
	p.send(long)
	p.expect(packet.PUBACK)
	time.Sleep(1100 * time.Millisecond) // the condition is time passing
	s, _ = dialRaw(t, b.addr, packet.Version5, v5connect("exp", false, 300))
	got := s.expect(packet.PUBLISH).(*packet.Publish)
	if got.Topic != "exp/long" || got.Properties.MessageExpiry == 0 || got.Properties.MessageExpiry > 99 {
		t.Fatalf("got %s expiry %d", got.Topic, got.Properties.MessageExpiry)
	}
}

type authHooks struct{}

func (authHooks) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	if c.Protocol != "mqtt" || c.Username != "dev" || string(c.Password) != "secret" {
		return hook.Principal{}, hook.ErrUnauthenticated
	}
	return hook.Principal{Name: c.Username}, nil
}

func (authHooks) Authorize(_ context.Context, p hook.Principal, a hook.Action, r hook.Resource) error {
	if r.Type == hook.ResourceMQTT && strings.HasPrefix(r.Name, "secret") {
		return hook.Deny("not for devices")
	}
	return nil
}

func TestAuth(t *testing.T) {
	r := route.New()
	e, err := engine.Open(t.TempDir(), &engine.Options{Router: r, AutoCreateTopics: true, SegmentSize: 4 << 20, Hooks: []any{authHooks{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv, err := server.New(e, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	addr := ln.Addr().String()

	for _, v := range []byte{packet.Version311, packet.Version5} {
		_, ack := dialRaw(t, addr, v, &packet.Connect{ClientID: "x", CleanStart: true, UsernameFlag: true, Username: "dev", PasswordFlag: true, Password: []byte("wrong")})
		want := packet.BadUserNameOrPassword
		if v == packet.Version311 {
			want = packet.V3RefusedBadUserNameOrPassord
		}
		if ack.ReasonCode != want {
			t.Errorf("v%d: CONNACK %v, want %v", v, ack.ReasonCode, want)
		}
	}
	c, ack := dialRaw(t, addr, packet.Version5, &packet.Connect{ClientID: "x", CleanStart: true, UsernameFlag: true, Username: "dev", PasswordFlag: true, Password: []byte("secret")})
	if ack.ReasonCode != 0 {
		t.Fatalf("CONNACK %v", ack.ReasonCode)
	}
	if sa := c.subscribe(1, packet.Subscription{Filter: "secret/#", QoS: 1}, packet.Subscription{Filter: "open/#", QoS: 1}); sa.ReasonCodes[0] != packet.NotAuthorized || sa.ReasonCodes[1] != 1 {
		t.Errorf("SUBACK %v", sa.ReasonCodes)
	}
	c.send(&packet.Publish{PacketID: 2, QoS: 1, Topic: "secret/x", Payload: []byte("no")})
	if pa := c.expect(packet.PUBACK).(*packet.Puback); pa.ReasonCode != packet.NotAuthorized || !strings.Contains(pa.Properties.ReasonString, "not for devices") {
		t.Errorf("PUBACK %v %q", pa.ReasonCode, pa.Properties.ReasonString)
	}
}

func TestBadInput(t *testing.T) {
	b := startBroker(t, "", nil)
	dial := func() net.Conn {
		nc, err := net.Dial("tcp", b.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}
	readAll := func(nc net.Conn) []byte {
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(nc)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the connection was not closed")
		}
		return got
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte
	}{
		{"PINGREQ before CONNECT", []byte{0xC0, 0}, nil},
		{"protocol level 9 (3.1.1 layout)", append([]byte{0x10, 10, 0, 4, 'M', 'Q', 'T', 'T', 9, 2, 0, 30}, 0, 0), []byte{0x20, 2, 0, 1}},
		{"wrong protocol name", []byte{0x10, 12, 0, 4, 'M', 'Q', 'X', 'X', 4, 2, 0, 30, 0, 0}, nil},
		{"remaining length of 5 bytes", []byte{0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, nil},
	} {
		nc := dial()
		nc.Write(tc.in)
		if got := readAll(nc); string(got) != string(tc.want) {
			t.Errorf("%s: got % x, want % x", tc.name, got, tc.want)
		}
	}
	// A wildcard in a PUBLISH topic: 3.1.1 closes, 5.0 says 0x90 first.
	c3, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "b3", CleanStart: true})
	c3.nc.Write([]byte{0x30, 5, 0, 3, 'a', '/', '#'})
	if got := c3.closed(); len(got) != 0 {
		t.Errorf("3.1.1 wildcard publish: %v", got)
	}
	c5, _ := dialRaw(t, b.addr, packet.Version5, &packet.Connect{ClientID: "b5", CleanStart: true})
	c5.nc.Write([]byte{0x30, 6, 0, 3, 'a', '/', '#', 0})
	if got := c5.closed(); len(got) != 1 || got[0].(*packet.Disconnect).ReasonCode != packet.TopicNameInvalid {
		t.Errorf("5.0 wildcard publish: %v", got)
	}
	// Other clients are unaffected.
	ok := dialV5(t, b.addr, &paho.Connect{ClientID: "fine", CleanStart: true})
	ok.sub("fine", 0)
}

func TestSys(t *testing.T) {
	b := startBroker(t, "", nil)
	c := dialV5(t, b.addr, &paho.Connect{ClientID: "sys", CleanStart: true})
	c.sub("$SYS/broker/clients/+", 0)
	got := c.wait(2)
	topics := map[string]string{}
	for _, m := range got {
		topics[m.Topic] = string(m.Payload)
	}
	if topics["$SYS/broker/clients/connected"] != "1" {
		t.Fatalf("$SYS: %v", topics)
	}
	// '#' does not match $SYS topics.
	d := dialV5(t, b.addr, &paho.Connect{ClientID: "all", CleanStart: true})
	d.sub("#", 0)
	d.none(0, 100*time.Millisecond)
}

func TestTopicAliasOutbound(t *testing.T) {
	b := startBroker(t, "", nil)
	cp := v5connect("al", true, 0)
	cp.Properties.TopicAliasMaximum = 2
	s, _ := dialRaw(t, b.addr, packet.Version5, cp)
	s.subscribe(1, packet.Subscription{Filter: "al/#", QoS: 0})
	p, _ := dialRaw(t, b.addr, packet.Version5, v5connect("p", true, 0))
	topics := []string{"al/a", "al/b", "al/c", "al/a", "al/b", "al/c"}
	for i, tp := range topics {
		p.publish(uint16(i+1), tp, 1, tp)
	}
	aliases := map[uint16]string{}
	for i, want := range topics {
		got := s.expect(packet.PUBLISH).(*packet.Publish)
		a := got.Properties.TopicAlias
		topic := got.Topic
		switch {
		case a != 0 && topic != "":
			aliases[a] = topic
		case a != 0:
			topic = aliases[a]
		}
		if topic != want || string(got.Payload) != want {
			t.Fatalf("message %d: topic %q alias %d payload %q, want %s", i, got.Topic, a, got.Payload, want)
		}
		if want == "al/c" && a != 0 {
			t.Fatalf("al/c got alias %d beyond the client's maximum of 2", a)
		}
		if i >= 3 && want != "al/c" && got.Topic != "" {
			t.Fatalf("message %d: the topic again instead of the alias alone", i)
		}
	}
}

// A member that takes messages and never acknowledges them does not keep
// them: after the stall timeout they go to another member.
func TestSharedStalledMember(t *testing.T) {
	b := startBroker(t, "", &server.Options{SharedStallTimeout: 300 * time.Millisecond, MaxInflight: 4})
	stalled, _ := dialRaw(t, b.addr, packet.Version5, v5connect("stalled", true, 0))
	stalled.subscribe(1, packet.Subscription{Filter: "$share/g/st/#", QoS: 1})
	p, _ := dialRaw(t, b.addr, packet.Version5, v5connect("p", true, 0))
	for i := range 4 {
		p.publish(uint16(i+1), "st/x", 1, fmt.Sprint(i))
	}
	for range 4 { // all four, none acknowledged
		stalled.expect(packet.PUBLISH)
	}
	good, _ := dialRaw(t, b.addr, packet.Version5, v5connect("good", true, 0))
	good.subscribe(1, packet.Subscription{Filter: "$share/g/st/#", QoS: 1})
	seen := map[string]bool{}
	for len(seen) < 4 {
		pub := good.expect(packet.PUBLISH).(*packet.Publish)
		seen[string(pub.Payload)] = true
		good.send(&packet.Puback{PacketID: pub.PacketID})
	}
}

// A connection silent for 1.5 times its keep alive is closed, and its
// will published.
func TestKeepAlive(t *testing.T) {
	b := startBroker(t, "", nil)
	w := dialV5(t, b.addr, &paho.Connect{ClientID: "watch", CleanStart: true})
	w.sub("ka/#", 0)
	cp := &packet.Connect{ClientID: "quiet", CleanStart: true, KeepAlive: 1,
		Will: &packet.Will{Topic: "ka/quiet", Payload: []byte("timed out")}}
	c, _ := dialRaw(t, b.addr, packet.Version311, cp)
	start := time.Now()
	c.closed()
	if d := time.Since(start); d < 1400*time.Millisecond {
		t.Fatalf("closed after %v, before 1.5 × the keep alive", d)
	}
	if got := w.wait(1); got[0].Topic != "ka/quiet" {
		t.Fatalf("will %s", got[0].Topic)
	}
}

// A QoS 0 subscription too far behind its queue skips to the newest
// message, and the skipped ones are counted.
func TestQoS0Lag(t *testing.T) {
	b := startBroker(t, "", &server.Options{MaxQoS0Lag: 5})
	s, _ := dialRaw(t, b.addr, packet.Version5, v5connect("slow", false, 300))
	s.subscribe(1, packet.Subscription{Filter: "lag/#", QoS: 0})
	s.nc.Close()
	p, _ := dialRaw(t, b.addr, packet.Version5, v5connect("p", true, 0))
	for i := range 20 {
		p.publish(uint16(i+1), "lag/x", 1, fmt.Sprint(i))
	}
	b.e.WaitDispatched(context.Background()) // all 20 in the filter's queue
	s, _ = dialRaw(t, b.addr, packet.Version5, v5connect("slow", false, 300))
	if got := s.expect(packet.PUBLISH).(*packet.Publish); string(got.Payload) != "19" {
		t.Fatalf("got %q first, want the newest, 19", got.Payload)
	}
	if n := b.srv.Stats().DroppedQoS0; n != 19 {
		t.Fatalf("DroppedQoS0 %d, want 19", n)
	}
}

// A client over our Receive Maximum of QoS 2 messages awaiting PUBREL is
// disconnected with 0x93; a packet over our Maximum Packet Size with 0x95.
func TestInboundLimits(t *testing.T) {
	b := startBroker(t, "", &server.Options{ReceiveMaximum: 2, MaxPacketSize: 1024})
	c, ack := dialRaw(t, b.addr, packet.Version5, v5connect("lim", true, 0))
	if ack.Properties.ReceiveMaximum != 2 || ack.Properties.MaximumPacketSize != 1024 {
		t.Fatalf("CONNACK %+v", ack.Properties)
	}
	for i := range 3 {
		c.send(&packet.Publish{PacketID: uint16(i + 1), QoS: 2, Topic: "lim/x", Payload: []byte("x")})
	}
	c.expect(packet.PUBREC)
	c.expect(packet.PUBREC)
	if got := c.closed(); len(got) != 1 || got[0].(*packet.Disconnect).ReasonCode != packet.ReceiveMaximumExceeded {
		t.Fatalf("over receive maximum: %v", got)
	}
	c, _ = dialRaw(t, b.addr, packet.Version5, v5connect("big", true, 0))
	c.send(&packet.Publish{QoS: 0, Topic: "lim/x", Payload: make([]byte, 2000)})
	if got := c.closed(); len(got) != 1 || got[0].(*packet.Disconnect).ReasonCode != packet.PacketTooLarge {
		t.Fatalf("over maximum packet size: %v", got)
	}
}

// Large packets wait for room in MaxPacketMemory: a second connection's
// packet is not read while the first one's holds the memory.
func TestPacketMemory(t *testing.T) {
	b := startBroker(t, "", &server.Options{MaxPacketSize: 8 << 10, MaxPacketMemory: 8 << 10})
	a, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "a", CleanStart: true})
	c, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "c", CleanStart: true})
	big := func(pid uint16, fill byte) []byte {
		b, _ := (&packet.Publish{QoS: 1, PacketID: pid, Topic: "mem/x", Payload: bytes.Repeat([]byte{fill}, 5000)}).AppendTo(nil, packet.Version311)
		return b
	}
	pa := big(1, 'a')
	a.nc.Write(pa[:100]) // a's packet is being read: 5 KiB reserved
	deadline := time.Now().Add(5 * time.Second)
	for b.srv.Stats().PacketMemory == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a's packet reserved no memory")
		}
		time.Sleep(time.Millisecond)
	}
	c.nc.Write(big(2, 'c')) // c's does not fit beside it
	c.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if p, err := c.dec.Read(); err == nil {
		t.Fatalf("c got %s while a's packet held the memory", p.Type())
	}
	a.nc.Write(pa[100:])
	a.expect(packet.PUBACK)
	a.send(&packet.Pingreq{}) // a's next read gives the memory back
	a.expect(packet.PINGRESP)
	if ack := c.expect(packet.PUBACK).(*packet.Puback); ack.PacketID != 2 {
		t.Fatalf("PUBACK %d", ack.PacketID)
	}
}

// A DISCONNECT that sets the session expiry to 0 ends the session, stored
// state included: after a restart it is not present.
func TestDisconnectEndsSession(t *testing.T) {
	b := startBroker(t, "", nil)
	c, _ := dialRaw(t, b.addr, packet.Version5, v5connect("short", false, 600))
	c.subscribe(1, packet.Subscription{Filter: "end/#", QoS: 1})
	d := &packet.Disconnect{}
	d.Properties.SessionExpiry = 0
	d.Properties.SetPresent(packet.PropSessionExpiry)
	c.send(d)
	c.closed()
	b.restart()
	_, ack := dialRaw(t, b.addr, packet.Version5, v5connect("short", false, 600))
	if ack.SessionPresent {
		t.Fatal("the session outlived a DISCONNECT with expiry 0")
	}
}
