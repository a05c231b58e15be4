package server_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// broker is an engine with an MQTT server on a loopback port.
type broker struct {
	t    testing.TB
	dir  string
	e    *engine.Engine
	srv  *server.Server
	ln   net.Listener
	addr string
	opts *server.Options
}

func startBroker(t testing.TB, dir string, opts *server.Options) *broker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	b := &broker{t: t, dir: dir, opts: opts}
	b.start()
	t.Cleanup(b.stop)
	return b
}

func (b *broker) start() {
	b.t.Helper()
	r := route.New()
	e, err := engine.Open(b.dir, &engine.Options{Router: r, AutoCreateTopics: true, SegmentSize: 4 << 20})
	if err != nil {
		b.t.Fatal(err)
	}
	srv, err := server.New(e, r, b.opts)
	if err != nil {
		e.Close()
		b.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.t.Fatal(err)
	}
	go srv.Serve(ln)
	b.e, b.srv, b.ln, b.addr = e, srv, ln, ln.Addr().String()
}

func (b *broker) stop() {
	if b.srv == nil {
		return
	}
	b.srv.Close()
	b.e.Close()
	b.srv, b.e = nil, nil
}

func (b *broker) restart() {
	b.stop()
	b.start()
}

// v5 is a paho.golang client with the messages it received.
type v5 struct {
	t   testing.TB
	c   *paho.Client
	ack *paho.Connack

	mu   sync.Mutex
	got  []*paho.Publish
	more chan struct{}
	disc chan *paho.Disconnect // the server's DISCONNECT, if it sends one
}

func dialV5(t testing.TB, addr string, cp *paho.Connect) *v5 {
	t.Helper()
	v, err := tryV5(t, addr, cp)
	if err != nil {
		t.Fatalf("connect %s: %v", cp.ClientID, err)
	}
	return v
}

func tryV5(t testing.TB, addr string, cp *paho.Connect) (*v5, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	v := &v5{t: t, more: make(chan struct{}, 1), disc: make(chan *paho.Disconnect, 1)}
	v.c = paho.NewClient(paho.ClientConfig{
		Conn:               nc,
		OnServerDisconnect: func(d *paho.Disconnect) { v.disc <- d },
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			v.mu.Lock()
			v.got = append(v.got, pr.Packet)
			v.mu.Unlock()
			select {
			case v.more <- struct{}{}:
			default:
			}
			return true, nil
		}},
	})
	if cp.KeepAlive == 0 {
		cp.KeepAlive = 30
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v.ack, err = v.c.Connect(ctx, cp)
	if err != nil {
		nc.Close()
		return v, err
	}
	t.Cleanup(func() { v.c.Disconnect(&paho.Disconnect{}) })
	return v, nil
}

func (v *v5) sub(filter string, qos byte) *paho.Suback {
	v.t.Helper()
	return v.subOpts(&paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: qos}}})
}

func (v *v5) subOpts(s *paho.Subscribe) *paho.Suback {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sa, err := v.c.Subscribe(ctx, s)
	if err != nil {
		v.t.Fatalf("subscribe: %v", err)
	}
	return sa
}

func (v *v5) pub(p *paho.Publish) *paho.PublishResponse {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := v.c.Publish(ctx, p)
	if err != nil {
		v.t.Fatalf("publish %s: %v", p.Topic, err)
	}
	return r
}

// wait returns once n messages came, failing after a deadline.
func (v *v5) wait(n int) []*paho.Publish {
	v.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		v.mu.Lock()
		if len(v.got) >= n {
			out := append([]*paho.Publish(nil), v.got...)
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

// none checks that nothing more than n messages arrives within d (for
// absence there is no signal to wait for).
func (v *v5) none(n int, d time.Duration) {
	v.t.Helper()
	time.Sleep(d)
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.got) > n {
		v.t.Fatalf("received %d messages, want %d: extra %s", len(v.got), n, v.got[n].Topic)
	}
}
