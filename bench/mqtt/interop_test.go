package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	mqttv3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/topic"
)

// This file checks Karman's MQTT codec against the real Go clients,
// paho.golang v0.23.0 (MQTT 5) and paho.mqtt.golang v1.5.1 (3.1.1 and 3.1):
// a small broker written on the codec (package packet for the wire,
// package topic for matching) serves them, so every packet the clients
// send is decoded by the codec and every packet they read was encoded by
// it. With MQTT_CAPTURE_SEEDS=1 the traffic is also written as seeds of
// FuzzReadPacket.

type codecBroker struct {
	t  *testing.T
	l  net.Listener
	mu sync.Mutex
	// subscriptions by connection: filter → granted QoS and sub id
	subs map[*brokerConn]map[string]brokerSub
	recs []*brokerConn
	wg   sync.WaitGroup
	errs []error
}

type brokerSub struct {
	qos   byte
	subID int
}

type brokerConn struct {
	nc      net.Conn
	version byte
	in, out bytes.Buffer // raw traffic, guarded by wmu for out and owned by the reader for in
	wmu     sync.Mutex
	nextID  uint16
}

func newCodecBroker(t *testing.T) *codecBroker {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &codecBroker{t: t, l: l, subs: map[*brokerConn]map[string]brokerSub{}}
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			c := &brokerConn{nc: nc}
			b.mu.Lock()
			b.recs = append(b.recs, c)
			b.mu.Unlock()
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				if err := b.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					b.mu.Lock()
					b.errs = append(b.errs, err)
					b.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(b.close)
	return b
}

func (b *codecBroker) close() {
	b.l.Close()
	b.mu.Lock()
	for _, c := range b.recs {
		c.nc.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
	for _, err := range b.errs {
		b.t.Errorf("broker: %v", err)
	}
}

func (c *brokerConn) send(p packet.Packet) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	buf, err := p.AppendTo(nil, c.version)
	if err != nil {
		return err
	}
	c.out.Write(buf)
	_, err = c.nc.Write(buf)
	return err
}

func (b *codecBroker) serve(c *brokerConn) error {
	defer c.nc.Close()
	defer func() {
		b.mu.Lock()
		delete(b.subs, c)
		b.mu.Unlock()
	}()
	d := packet.NewDecoder(io.TeeReader(c.nc, &c.in))
	d.FromClient = true
	p, err := d.Read()
	if err != nil {
		return fmt.Errorf("CONNECT: %w", err)
	}
	connect := p.(*packet.Connect)
	c.version = connect.Version
	ack := &packet.Connack{}
	if c.version == packet.Version5 {
		ack.Properties.ReceiveMaximum = 64
		ack.Properties.ReasonString = "welcome"
		ack.Properties.UserProperties = []packet.UserProperty{{Key: "server", Value: "codec"}}
		ack.Properties.SetPresent(packet.PropRetainAvailable) // 0: no retained messages
		if connect.ClientID == "" {
			ack.Properties.AssignedClientID = "assigned-" + strconv.Itoa(len(b.recs))
		}
	}
	if err := c.send(ack); err != nil {
		return err
	}
	for {
		p, err := d.Read()
		if err != nil {
			return err
		}
		switch p := p.(type) {
		case *packet.Subscribe:
			subID := 0
			if ids := p.Properties.SubscriptionIdentifiers; len(ids) == 1 {
				subID = ids[0]
			}
			codes := make([]packet.ReasonCode, len(p.Subscriptions))
			b.mu.Lock()
			if b.subs[c] == nil {
				b.subs[c] = map[string]brokerSub{}
			}
			for i, s := range p.Subscriptions {
				if topic.ValidFilter(s.Filter) != nil {
					codes[i] = packet.TopicFilterInvalid
					continue
				}
				b.subs[c][s.Filter] = brokerSub{qos: s.QoS, subID: subID}
				codes[i] = packet.ReasonCode(s.QoS)
			}
			b.mu.Unlock()
			err = c.send(&packet.Suback{PacketID: p.PacketID, ReasonCodes: codes})
		case *packet.Unsubscribe:
			codes := make([]packet.ReasonCode, len(p.Filters))
			b.mu.Lock()
			for i, f := range p.Filters {
				if _, ok := b.subs[c][f]; !ok {
					codes[i] = packet.NoSubscriptionExisted
				}
				delete(b.subs[c], f)
			}
			b.mu.Unlock()
			err = c.send(&packet.Unsuback{PacketID: p.PacketID, ReasonCodes: codes})
		case *packet.Publish:
			// The payload aliases the decoder's buffer: deliver first.
			b.deliver(p)
			switch p.QoS {
			case 1:
				err = c.send(&packet.Puback{PacketID: p.PacketID})
			case 2:
				err = c.send(&packet.Pubrec{PacketID: p.PacketID})
			}
		case *packet.Pubrel:
			err = c.send(&packet.Pubcomp{PacketID: p.PacketID})
		case *packet.Pubrec:
			err = c.send(&packet.Pubrel{PacketID: p.PacketID})
		case *packet.Puback, *packet.Pubcomp:
		case *packet.Pingreq:
			err = c.send(&packet.Pingresp{})
		case *packet.Disconnect:
			return nil
		default:
			return fmt.Errorf("unexpected %s", p.Type())
		}
		if err != nil {
			return err
		}
	}
}

