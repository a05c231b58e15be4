package server_test

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// stream encodes packets back to back in version v.
func stream(v byte, ps ...packet.Packet) []byte {
	var b []byte
	for _, p := range ps {
		var err error
		if b, err = p.AppendTo(b, v); err != nil {
			panic(err)
		}
	}
	return b
}

// fuzzSeeds are well-formed sessions the fuzzer mutates.
func fuzzSeeds() [][]byte {
	var out [][]byte
	for _, v := range []byte{packet.Version311, packet.Version5} {
		c := &packet.Connect{Version: v, ClientID: "fz", KeepAlive: 10}
		if v == packet.Version5 {
			c.Properties.SessionExpiry = 10
		}
		will := &packet.Connect{Version: v, ClientID: "fw", CleanStart: true, Will: &packet.Will{Topic: "fz/will", QoS: 1, Payload: []byte("w")}}
		out = append(out,
			stream(v, c, &packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "fz/#", QoS: 2}, {Filter: "$share/g/fz/+", QoS: 1}}},
				&packet.Publish{Topic: "fz/a", QoS: 1, PacketID: 2, Payload: []byte("x"), Retain: true},
				&packet.Publish{Topic: "fz/b", QoS: 2, PacketID: 3, Payload: []byte("y")},
				&packet.Pubrel{PacketID: 3}, &packet.Puback{PacketID: 1}, &packet.Pingreq{},
				&packet.Unsubscribe{PacketID: 4, Filters: []string{"fz/#"}}, &packet.Disconnect{}),
			stream(v, will, &packet.Publish{Topic: "fz", QoS: 0, Payload: nil}),
		)
	}
	return out
}

// FuzzServer feeds arbitrary byte streams to the MQTT front-end as whole
// connections, against one real engine: every connection must end once
// its input does (no hang), without a panic, and the server must still
// serve a well-formed session afterwards.
func FuzzServer(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	r := route.New()
	e, err := engine.Open(f.TempDir(), &engine.Options{Router: r, AutoCreateTopics: true, SegmentSize: 4 << 20})
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close()
	srv, err := server.New(e, r, &server.Options{MaxPacketSize: 64 << 10, ConnectTimeout: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	f.Fuzz(func(t *testing.T, in []byte) {
		run := func(in []byte) []byte {
			c := newStreamConn(in)
			srv.ServeConn(c)
			select {
			case <-c.closed:
			case <-time.After(10 * time.Second):
				t.Fatalf("the connection did not end after its input %q", in)
			}
			return c.output()
		}
		run(in)
		// The server still answers a well-formed CONNECT.
		got := run(stream(packet.Version311, &packet.Connect{Version: packet.Version311, ClientID: "after", CleanStart: true}))
		if len(got) < 4 || got[0] != 0x20 || got[3] != 0 {
			t.Fatalf("after the input, a CONNECT got % x", got)
		}
	})
}

// streamConn is a connection whose peer sends in and then closes its
// side (reads end with io.EOF); what the server writes is kept.
type streamConn struct {
	r      *bytes.Reader
	mu     sync.Mutex
	out    bytes.Buffer
	once   sync.Once
	closed chan struct{}
}

func newStreamConn(in []byte) *streamConn {
	return &streamConn{r: bytes.NewReader(in), closed: make(chan struct{})}
}

func (c *streamConn) Read(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	return c.r.Read(p)
}

func (c *streamConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	return c.out.Write(p)
}

func (c *streamConn) output() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out.Bytes())
}

func (c *streamConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *streamConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1883}
}
func (c *streamConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }
