package server_test

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// v3 is a paho.mqtt.golang (3.1.1) client with what it received.
type v3 struct {
	t  testing.TB
	c  mqtt.Client
	mu sync.Mutex
	// got holds "topic=payload" of each message, in arrival order.
	got  []string
	more chan struct{}
}

func v3opts(addr, id string, clean bool) *mqtt.ClientOptions {
	o := mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).SetCleanSession(clean).
		SetAutoReconnect(false).SetProtocolVersion(4).SetKeepAlive(30 * time.Second).SetConnectTimeout(5 * time.Second)
	return o
}

func dialV3(t testing.TB, o *mqtt.ClientOptions) *v3 {
	t.Helper()
	v := &v3{t: t, more: make(chan struct{}, 1)}
	o.SetDefaultPublishHandler(v.handler)
	v.c = mqtt.NewClient(o)
	if tok := v.c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	t.Cleanup(func() { v.c.Disconnect(250) })
	return v
}

func (v *v3) handler(_ mqtt.Client, m mqtt.Message) {
	v.mu.Lock()
	v.got = append(v.got, m.Topic()+"="+string(m.Payload()))
	v.mu.Unlock()
	select {
	case v.more <- struct{}{}:
	default:
	}
}

func (v *v3) sub(filter string, qos byte) {
	v.t.Helper()
	tok := v.c.Subscribe(filter, qos, nil)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		v.t.Fatalf("subscribe %s: %v", filter, tok.Error())
	}
	if st := tok.(*mqtt.SubscribeToken); st.Result()[filter] != qos {
		v.t.Fatalf("subscribe %s granted %v", filter, st.Result())
	}
}

func (v *v3) pub(topic string, qos byte, retain bool, payload string) {
	v.t.Helper()
	tok := v.c.Publish(topic, qos, retain, payload)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		v.t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

func (v *v3) wait(n int) []string {
	v.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		v.mu.Lock()
		if len(v.got) >= n {
			out := append([]string(nil), v.got...)
			v.mu.Unlock()
			return out
		}
		have := len(v.got)
		v.mu.Unlock()
		select {
		case <-v.more:
		case <-deadline:
			v.t.Fatalf("received %d messages, want %d", have, n)
		}
	}
}

func TestV3QoSAndWildcards(t *testing.T) {
	b := startBroker(t, "", nil)
	sub := dialV3(t, v3opts(b.addr, "", true)) // empty id with clean session
	sub.sub("a/#", 2)
	sub.sub("+/x", 1)
	sub.sub("#", 0)
	pub := dialV3(t, v3opts(b.addr, "pub3", true))
	pub.pub("a/x", 2, false, "1") // matches all three filters
	pub.pub("b/x", 1, false, "2") // +/x and #
	pub.pub("a", 0, false, "3")   // a/# (the parent) and #
	got := sub.wait(7)
	count := map[string]int{}
	for _, g := range got {
		count[g]++
	}
	if count["a/x=1"] != 3 || count["b/x=2"] != 2 || count["a=3"] != 2 {
		t.Fatalf("got %v", got)
	}
}

func TestV3PersistentSessionAndRestart(t *testing.T) {
	b := startBroker(t, "", nil)
	o := v3opts(b.addr, "dev1", false)
	sub := dialV3(t, o)
	sub.sub("cmd/dev1/#", 1)
	sub.c.Disconnect(250)

	pub := dialV3(t, v3opts(b.addr, "ctl", true))
	for i := range 5 {
		pub.pub("cmd/dev1/set", 1, false, fmt.Sprint(i))
	}
	pub.c.Disconnect(250)
	b.restart()

	sub = dialV3(t, v3opts(b.addr, "dev1", false))
	got := sub.wait(5)
	for i, g := range got {
		if g != fmt.Sprintf("cmd/dev1/set=%d", i) {
			t.Fatalf("message %d: %s (all %v)", i, g, got)
		}
	}
}

func TestV3Will(t *testing.T) {
	b := startBroker(t, "", nil)
	watch := dialV3(t, v3opts(b.addr, "watch", true))
	watch.sub("status/#", 1)

	// A clean DISCONNECT: no will.
	o := v3opts(b.addr, "w1", true).SetWill("status/w1", "gone", 1, false)
	c := dialV3(t, o)
	c.c.Disconnect(250)

	// A connection that just ends: its will is published.
	nc, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	o = v3opts(b.addr, "w2", true).SetWill("status/w2", "gone", 1, false)
	o.SetCustomOpenConnectionFn(func(_ *url.URL, _ mqtt.ClientOptions) (net.Conn, error) { return nc, nil })
	dialV3(t, o)
	nc.Close()
	got := watch.wait(1)
	if got[0] != "status/w2=gone" {
		t.Fatalf("will: %v", got)
	}
}