// deliver sends p to every matching subscription, at the lower QoS, with
// the properties it came with and the subscription identifier.
func (b *codecBroker) deliver(p *packet.Publish) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c, subs := range b.subs {
		for filter, s := range subs {
			if !topic.Match(filter, p.Topic) {
				continue
			}
			out := &packet.Publish{Topic: p.Topic, QoS: min(p.QoS, s.qos), Payload: bytes.Clone(p.Payload)}
			if c.version == packet.Version5 {
				out.Properties = p.Properties
				out.Properties.TopicAlias = 0
				out.Properties.ClearPresent(packet.PropTopicAlias)
				out.Properties.SubscriptionIdentifiers = nil
				if s.subID != 0 {
					out.Properties.SubscriptionIdentifiers = []int{s.subID}
				}
				out.Properties.CorrelationData = bytes.Clone(p.Properties.CorrelationData)
			}
			if out.QoS > 0 {
				c.nextID++
				out.PacketID = c.nextID
			}
			if err := c.send(out); err != nil {
				b.errs = append(b.errs, err)
			}
		}
	}
}

// writeSeeds writes the recorded traffic as FuzzReadPacket seeds.
func (b *codecBroker) writeSeeds(t *testing.T, client string) {
	if os.Getenv("MQTT_CAPTURE_SEEDS") == "" {
		return
	}
	b.close()
	dir := filepath.Join("..", "..", "protocol", "mqtt", "packet", "testdata", "fuzz", "FuzzReadPacket")
	n := 0
	for _, c := range b.recs {
		for side, stream := range [][]byte{c.in.Bytes(), c.out.Bytes()} {
			for i, raw := range splitStream(stream) {
				v := c.version
				if side == 0 && i == 0 {
					v = 0
				}
				name := fmt.Sprintf("%s-v%d-%s-%02d", client, c.version, packet.Type(raw[0]>>4), n)
				text := "go test fuzz v1\n[]byte(" + strconv.Quote(string(append([]byte{v}, raw...))) + ")\n"
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	t.Logf("wrote %d seeds", n)
}

// splitStream cuts a recorded stream at packet boundaries.
func splitStream(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 1 {
		rl, shift, i := 0, 0, 1
		for ; i < len(b) && i <= 4; i++ {
			rl |= int(b[i]&0x7f) << shift
			shift += 7
			if b[i]&0x80 == 0 {
				break
			}
		}
		end := i + 1 + rl
		if i > 4 || end > len(b) {
			break
		}
		out = append(out, b[:end])
		b = b[end:]
	}
	return out
}

func pahoV5(t *testing.T, ctx context.Context, addr string, connect *paho.Connect, got chan<- *paho.Publish) *paho.Client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := paho.ClientConfig{Conn: nc}
	if got != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){
			func(r paho.PublishReceived) (bool, error) { got <- r.Packet; return true, nil },
		}
	}
	c := paho.NewClient(cfg)
	ack, err := c.Connect(ctx, connect)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if ack.ReasonCode != 0 || ack.Properties == nil || ack.Properties.ReasonString != "welcome" ||
		!slices.Equal(ack.Properties.User, paho.UserProperties{{Key: "server", Value: "codec"}}) || ack.Properties.RetainAvailable {
		t.Fatalf("CONNACK as paho read it: %+v %+v", ack, ack.Properties)
	}
	if connect.ClientID == "" && ack.Properties.AssignedClientID == "" {
		t.Fatal("no assigned client id")
	}
	return c
}

