package server_test

import (
	"slices"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// TestSessionsAndRetained checks what Sessions and Retained report: a
// persistent 3.1.1 session with its subscriptions, connected and then
// gone with messages queued for it, a clean 5.0 session, and a retained
// message.
func TestSessionsAndRetained(t *testing.T) {
	b := startBroker(t, "", nil)
	dev, _ := dialRaw(t, b.addr, packet.Version311, &packet.Connect{ClientID: "dev1", KeepAlive: 30})
	dev.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "ins/#", QoS: 1}, {Filter: "$share/g/grp/+", QoS: 0}}})
	dev.expect(packet.SUBACK)
	pub := dialV5(t, b.addr, &paho.Connect{ClientID: "pub", CleanStart: true})

	ss := sessionsBy(b.srv.Sessions())
	d, p := ss["dev1"], ss["pub"]
	if !d.Connected || d.Addr == "" || d.Version != packet.Version311 || !d.Persistent || d.Expiry != server.NeverExpires {
		t.Fatalf("dev1 = %+v, want connected, 3.1.1, persistent, never expiring", d)
	}
	if len(d.Subscriptions) != 2 || d.Subscriptions[0].Filter != "$share/g/grp/+" || d.Subscriptions[0].Group != "g" ||
		d.Subscriptions[0].QoS != 0 || d.Subscriptions[1].Filter != "ins/#" || d.Subscriptions[1].QoS != 1 {
		t.Fatalf("dev1 subscriptions = %+v", d.Subscriptions)
	}
	if !p.Connected || p.Version != packet.Version5 || p.Persistent || len(p.Subscriptions) != 0 {
		t.Fatalf("pub = %+v, want connected, 5.0, not persistent, no subscriptions", p)
	}

	dev.nc.Close()
	waitFor(t, "dev1 to be disconnected", func() bool { return !sessionsBy(b.srv.Sessions())["dev1"].Connected })
	for range 3 {
		pub.pub(&paho.Publish{Topic: "ins/x", QoS: 1, Payload: []byte("m")})
	}
	pub.pub(&paho.Publish{Topic: "ret/a", QoS: 1, Retain: true, Payload: []byte("hello")})
	waitFor(t, "3 messages queued for dev1", func() bool { return sessionsBy(b.srv.Sessions())["dev1"].Queued == 3 })
	d = sessionsBy(b.srv.Sessions())["dev1"]
	if d.Disconnected.IsZero() || d.Addr != "" || d.Subscriptions[1].Queued != 3 || d.Inflight != 0 {
		t.Fatalf("dev1 after its connection ended = %+v", d)
	}

	r := b.srv.Retained()
	if len(r) != 1 || r[0].Topic != "ret/a" || r[0].Size != 5 || r[0].QoS != 1 || r[0].Publisher != "pub" || !r[0].ExpireAt.IsZero() {
		t.Fatalf("Retained() = %+v, want ret/a of 5 bytes at QoS 1 by pub", r)
	}

	// A restart loads the session back, not connected.
	b.restart()
	d = sessionsBy(b.srv.Sessions())["dev1"]
	if d.Connected || len(d.Subscriptions) != 2 || d.Queued != 3 {
		t.Fatalf("dev1 after a restart = %+v", d)
	}
}

func sessionsBy(all []server.SessionInfo) map[string]server.SessionInfo {
	m := map[string]server.SessionInfo{}
	for _, s := range all {
		m[s.ClientID] = s
	}
	return m
}

// waitFor polls cond until it holds, failing after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSubResources(t *testing.T) {
	for _, tc := range []struct {
		filter string
		want   []hook.Resource
	}{
		{"devices/d1/#", []hook.Resource{hook.MQTT("devices/d1/#"), hook.Topic("devices")}},
		{"+/status", []hook.Resource{hook.MQTT("+/status"), hook.AllTopics}},
		{"#", []hook.Resource{hook.MQTT("#"), hook.AllTopics}},
		{"$SYS/broker/uptime", []hook.Resource{hook.MQTT("$SYS/broker/uptime")}},
	} {
		if got := server.SubResources(tc.filter); !slices.Equal(got, tc.want) {
			t.Errorf("SubResources(%q) = %v, want %v", tc.filter, got, tc.want)
		}
	}
}
