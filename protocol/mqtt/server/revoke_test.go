package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// aclBroker serves MQTT over TCP on an engine in dir whose hook is an
// access-control list: root (super) and dev, who may publish and
// subscribe under devices/<its client id>/.
func aclBroker(t *testing.T, dir string) (a *acl.ACL, addr string, stop func()) {
	t.Helper()
	r := route.New()
	a = acl.New(acl.Options{})
	e, err := engine.Open(dir, &engine.Options{Router: r, AutoCreateTopics: true, SegmentSize: 4 << 20, Hooks: []any{a}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Attach(e); err != nil {
		t.Fatal(err)
	}
	if _, err := a.User("root"); err != nil {
		for _, u := range []acl.User{{Name: "root", Secret: "rootsecret", Type: acl.Super}, {Name: "dev", Secret: "devsecret"}} {
			if err := a.CreateUser(u); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.AddPolicies("dev", []acl.Entry{
			{Resource: "Topic:devices", Actions: []string{"Pub", "Sub"}, Decision: acl.Allow},
			{Resource: "mqtt:devices/%c/#", Actions: []string{"Pub", "Sub"}, Decision: acl.Allow},
		}); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(e, r, nil)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		e.Close()
		t.Fatal(err)
	}
	go srv.Serve(ln)
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			srv.Close()
			e.Close()
		}
	}
	t.Cleanup(stop)
	return a, ln.Addr().String(), stop
}

// login connects user as client id with a session kept for 300 s.
func login(t *testing.T, addr, user, id string) *v5 {
	t.Helper()
	expiry := uint32(300)
	return dialV5(t, addr, &paho.Connect{ClientID: id, UsernameFlag: true, Username: user, PasswordFlag: true,
		Password: []byte(user + "secret"), Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}})
}

// serverDisconnect waits for the server's DISCONNECT to v and checks it
// is 0x87 Not authorized with a reason containing want.
func serverDisconnect(t *testing.T, v *v5, want string) {
	t.Helper()
	select {
	case d := <-v.disc:
		reason := ""
		if d.Properties != nil {
			reason = d.Properties.ReasonString
		}
		if d.ReasonCode != byte(packet.NotAuthorized) || !strings.Contains(reason, want) {
			t.Fatalf("DISCONNECT %#x %q, want 0x87 naming %q", d.ReasonCode, reason, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no DISCONNECT")
	}
}

// TestRevokeSubscription: a device whose Sub right on a filter is
// revoked while it is connected loses its subscriptions to it, shared
// or not, and is
// disconnected (5.0: 0x87 with a reason naming the filter); back with its
// session, it keeps its other subscriptions, receives nothing for the
// revoked one, and may not subscribe to it again.
func TestRevokeSubscription(t *testing.T) {
	a, addr, _ := aclBroker(t, t.TempDir())
	dev := login(t, addr, "dev", "d1")
	for _, f := range []string{"devices/d1/cmd", "$share/g/devices/d1/cmd", "devices/d1/status"} {
		if sa := dev.sub(f, 1); sa.Reasons[0] != 1 {
			t.Fatalf("SUBACK %s: %v", f, sa.Reasons)
		}
	}
	root := login(t, addr, "root", "root")
	root.pub(&paho.Publish{Topic: "devices/d1/cmd", QoS: 1, Payload: []byte("one")})
	if got := dev.wait(2); string(got[0].Payload) != "one" || string(got[1].Payload) != "one" {
		t.Fatalf("received %q and %q, want it by both subscriptions", got[0].Payload, got[1].Payload)
	}

	if err := a.AddPolicies("dev", []acl.Entry{{Resource: "mqtt:devices/%c/cmd", Actions: []string{"Sub"}, Decision: acl.Deny}}); err != nil {
		t.Fatal(err)
	}
	serverDisconnect(t, dev, "devices/d1/cmd")

	dev = login(t, addr, "dev", "d1")
	if !dev.ack.SessionPresent {
		t.Fatal("the session was not kept")
	}
	root.pub(&paho.Publish{Topic: "devices/d1/cmd", QoS: 1, Payload: []byte("revoked")})
	root.pub(&paho.Publish{Topic: "devices/d1/status", QoS: 1, Payload: []byte("kept")})
	if got := dev.wait(1); got[0].Topic != "devices/d1/status" {
		t.Fatalf("received %s %q", got[0].Topic, got[0].Payload)
	}
	dev.none(1, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sa, err := dev.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "devices/d1/cmd", QoS: 1}}})
	if sa == nil || sa.Reasons[0] != byte(packet.NotAuthorized) {
		t.Fatalf("SUBACK of the revoked filter: %+v, %v", sa, err)
	}
}

