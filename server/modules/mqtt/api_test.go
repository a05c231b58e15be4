package mqtt_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/modules/auth"
	mqttfe "github.com/karmanmq/karman/server/modules/mqtt"
)

// mqttClient is a raw MQTT connection for the tests.
type mqttClient struct {
	t   *testing.T
	nc  net.Conn
	dec *packet.Decoder
	v   byte
}

func dialMQTT(t *testing.T, addr string, cp *packet.Connect) *mqttClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &mqttClient{t: t, nc: nc, dec: packet.NewDecoder(nc), v: cp.Version}
	c.dec.Version = cp.Version
	c.send(cp)
	if ack, ok := c.read().(*packet.Connack); !ok || ack.ReasonCode != 0 {
		t.Fatalf("CONNACK %+v", ack)
	}
	return c
}

func (c *mqttClient) send(p packet.Packet) {
	c.t.Helper()
	b, err := p.AppendTo(nil, c.v)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *mqttClient) read() packet.Packet {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	p, err := c.dec.Read()
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

func getJSON(t *testing.T, url string, v any, auth ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %d %q: %v", url, resp.StatusCode, body, err)
	}
	return resp.StatusCode
}

// TestAPI reads MQTT sessions and retained messages through the JSON API
// of a running server, and checks them against what the clients did.
func TestAPI(t *testing.T) {
	addrs := start(t, "--http-addr", "127.0.0.1:0")
	api := "http://" + addrs["http"] + "/api/v1/mqtt/"

	dev := dialMQTT(t, addrs["mqtt"], &packet.Connect{Version: packet.Version311, ClientID: "dev1", KeepAlive: 30})
	dev.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "cmd/dev1/#", QoS: 1}, {Filter: "$share/g/all/+", QoS: 0}}})
	if _, ok := dev.read().(*packet.Suback); !ok {
		t.Fatal("no SUBACK")
	}
	cp := &packet.Connect{Version: packet.Version5, ClientID: "app", CleanStart: true, KeepAlive: 30}
	cp.Properties.SessionExpiry = 60
	app := dialMQTT(t, addrs["mqtt"], cp)
	app.send(&packet.Publish{PacketID: 1, QoS: 1, Retain: true, Topic: "state/dev1", Payload: []byte("online")})
	if _, ok := app.read().(*packet.Puback); !ok {
		t.Fatal("no PUBACK")
	}
	dev.nc.Close()
	// Two commands for dev1 once the server saw it go (sent before, they
	// could go out on the closing connection and count as in flight).
	var got mqttfe.Sessions
	for deadline := time.Now().Add(10 * time.Second); ; {
		got = mqttfe.Sessions{} // decoding into the last answer would keep its fields
		if code := getJSON(t, api+"sessions", &got); code != http.StatusOK {
			t.Fatalf("GET sessions: %d", code)
		}
		if len(got.Sessions) == 2 && got.Sessions[1].ClientID == "dev1" && !got.Sessions[1].Connected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions = %+v, want dev1 gone", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 2 {
		app.send(&packet.Publish{PacketID: uint16(2 + i), QoS: 1, Topic: "cmd/dev1/reboot", Payload: []byte("now")})
		if _, ok := app.read().(*packet.Puback); !ok {
			t.Fatal("no PUBACK")
		}
	}

	for deadline := time.Now().Add(10 * time.Second); ; {
		got = mqttfe.Sessions{} // decoding into the last answer would keep its fields
		if code := getJSON(t, api+"sessions", &got); code != http.StatusOK {
			t.Fatalf("GET sessions: %d", code)
		}
		if len(got.Sessions) == 2 && !got.Sessions[1].Connected && got.Sessions[1].Queued == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions = %+v, want app and dev1 gone with 2 queued", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a, d := got.Sessions[0], got.Sessions[1]
	if a.ClientID != "app" || !a.Connected || a.Addr == "" || a.Protocol != "5.0" || !a.Persistent || a.ExpirySeconds != 60 || len(a.Subscriptions) != 0 {
		t.Fatalf("app = %+v", a)
	}
	if d.ClientID != "dev1" || d.Protocol != "3.1.1" || !d.Persistent || d.CleanSession || d.ExpirySeconds != -1 || d.DisconnectedAt == 0 || d.Addr != "" {
		t.Fatalf("dev1 = %+v", d)
	}
	want := []mqttfe.Subscription{{Filter: "$share/g/all/+", QoS: 0, Group: "g"}, {Filter: "cmd/dev1/#", QoS: 1, Queued: 2}}
	if len(d.Subscriptions) != 2 || d.Subscriptions[0] != want[0] || d.Subscriptions[1] != want[1] {
		t.Fatalf("dev1 subscriptions = %+v, want %+v", d.Subscriptions, want)
	}

	var ret mqttfe.Retained
	if code := getJSON(t, api+"retained", &ret); code != http.StatusOK {
		t.Fatalf("GET retained: %d", code)
	}
	if len(ret.Messages) != 1 || ret.Messages[0] != (mqttfe.RetainedMessage{Topic: "state/dev1", Size: 6, QoS: 1, Publisher: "app"}) {
		t.Fatalf("retained = %+v", ret)
	}
}

