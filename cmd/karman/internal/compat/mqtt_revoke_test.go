//go:build !race && linux

package compat

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.golang/paho"
)

// dialRevocable connects a paho.golang 5.0 client as user, client id
// id, and returns it with the channel its server's DISCONNECT arrives
// on.
func dialRevocable(t *testing.T, addr, id, user, pw string) (*paho.Client, <-chan *paho.Disconnect) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	disc := make(chan *paho.Disconnect, 1)
	c := paho.NewClient(paho.ClientConfig{Conn: nc, OnServerDisconnect: func(d *paho.Disconnect) { disc <- d }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30,
		UsernameFlag: true, Username: user, PasswordFlag: true, Password: []byte(pw)}); err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c, disc
}

// wantRevoked waits for a DISCONNECT 0x87 whose reason names want.
func wantRevoked(t *testing.T, what string, disc <-chan *paho.Disconnect, want string) {
	t.Helper()
	select {
	case d := <-disc:
		reason := ""
		if d.Properties != nil {
			reason = d.Properties.ReasonString
		}
		if d.ReasonCode != 0x87 || !strings.Contains(reason, want) {
			t.Fatalf("%s: DISCONNECT %#x %q, want 0x87 naming %q", what, d.ReasonCode, reason, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no DISCONNECT", what)
	}
}

// TestMQTTRevoke: with karman serve --auth, the admin CLI's changes reach
// connected devices: a Deny on a filter a device subscribes to
// disconnects it (DISCONNECT 0x87 naming the filter), and a deleted user's
// device is disconnected too.
func TestMQTTRevoke(t *testing.T) {
	k := startBinary(t, "--auth", "--auth-init-user", aclRoot, "--auth-init-secret", aclRootSecret)
	for _, u := range []string{"dev", "tmp"} {
		k.cli("user", "create", u, "--secret", u+"-secret")
		k.cli("acl", "create", u, "--resource", "Topic:devices", "--actions", "Pub,Sub", "--decision", "Allow")
		k.cli("acl", "create", u, "--resource", "mqtt:devices/%c/#", "--actions", "Pub,Sub", "--decision", "Allow")
	}
	dev, devGone := dialRevocable(t, k.mqtt, "d1", "dev", "dev-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if sa, err := dev.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "devices/d1/cmd", QoS: 1}}}); err != nil || sa.Reasons[0] != 1 {
		t.Fatalf("SUBSCRIBE: %+v, %v", sa, err)
	}
	_, tmpGone := dialRevocable(t, k.mqtt, "t1", "tmp", "tmp-secret")

	k.cli("acl", "create", "dev", "--resource", "mqtt:devices/%c/cmd", "--actions", "Sub", "--decision", "Deny")
	wantRevoked(t, "a Deny on the filter", devGone, "devices/d1/cmd")
	k.cli("user", "delete", "tmp")
	wantRevoked(t, "the user deleted", tmpGone, "tmp")
}