// TestPahoV5 runs paho.golang through CONNECT with properties and a will,
// SUBSCRIBE with a subscription identifier, PUBLISH at QoS 0, 1 and 2 with
// every publish property, UNSUBSCRIBE and DISCONNECT.
func TestPahoV5(t *testing.T) {
	b := newCodecBroker(t)
	addr := b.l.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	got := make(chan *paho.Publish, 10)
	recvMax := uint16(10)
	sub := pahoV5(t, ctx, addr, &paho.Connect{CleanStart: true, KeepAlive: 30,
		Properties: &paho.ConnectProperties{ReceiveMaximum: &recvMax, User: paho.UserProperties{{Key: "k", Value: "v"}}}}, got)
	subID := 5
	suback, err := sub.Subscribe(ctx, &paho.Subscribe{Properties: &paho.SubscribeProperties{SubscriptionIdentifier: &subID},
		Subscriptions: []paho.SubscribeOptions{{Topic: "interop/+/v5", QoS: 2, NoLocal: true}, {Topic: "bad/#/filter", QoS: 1}}})
	// paho reports the refused filter as an error and returns the SUBACK.
	if suback == nil {
		t.Fatalf("subscribe: %v", err)
	}
	if !bytes.Equal(suback.Reasons, []byte{2, byte(packet.TopicFilterInvalid)}) {
		t.Fatalf("SUBACK reasons %v", suback.Reasons)
	}

	expiry, delay, pfi := uint32(60), uint32(5), byte(1)
	pub := pahoV5(t, ctx, addr, &paho.Connect{ClientID: "paho-v5-pub", CleanStart: true, UsernameFlag: true, Username: "u",
		PasswordFlag: true, Password: []byte("p"),
		WillMessage:    &paho.WillMessage{Topic: "interop/will/v5", Payload: []byte("gone"), QoS: 1},
		WillProperties: &paho.WillProperties{WillDelayInterval: &delay, ContentType: "text/plain"}}, nil)
	user := paho.UserProperties{{Key: "a", Value: "1"}, {Key: "a", Value: "1"}, {Key: "b", Value: "ü"}}
	for qos := byte(0); qos <= 2; qos++ {
		resp, err := pub.Publish(ctx, &paho.Publish{Topic: "interop/" + strconv.Itoa(int(qos)) + "/v5", QoS: qos,
			Payload: []byte("payload-" + strconv.Itoa(int(qos))),
			Properties: &paho.PublishProperties{User: user, ContentType: "text/plain", ResponseTopic: "interop/reply",
				CorrelationData: []byte{1, 2, 3}, MessageExpiry: &expiry, PayloadFormat: &pfi}})
		if err != nil {
			t.Fatalf("publish QoS %d: %v", qos, err)
		}
		if qos > 0 && resp.ReasonCode != 0 {
			t.Fatalf("publish QoS %d: reason %d", qos, resp.ReasonCode)
		}
	}
	for qos := byte(0); qos <= 2; qos++ {
		select {
		case m := <-got:
			want := "payload-" + strconv.Itoa(int(m.QoS))
			pr := m.Properties
			if string(m.Payload) != want || pr == nil || !slices.Equal(pr.User, user) || pr.ContentType != "text/plain" ||
				pr.ResponseTopic != "interop/reply" || !bytes.Equal(pr.CorrelationData, []byte{1, 2, 3}) ||
				pr.SubscriptionIdentifier == nil || *pr.SubscriptionIdentifier != subID ||
				pr.MessageExpiry == nil || *pr.MessageExpiry != 60 || pr.PayloadFormat == nil || *pr.PayloadFormat != 1 {
				t.Fatalf("delivered %+v with %+v", m, pr)
			}
		case <-ctx.Done():
			t.Fatalf("delivery %d: %v", qos, ctx.Err())
		}
	}
	unsuback, err := sub.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{"interop/+/v5", "never/subscribed"}})
	if err != nil || !bytes.Equal(unsuback.Reasons, []byte{0, byte(packet.NoSubscriptionExisted)}) {
		t.Fatalf("unsubscribe: %v %+v", err, unsuback)
	}
	for _, c := range []*paho.Client{pub, sub} {
		if err := c.Disconnect(&paho.Disconnect{ReasonCode: 0}); err != nil {
			t.Fatal(err)
		}
	}
	b.writeSeeds(t, "paho.golang")
}

// TestPahoV3 runs paho.mqtt.golang at 3.1.1 and 3.1 through CONNECT with a
// will and credentials, SUBSCRIBE and PUBLISH at QoS 0, 1 and 2.
func TestPahoV3(t *testing.T) {
	b := newCodecBroker(t)
	for _, level := range []uint{4, 3} {
		got := make(chan mqttv3.Message, 10)
		opts := func(id string) *mqttv3.ClientOptions {
			o := mqttv3.NewClientOptions().AddBroker("tcp://"+b.l.Addr().String()).SetClientID(id).
				SetProtocolVersion(level).SetAutoReconnect(false).SetConnectRetry(false).SetCleanSession(true).
				SetUsername("user").SetPassword("secret").SetWill("interop/will", "gone", 1, false)
			return o
		}
		wait := func(tok mqttv3.Token, what string) {
			t.Helper()
			if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatalf("level %d %s: %v", level, what, tok.Error())
			}
		}
		sub := mqttv3.NewClient(opts(fmt.Sprintf("v3-sub-%d", level)))
		wait(sub.Connect(), "connect")
		wait(sub.Subscribe("interop/+/v3", 2, func(_ mqttv3.Client, m mqttv3.Message) { got <- m }), "subscribe")
		pub := mqttv3.NewClient(opts(fmt.Sprintf("v3-pub-%d", level)))
		wait(pub.Connect(), "connect")
		for qos := byte(0); qos <= 2; qos++ {
			wait(pub.Publish("interop/"+strconv.Itoa(int(qos))+"/v3", qos, false, []byte{qos, 0, 0xff}), "publish")
		}
		for i := 0; i < 3; i++ {
			select {
			case m := <-got:
				if m.Qos() != m.Payload()[0] || m.Topic() != "interop/"+strconv.Itoa(int(m.Qos()))+"/v3" {
					t.Fatalf("level %d: delivered QoS %d %q %x", level, m.Qos(), m.Topic(), m.Payload())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("level %d: delivery %d missing", level, i)
			}
		}
		wait(sub.Unsubscribe("interop/+/v3"), "unsubscribe")
		pub.Disconnect(100)
		sub.Disconnect(100)
	}
	b.writeSeeds(t, "paho.mqtt.golang")
}
