package consoletest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/server"
	mqttfe "github.com/karmanmq/karman/server/modules/mqtt"
)

// mqttSend writes packets to an MQTT connection and reads one answer
// per packet that has one.
func mqttSend(t *testing.T, nc net.Conn, dec *packet.Decoder, v byte, ps ...packet.Packet) {
	t.Helper()
	for _, p := range ps {
		b, err := p.AppendTo(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
		if pub, ok := p.(*packet.Publish); ok && pub.QoS == 0 {
			continue
		}
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := dec.Read(); err != nil {
			t.Fatalf("answer to %T: %v", p, err)
		}
	}
}

func dialMQTT(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// TestMQTTPageInBrowser: the MQTT page lists a device's persistent
// session with its subscriptions and the messages queued for it while it
// is away, a connected 5.0 client, and a retained message.
func TestMQTTPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a browser")
	}
	exe := chromium(t)
	opts, err := server.NewOptions(mqttfe.ID)
	if err != nil {
		t.Fatal(err)
	}
	err = opts.Flags.Parse([]string{"--data", t.TempDir(), "--segment-size", "16MiB", "--http-addr", "127.0.0.1:0",
		"--mqtt-addr", "127.0.0.1:0", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off", "--log-level", "error"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	base, addr := "http://"+srv.Addr("http").String(), srv.Addr("mqtt").String()

	dev := dialMQTT(t, addr)
	devDec := packet.NewDecoder(dev)
	devDec.Version = packet.Version311
	mqttSend(t, dev, devDec, packet.Version311,
		&packet.Connect{Version: packet.Version311, ClientID: "sensor-7", KeepAlive: 60},
		&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "cmd/sensor-7/#", QoS: 1}}})
	dev.Close()
	app := dialMQTT(t, addr)
	appDec := packet.NewDecoder(app)
	appDec.Version = packet.Version5
	cp := &packet.Connect{Version: packet.Version5, ClientID: "dashboard", CleanStart: true, KeepAlive: 60}
	mqttSend(t, app, appDec, packet.Version5, cp,
		&packet.Publish{PacketID: 1, QoS: 1, Retain: true, Topic: "status/sensor-7", Payload: []byte("offline")},
		&packet.Publish{PacketID: 2, QoS: 1, Topic: "cmd/sensor-7/calibrate", Payload: []byte("1")},
		&packet.Publish{PacketID: 3, QoS: 1, Topic: "cmd/sensor-7/calibrate", Payload: []byte("2")})

	aopts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), aopts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()

	// The overview offers the MQTT page while the front-end runs.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/#/overview"), chromedp.WaitVisible(chromedp.CSS("#nav-mqtt"))); err != nil {
		t.Fatalf("the MQTT link: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#nav-mqtt"))); err != nil {
		t.Fatal(err)
	}
	// The sensor's session, once its connection's end is seen and the
	// two commands are queued (the page refreshes itself).
	row := waitText(t, ctx, `tr[data-client="sensor-7"]`, "2 queued")
	for _, want := range []string{"disconnected", "3.1.1", "never", "cmd/sensor-7/# (QoS 1, 2 queued)"} {
		if !strings.Contains(row, want) {
			t.Errorf("sensor-7's row %q lacks %q", row, want)
		}
	}
	row = text(t, ctx, `tr[data-client="dashboard"]`)
	for _, want := range []string{"connected from 127.0.0.1:", "5.0", "with its connection", "none"} {
		if !strings.Contains(row, want) {
			t.Errorf("dashboard's row %q lacks %q", row, want)
		}
	}
	row = text(t, ctx, `tr[data-topic="status/sensor-7"]`)
	for _, want := range []string{"7 B", "dashboard", "never"} {
		if !strings.Contains(row, want) {
			t.Errorf("the retained message's row %q lacks %q", row, want)
		}
	}
	screenshot(t, ctx, "mqtt")
}
