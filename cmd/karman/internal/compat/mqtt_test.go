//go:build !race && linux

package compat

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	paho "github.com/eclipse/paho.golang/paho"
	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

// mqttInbox collects what a paho.mqtt.golang (3.1.1) client receives.
type mqttInbox struct {
	mu   sync.Mutex
	got  map[string]int // "topic=payload" → deliveries
	all  []string
	more chan struct{}
}

func newInbox() *mqttInbox { return &mqttInbox{got: map[string]int{}, more: make(chan struct{}, 1)} }

func (b *mqttInbox) handler(_ mqtt.Client, m mqtt.Message) {
	b.mu.Lock()
	k := m.Topic() + "=" + string(m.Payload())
	b.got[k]++
	b.all = append(b.all, k)
	b.mu.Unlock()
	select {
	case b.more <- struct{}{}:
	default:
	}
}

func (b *mqttInbox) count(k string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got[k]
}

// waitFor waits until ok holds, re-checking after each message.
func (b *mqttInbox) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !ok() {
		select {
		case <-b.more:
		case <-deadline:
			b.mu.Lock()
			defer b.mu.Unlock()
			t.Fatalf("timed out waiting for %s; received %d: %v", what, len(b.all), b.all[max(0, len(b.all)-10):])
		}
	}
}

// mqttV3 connects a paho.mqtt.golang client to broker (tcp://, ws://,
// ssl:// URL).
func mqttV3(t *testing.T, broker, id string, clean bool, in *mqttInbox) mqtt.Client {
	t.Helper()
	o := mqtt.NewClientOptions().AddBroker(broker).SetClientID(id).SetCleanSession(clean).
		SetAutoReconnect(false).SetProtocolVersion(4).SetConnectTimeout(10 * time.Second).
		SetTLSConfig(&tls.Config{InsecureSkipVerify: true}) // the self-signed certificate
	if in != nil {
		o.SetDefaultPublishHandler(in.handler)
	}
	c := mqtt.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s to %s: %v", id, broker, tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func waitToken(t *testing.T, what string, tok mqtt.Token) {
	t.Helper()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("%s: %v", what, tok.Error())
	}
}

// The mapping, both ways, with the real clients: an MQTT device's
// publish reaches a RocketMQ push consumer of topic dev with tag
// d1/temp, and a RocketMQ producer's message to dev reaches MQTT
// subscribers as dev/TAG or as its originMqttTopic.
func TestMQTTCrossRocketMQ(t *testing.T) {
	k := startKarman(t)
	k.createTopic("dev", 4)

	got := newReceived()
	k.pushConsumer("mqtt-readers", "dev", "d1/temp", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	cmds := newInbox()
	dev := mqttV3(t, "tcp://"+k.mqtt, "d1", true, cmds)
	waitToken(t, "subscribe", dev.Subscribe("dev/+/cmd", 1, nil))

	pub := dialPaho5(t, k.mqtt, "d1-v5")
	for i := range 5 {
		_, err := pub.Publish(context.Background(), &paho.Publish{Topic: "dev/d1/temp", QoS: 1, Payload: []byte(fmt.Sprint("t", i)),
			Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "unit", Value: "C"}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pub.Publish(context.Background(), &paho.Publish{Topic: "dev/d2/temp", QoS: 1, Payload: []byte("other")}); err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, "5 MQTT messages at the RocketMQ consumer", 30*time.Second, func() bool { return got.distinct() >= 5 })
	got.mu.Lock()
	for _, m := range got.msgs {
		if m.GetTags() != "d1/temp" || m.GetProperty("originMqttTopic") != "dev/d1/temp" || m.GetProperty("qosLevel") != "1" || m.GetProperty("unit") != "C" {
			t.Errorf("as RocketMQ sees it: tags %q, properties %v", m.GetTags(), m.GetProperties())
		}
	}
	got.mu.Unlock()
	if got.count("other") != 0 {
		t.Error("the tag filter let dev/d2/temp through")
	}

	p := k.producer()
	m := primitive.NewMessage("dev", []byte("on"))
	m.WithTag("d1/cmd")
	p.send(m)
	m = primitive.NewMessage("dev", []byte("off"))
	m.WithProperty("originMqttTopic", "dev/d7/cmd")
	p.send(m)
	cmds.waitFor(t, "RocketMQ commands at the MQTT device", func() bool {
		return cmds.count("dev/d1/cmd=on") == 1 && cmds.count("dev/d7/cmd=off") == 1
	})
}

func dialPaho5(t *testing.T, addr, id string) *paho.Client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: nc})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c
}