// TestRevokeUser: a user deleted or disabled while its device is
// connected is disconnected, with or without subscriptions, and its will
// dropped; an MQTT 3.1.1 device whose subscription is revoked finds its
// connection closed, and its will is published.
func TestRevokeUser(t *testing.T) {
	a, addr, _ := aclBroker(t, t.TempDir())
	if err := a.CreateUser(acl.User{Name: "tmp", Secret: "tmpsecret"}); err != nil {
		t.Fatal(err)
	}
	root := login(t, addr, "root", "root")
	if sa := root.sub("devices/+/will", 1); sa.Reasons[0] != 1 {
		t.Fatalf("SUBACK %v", sa.Reasons)
	}
	for _, tc := range []struct {
		name   string
		revoke func() error
	}{
		{"disabled", func() error { return a.UpdateUser("dev", acl.UserChange{Status: acl.Disabled}) }},
		{"deleted", func() error { return a.DeleteUser("tmp") }},
	} {
		user, id := map[string]string{"disabled": "dev", "deleted": "tmp"}[tc.name], "u-"+tc.name
		var v *v5
		if user == "dev" {
			v = dialV5(t, addr, &paho.Connect{ClientID: id, UsernameFlag: true, Username: user, PasswordFlag: true,
				Password: []byte(user + "secret"), WillMessage: &paho.WillMessage{QoS: 1, Topic: "devices/" + id + "/will", Payload: []byte(id)}})
		} else {
			v = login(t, addr, user, id)
		}
		if err := tc.revoke(); err != nil {
			t.Fatal(err)
		}
		serverDisconnect(t, v, user)
	}
	if err := a.UpdateUser("dev", acl.UserChange{Status: acl.Enabled}); err != nil {
		t.Fatal(err)
	}

	c, ack := dialRaw(t, addr, packet.Version311, &packet.Connect{ClientID: "d3", CleanStart: true,
		UsernameFlag: true, Username: "dev", PasswordFlag: true, Password: []byte("devsecret"),
		Will: &packet.Will{QoS: 1, Topic: "devices/d3/will", Payload: []byte("d3")}})
	if ack.ReasonCode != 0 {
		t.Fatalf("CONNACK %v", ack.ReasonCode)
	}
	c.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "devices/d3/cmd", QoS: 1}}})
	if sa := c.expect(packet.SUBACK).(*packet.Suback); sa.ReasonCodes[0] != 1 {
		t.Fatalf("SUBACK %v", sa.ReasonCodes)
	}
	if err := a.AddPolicies("dev", []acl.Entry{{Resource: "Topic:devices", Actions: []string{"Sub"}, Decision: acl.Deny}}); err != nil {
		t.Fatal(err)
	}
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.dec.Read(); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("3.1.1 connection after the revocation: %v, want it closed", err)
	}
	// d3's will comes, and first: the disabled user's, which would have
	// been published before it, was dropped.
	if got := root.wait(1); got[0].Topic != "devices/d3/will" {
		t.Fatalf("first will received: %s %q", got[0].Topic, got[0].Payload)
	}
	root.none(1, 100*time.Millisecond)
}

// TestResumeRechecks: a session's subscriptions are checked again when
// it is resumed: one revoked while its device was away is gone; a session
// saved before authentication was turned on is taken by the first user
// that connects with its client id, keeping only the subscriptions that
// user may hold.
func TestResumeRechecks(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, nil) // no authentication
	old := dialV5(t, b.addr, &paho.Connect{ClientID: "d4", Properties: &paho.ConnectProperties{SessionExpiryInterval: new(uint32(300))}})
	for _, f := range []string{"devices/d4/cmd", "devices/d4/status", "other/x"} {
		if sa := old.sub(f, 1); sa.Reasons[0] != 1 {
			t.Fatalf("SUBACK %s: %v", f, sa.Reasons)
		}
	}
	old.c.Disconnect(&paho.Disconnect{})
	b.stop()

	a, addr, stop := aclBroker(t, dir)
	dev := login(t, addr, "dev", "d4")
	if !dev.ack.SessionPresent {
		t.Fatal("the session saved before authentication was not taken")
	}
	root := login(t, addr, "root", "root")
	root.pub(&paho.Publish{Topic: "other/x", QoS: 1, Payload: []byte("not dev's")})
	root.pub(&paho.Publish{Topic: "devices/d4/cmd", QoS: 1, Payload: []byte("cmd")})
	if got := dev.wait(1); got[0].Topic != "devices/d4/cmd" {
		t.Fatalf("received %s %q", got[0].Topic, got[0].Payload)
	}
	dev.none(1, 200*time.Millisecond)

	// Revoked while away, across a restart.
	dev.c.Disconnect(&paho.Disconnect{})
	if err := a.AddPolicies("dev", []acl.Entry{{Resource: "mqtt:devices/%c/cmd", Actions: []string{"Sub"}, Decision: acl.Deny}}); err != nil {
		t.Fatal(err)
	}
	root.pub(&paho.Publish{Topic: "devices/d4/cmd", QoS: 1, Payload: []byte("while away")})
	stop()
	_, addr, _ = aclBroker(t, dir)
	dev = login(t, addr, "dev", "d4")
	if !dev.ack.SessionPresent {
		t.Fatal("the owner's session was not kept")
	}
	root = login(t, addr, "root", "root")
	root.pub(&paho.Publish{Topic: "devices/d4/cmd", QoS: 1, Payload: []byte("revoked")})
	root.pub(&paho.Publish{Topic: "devices/d4/status", QoS: 1, Payload: []byte("status")})
	if got := dev.wait(1); got[0].Topic != "devices/d4/status" {
		t.Fatalf("received %s %q", got[0].Topic, got[0].Payload)
	}
	dev.none(1, 200*time.Millisecond)
}
