package mqtt_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

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
	// Two commands for dev1 while it is away.
	for i := range 2 {
		app.send(&packet.Publish{PacketID: uint16(2 + i), QoS: 1, Topic: "cmd/dev1/reboot", Payload: []byte("now")})
		if _, ok := app.read().(*packet.Puback); !ok {
			t.Fatal("no PUBACK")
		}
	}

	var got mqttfe.Sessions
	for deadline := time.Now().Add(10 * time.Second); ; {
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

// TestAPIAuth: with --auth the MQTT operations need a user the ACL lets
// list the cluster.
func TestAPIAuth(t *testing.T) {
	addrs := startModules(t, []server.ModuleID{mqttfe.ID, auth.ID}, "--http-addr", "127.0.0.1:0", "--auth", "--auth-init-user", "root", "--auth-init-secret", "rootsecret")
	api := "http://" + addrs["http"] + "/api/v1/mqtt/"
	for _, path := range []string{"sessions", "retained"} {
		var e struct{ Error struct{ Code string } }
		if code := getJSON(t, api+path, &e); code != http.StatusUnauthorized || e.Error.Code != "UNAUTHENTICATED" {
			t.Fatalf("GET %s without credentials: %d %+v, want 401 UNAUTHENTICATED", path, code, e)
		}
		if code := getJSON(t, api+path, &e, "root", "wrong-secret"); code != http.StatusUnauthorized {
			t.Fatalf("GET %s with a wrong secret: %d, want 401", path, code)
		}
		var v map[string]any
		if code := getJSON(t, api+path, &v, "root", "rootsecret"); code != http.StatusOK {
			t.Fatalf("GET %s as root: %d %v", path, code, v)
		}
	}
}