// MQTT over WebSocket (path /mqtt) and TLS, with paho.mqtt.golang.
func TestMQTTWebSocketAndTLS(t *testing.T) {
	k := startKarman(t)
	if k.mqttWS == "" || k.mqttTLS == "" {
		t.Fatalf("serve announced no MQTT WebSocket or TLS listener: %q %q", k.mqttWS, k.mqttTLS)
	}
	in := newInbox()
	sub := mqttV3(t, "ws://"+k.mqttWS+"/mqtt", "ws-sub", true, in)
	waitToken(t, "subscribe", sub.Subscribe("web/#", 2, nil))
	pub := mqttV3(t, "ssl://"+k.mqttTLS, "tls-pub", true, nil)
	for q := byte(0); q <= 2; q++ {
		waitToken(t, "publish", pub.Publish("web/x", q, false, fmt.Sprint(q)))
	}
	in.waitFor(t, "three messages over WebSocket", func() bool {
		return in.count("web/x=0") == 1 && in.count("web/x=1") == 1 && in.count("web/x=2") == 1
	})
}

// mosquitto_pub and mosquitto_sub in both protocol versions.
func TestMQTTMosquittoClients(t *testing.T) {
	for _, tool := range []string{"mosquitto_pub", "mosquitto_sub"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (Debian package mosquitto-clients; .ci/run installs it): %v", tool, err)
		}
	}
	k := startKarman(t)
	host, port, _ := net.SplitHostPort(k.mqtt)
	for _, v := range []string{"mqttv311", "mqttv5"} {
		t.Run(v, func(t *testing.T) {
			subs := k.metric("karman_mqtt_subscriptions")
			topic := "mos/" + v
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			sub := exec.CommandContext(ctx, "mosquitto_sub", "-h", host, "-p", port, "-V", v, "-q", "2", "-t", "mos/#", "-v", "-C", "3")
			var out strings.Builder
			sub.Stdout = &out
			if err := sub.Start(); err != nil {
				t.Fatal(err)
			}
			// Publish once the subscription is in place.
			deadline := time.Now().Add(10 * time.Second)
			for k.metric("karman_mqtt_subscriptions") == subs {
				if time.Now().After(deadline) {
					t.Fatal("mosquitto_sub did not subscribe")
				}
				time.Sleep(20 * time.Millisecond)
			}
			for q := range 3 {
				pub := exec.CommandContext(ctx, "mosquitto_pub", "-h", host, "-p", port, "-V", v, "-q", strconv.Itoa(q), "-t", topic, "-m", fmt.Sprint("m", q))
				if b, err := pub.CombinedOutput(); err != nil {
					t.Fatalf("mosquitto_pub: %v %s", err, b)
				}
			}
			if err := sub.Wait(); err != nil {
				t.Fatalf("mosquitto_sub: %v (output %q)", err, out.String())
			}
			want := fmt.Sprintf("%s m0\n%s m1\n%s m2\n", topic, topic, topic)
			if out.String() != want {
				t.Errorf("mosquitto_sub printed %q, want %q", out.String(), want)
			}
		})
	}
}