// TestAPIAuth: with --auth the MQTT operations need a user; each user
// sees the sessions its clients made and the retained messages it may
// subscribe to, and a super user sees them all.
func TestAPIAuth(t *testing.T) {
	data := t.TempDir()
	a, closer, err := acl.OpenDir(data, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		err := a.CreateUser(acl.User{Name: u, Secret: u + "-secret", Type: acl.Normal, Status: acl.Enabled,
			Policies: []acl.Entry{{Resource: "Topic:" + u, Actions: []string{"Pub", "Sub"}, Decision: acl.Allow}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	closer.Close()
	addrs := startModules(t, []server.ModuleID{mqttfe.ID, auth.ID}, "--data", data, "--http-addr", "127.0.0.1:0", "--auth", "--auth-init-user", "root", "--auth-init-secret", "rootsecret")
	api := "http://" + addrs["http"] + "/api/v1/mqtt/"
	for _, path := range []string{"sessions", "retained"} {
		var e struct{ Error struct{ Code string } }
		if code := getJSON(t, api+path, &e); code != http.StatusUnauthorized || e.Error.Code != "UNAUTHENTICATED" {
			t.Fatalf("GET %s without credentials: %d %+v, want 401 UNAUTHENTICATED", path, code, e)
		}
		if code := getJSON(t, api+path, &e, "root", "wrong-secret"); code != http.StatusUnauthorized {
			t.Fatalf("GET %s with a wrong secret: %d, want 401", path, code)
		}
	}

	// Each user's device keeps a persistent session subscribed to its
	// commands and retains its state.
	for _, u := range []string{"alice", "bob"} {
		c := dialMQTT(t, addrs["mqtt"], &packet.Connect{Version: packet.Version311, ClientID: u + "-dev", KeepAlive: 30,
			Username: u, Password: []byte(u + "-secret"), UsernameFlag: true, PasswordFlag: true})
		c.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: u + "/cmd/#", QoS: 1}}})
		if ack, ok := c.read().(*packet.Suback); !ok || ack.ReasonCodes[0] > 2 {
			t.Fatalf("%s: SUBACK %+v", u, ack)
		}
		c.send(&packet.Publish{PacketID: 2, QoS: 1, Retain: true, Topic: u + "/state", Payload: []byte("online")})
		if _, ok := c.read().(*packet.Puback); !ok {
			t.Fatalf("%s: no PUBACK", u)
		}
	}

	sees := func(user, secret string) (clients, retained string) {
		t.Helper()
		var ss mqttfe.Sessions
		if code := getJSON(t, api+"sessions", &ss, user, secret); code != http.StatusOK {
			t.Fatalf("GET sessions as %s: %d", user, code)
		}
		var cs []string
		for _, s := range ss.Sessions {
			cs = append(cs, s.ClientID+" of "+s.Owner)
		}
		var rm mqttfe.Retained
		if code := getJSON(t, api+"retained", &rm, user, secret); code != http.StatusOK {
			t.Fatalf("GET retained as %s: %d", user, code)
		}
		var ts []string
		for _, m := range rm.Messages {
			ts = append(ts, m.Topic)
		}
		return strings.Join(cs, ", "), strings.Join(ts, ", ")
	}
	for _, tc := range []struct {
		user, secret      string
		clients, retained string
	}{
		{"alice", "alice-secret", "alice-dev of alice", "alice/state"},
		{"bob", "bob-secret", "bob-dev of bob", "bob/state"},
		{"root", "rootsecret", "alice-dev of alice, bob-dev of bob", "alice/state, bob/state"},
	} {
		clients, retained := sees(tc.user, tc.secret)
		if clients != tc.clients {
			t.Errorf("%s sees sessions %q, want %q", tc.user, clients, tc.clients)
		}
		if retained != tc.retained {
			t.Errorf("%s sees retained messages %q, want %q", tc.user, retained, tc.retained)
		}
	}
}
