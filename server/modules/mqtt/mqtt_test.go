package mqtt_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/server"
	mqttfe "github.com/karmanmq/karman/server/modules/mqtt"
)

// start runs a server with only the MQTT module and returns the address
// of each MQTT listener, read from its announcements.
func start(t *testing.T, args ...string) map[string]string {
	t.Helper()
	return startModules(t, []server.ModuleID{mqttfe.ID}, args...)
}

// startModules is start with other modules beside MQTT.
func startModules(t *testing.T, ids []server.ModuleID, args ...string) map[string]string {
	t.Helper()
	opts, err := server.NewOptions(ids...)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--data", t.TempDir(), "--segment-size", "16MiB", "--http-addr", "off",
		"--mqtt-addr", "127.0.0.1:0", "--mqtt-ws-addr", "127.0.0.1:0", "--mqtt-tls-addr", "127.0.0.1:0"}
	if err := opts.Flags.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	opts.Announce = pw
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			if name, addr, ok := strings.Cut(strings.TrimPrefix(line, "karman: "), " listening on "); ok {
				addrs[name] = addr
			}
			if line == "karman: ready" {
				break
			}
		}
		go io.Copy(io.Discard, pr)
	}()
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(ctx); pw.Close() })
	<-done
	return addrs
}

func TestListeners(t *testing.T) {
	addrs := start(t)
	for _, name := range []string{"mqtt", "mqtt-ws", "mqtt-tls"} {
		if addrs[name] == "" {
			t.Fatalf("no %s announced: %v", name, addrs)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	connect, _ := (&packet.Connect{Version: packet.Version311, ClientID: "ws", CleanStart: true}).AppendTo(nil, packet.Version311)

	// The subprotocol mqtt, binary frames; a CONNECT split over two
	// frames still makes one packet.
	c, _, err := websocket.Dial(ctx, "ws://"+addrs["mqtt-ws"]+mqttfe.WSPath, &websocket.DialOptions{Subprotocols: []string{"mqtt"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Write(ctx, websocket.MessageBinary, connect[:3])
	c.Write(ctx, websocket.MessageBinary, connect[3:])
	typ, got, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageBinary || string(got) != "\x20\x02\x00\x00" {
		t.Fatalf("CONNACK over WebSocket: %v % x %v", typ, got, err)
	}
	// A text frame ends the connection [MQTT-6.0.0-1].
	c.Write(ctx, websocket.MessageText, []byte{0xC0, 0})
	if _, _, err := c.Read(ctx); err == nil {
		t.Fatal("a text frame was accepted")
	}

	// Without the subprotocol: refused.
	c, _, err = websocket.Dial(ctx, "ws://"+addrs["mqtt-ws"]+mqttfe.WSPath, nil)
	if err == nil {
		if _, _, err = c.Read(ctx); err == nil {
			t.Fatal("a WebSocket without the mqtt subprotocol was served")
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mqtt-tls-cert", "x.pem"}, "go together"},
		{[]string{"--mqtt-tls-cert", "/nonexistent.pem", "--mqtt-tls-key", "/nonexistent.key"}, "--mqtt-tls-cert"},
		{[]string{"--mqtt-max-inflight", "0"}, "--mqtt-max-inflight"},
		{[]string{"--mqtt-max-qos0-lag", "0"}, "--mqtt-max-qos0-lag"},
	} {
		opts, err := server.NewOptions(mqttfe.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := opts.Flags.Parse(append([]string{"--data", t.TempDir(), "--mqtt-addr", "127.0.0.1:0"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		_, err = server.New(*opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}

func TestOneRouter(t *testing.T) {
	m := &mqttfe.Module{Config: mqttfe.Config{WSAddr: "off", TLSAddr: "off"}}
	o := &engine.Options{Router: other{}}
	if err := m.ConfigureEngine(o, nil); err == nil {
		t.Fatal("a second router was installed")
	}
}

type other struct{}

func (other) Route(*engine.RouteRecord, []string) []string { return nil }