// TestMQTTKill9 kills the real binary with SIGKILL in the middle of a
// stream of QoS 1 publishes to a persistent session, and of a QoS 2
// exchange: after a restart on the same data, every message that was
// PUBACKed reaches the persistent subscriber, and the QoS 2 message
// resent before its PUBREL is stored once and, the subscription being
// QoS 2, delivered once. (A QoS 1 subscription gets it at least once:
// its offset is written lazily, so a crash may send it again.)
func TestMQTTKill9(t *testing.T) {
	dir := t.TempDir()
	p := startBinary(t, "--data", dir)
	in := newInbox()
	sub := mqttV3(t, "tcp://"+p.mqtt, "keeper", false, in)
	waitToken(t, "subscribe", sub.Subscribe("kill/#", 2, nil))

	// QoS 2 publisher on the codec: PUBLISH, PUBREC, then the crash
	// before PUBREL.
	raw := dialRawMQTT(t, p.mqtt, "q2-pub")
	raw.send(&packet.Publish{QoS: 2, Topic: "kill/q2", PacketID: 9, Payload: []byte("exactly-once")})
	raw.expect(packet.PUBREC)

	pub := mqttV3(t, "tcp://"+p.mqtt, "streamer", true, nil)
	var (
		mu     sync.Mutex
		acked  []string
		killed = make(chan struct{})
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			body := fmt.Sprint("m", i)
			tok := pub.Publish("kill/q1", 1, false, body)
			if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				return
			}
			mu.Lock()
			acked = append(acked, body)
			n := len(acked)
			mu.Unlock()
			if n == 300 {
				p.cmd.Process.Kill() // SIGKILL
				close(killed)
			}
			select {
			case <-killed:
				if n > 300 {
					return
				}
			default:
			}
		}
	}()
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("300 publishes did not complete")
	}
	p.cmd.Wait()
	<-done
	sub.Disconnect(0)

	p2 := startBinary(t, "--data", dir)
	sub2 := mqttV3(t, "tcp://"+p2.mqtt, "keeper", false, in) // the session, resumed
	_ = sub2
	mu.Lock()
	want := append([]string(nil), acked...)
	mu.Unlock()
	in.waitFor(t, fmt.Sprintf("the %d PUBACKed messages", len(want)), func() bool {
		for _, b := range want {
			if in.count("kill/q1="+b) == 0 {
				return false
			}
		}
		return true
	})

	raw = dialRawMQTT(t, p2.mqtt, "q2-pub")
	raw.send(&packet.Publish{QoS: 2, Dup: true, Topic: "kill/q2", PacketID: 9, Payload: []byte("exactly-once")})
	raw.expect(packet.PUBREC)
	raw.send(&packet.Pubrel{PacketID: 9})
	raw.expect(packet.PUBCOMP)
	// One more message after it: once it arrives, the QoS 2 one had its
	// chance to arrive twice.
	waitToken(t, "publish", mqttV3(t, "tcp://"+p2.mqtt, "last", true, nil).Publish("kill/end", 1, false, "end"))
	in.waitFor(t, "the last message", func() bool { return in.count("kill/end=end") == 1 })
	if n := in.count("kill/q2=exactly-once"); n != 1 {
		in.mu.Lock()
		var at []int
		for i, k := range in.all {
			if k == "kill/q2=exactly-once" {
				at = append(at, i)
			}
		}
		total := len(in.all)
		in.mu.Unlock()
		t.Errorf("the QoS 2 message arrived %d times, deliveries %v of %d", n, at, total)
	}
}

// TestMQTTKill9AfterSuback kills the real binary with SIGKILL right
// after a CONNACK and a SUBACK: what they promised is on disk. After a
// restart the persistent session that only connected is present, the
// subscriptions of the other one — plain, wildcard and shared — get the
// messages published after the restart, and a retained QoS 1 message
// PUBACKed before the kill is retained, with its QoS.
func TestMQTTKill9AfterSuback(t *testing.T) {
	dir := t.TempDir()
	p := startBinary(t, "--data", dir)
	dialRawMQTT(t, p.mqtt, "only-connected")
	ret := dialRawMQTT(t, p.mqtt, "retainer")
	sub := dialRawMQTT(t, p.mqtt, "subscriber")
	sub.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{
		{Filter: "sa/plain", QoS: 1}, {Filter: "sb/+/x", QoS: 1}, {Filter: "$share/g/sc/#", QoS: 1},
	}})
	ack := sub.expect(packet.SUBACK).(*packet.Suback)
	ret.send(&packet.Publish{QoS: 1, Retain: true, PacketID: 1, Topic: "sr/state", Payload: []byte("on")})
	ret.expect(packet.PUBACK)
	p.cmd.Process.Kill() // SIGKILL, at once
	p.cmd.Wait()
	if len(ack.ReasonCodes) != 3 || ack.ReasonCodes[0] != 1 || ack.ReasonCodes[1] != 1 || ack.ReasonCodes[2] != 1 {
		t.Fatalf("SUBACK %v", ack.ReasonCodes)
	}

	p2 := startBinary(t, "--data", dir)
	pub := mqttV3(t, "tcp://"+p2.mqtt, "pub", true, nil)
	for _, tp := range []string{"sa/plain", "sb/1/x", "sc/deep/er"} {
		waitToken(t, "publish", pub.Publish(tp, 1, false, "after"))
	}
	in := newInbox()
	o := mqtt.NewClientOptions().AddBroker("tcp://" + p2.mqtt).SetClientID("only-connected").SetCleanSession(false).SetAutoReconnect(false)
	c := mqtt.NewClient(o)
	tok := c.Connect()
	waitToken(t, "connect", tok)
	if !tok.(*mqtt.ConnectToken).SessionPresent() {
		t.Error("the persistent session that only connected is not present after the restart")
	}
	c.Disconnect(0)
	mqttV3(t, "tcp://"+p2.mqtt, "subscriber", false, in) // resumes the session
	in.waitFor(t, "the three messages", func() bool {
		return in.count("sa/plain=after") == 1 && in.count("sb/1/x=after") == 1 && in.count("sc/deep/er=after") == 1
	})
	// The retained message PUBACKed before the kill, with its QoS.
	chk := dialRawMQTT(t, p2.mqtt, "checker")
	chk.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "sr/#", QoS: 2}}})
	chk.expect(packet.SUBACK)
	if got := chk.expect(packet.PUBLISH).(*packet.Publish); !got.Retain || got.QoS != 1 || string(got.Payload) != "on" {
		t.Fatalf("retained after the kill: %+v", got)
	}
}

// rawMQTT is a 3.1.1 client on the codec, for exchanges the real clients
// do not let a test stop half way.
type rawMQTT struct {
	t   *testing.T
	nc  net.Conn
	dec *packet.Decoder
}

func dialRawMQTT(t *testing.T, addr, id string) *rawMQTT {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	r := &rawMQTT{t: t, nc: nc, dec: packet.NewDecoder(nc)}
	r.dec.Version = packet.Version311
	r.send(&packet.Connect{Version: packet.Version311, ClientID: id, KeepAlive: 60})
	if ack, ok := r.expect(packet.CONNACK).(*packet.Connack); !ok || ack.ReasonCode != 0 {
		t.Fatalf("CONNACK %+v", ack)
	}
	return r
}

func (r *rawMQTT) send(p packet.Packet) {
	r.t.Helper()
	if err := packet.Encode(r.nc, p, packet.Version311); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawMQTT) expect(typ packet.Type) packet.Packet {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	p, err := r.dec.Read()
	if err != nil {
		r.t.Fatalf("waiting for %s: %v", typ, err)
	}
	if p.Type() != typ {
		r.t.Fatalf("got %s, want %s", p.Type(), typ)
	}
	return p
}

var _ = os.Getenv

// The mapping with the Node.js gRPC client: a Node producer's message to
// dev with tag d3/cmd reaches an MQTT subscriber of dev/+/cmd, and an
// MQTT publish to dev/d3/temp reaches a Node simple consumer of dev with
// the tag d3/temp and its MQTT properties.
func TestMQTTCrossNode(t *testing.T) {
	requireNode(t)
	k := startKarman(t)
	k.createTopic("dev", 4)
	in := newInbox()
	dev := mqttV3(t, "tcp://"+k.mqtt, "d3", true, in)
	waitToken(t, "subscribe", dev.Subscribe("dev/+/cmd", 1, nil))
	k.nodeSend("dev", []outMessage{{Body: "n1", Tag: "d3/cmd"}, {Body: "n2", Tag: "d3/cmd", Properties: map[string]string{"originMqttTopic": "dev/d3/cmd/now"}}})
	in.waitFor(t, "the Node producer's commands", func() bool {
		return in.count("dev/d3/cmd=n1") == 1
	})
	if in.count("dev/d3/cmd/now=n2") != 0 {
		t.Error("dev/+/cmd matched dev/d3/cmd/now")
	}

	waitToken(t, "publish", dev.Publish("dev/d3/temp", 1, false, "21.5"))
	got := k.nodeReceive(map[string]any{"topic": "dev", "group": "node-readers", "expression": "d3/temp", "count": 1})
	if len(got) != 1 || got[0].Body != "21.5" || got[0].Tag != "d3/temp" || got[0].Properties["originMqttTopic"] != "dev/d3/temp" || got[0].Properties["qosLevel"] != "1" {
		t.Fatalf("the Node consumer got %+v", got)
	}
}
