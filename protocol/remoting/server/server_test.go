package server

import (
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func startServer(t *testing.T, mux *Mux, opts Options) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(mux, opts)
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s, ln.Addr().String()
}

func dial(t *testing.T, addr string) *peer.Peer {
	t.Helper()
	p, err := peer.Dial(context.Background(), addr, peer.Options{RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func echoMux() *Mux {
	m := NewMux()
	m.HandleFunc(wire.HeartBeat, KindConsume, func(ctx context.Context, c *Conn, req *wire.Command) *wire.Command {
		resp := wire.NewResponse(req, wire.Success, "")
		resp.Body = append([]byte(c.RemoteAddr()+" "), req.Body...)
		return resp
	})
	m.HandleFunc(wire.SendMessage, KindSend, func(ctx context.Context, c *Conn, req *wire.Command) *wire.Command {
		<-ctx.Done() // blocks until the connection closes
		return nil
	})
	m.HandleFunc(wire.GetMaxOffset, KindDefault, func(ctx context.Context, c *Conn, req *wire.Command) *wire.Command {
		panic("handler bug")
	})
	return m
}

func TestRoutesAndErrors(t *testing.T) {
	_, addr := startServer(t, echoMux(), Options{})
	p := dial(t, addr)
	ctx := context.Background()
	resp, err := p.Invoke(ctx, &wire.Command{Code: int32(wire.HeartBeat), Body: []byte("hi")})
	if err != nil || resp.ResponseCode() != wire.Success || string(resp.Body[len(resp.Body)-2:]) != "hi" {
		t.Fatalf("heartbeat: %v %v", resp, err)
	}
	resp, err = p.Invoke(ctx, &wire.Command{Code: 99999})
	if err != nil || resp.ResponseCode() != wire.RequestCodeNotSupported {
		t.Fatalf("unknown code: %v %v", resp, err)
	}
	resp, err = p.Invoke(ctx, &wire.Command{Code: int32(wire.GetMaxOffset)})
	if err != nil || resp.ResponseCode() != wire.SystemError {
		t.Fatalf("panicking handler: %v %v", resp, err)
	}
	// The connection still serves after the panic.
	if resp, err := p.Invoke(ctx, &wire.Command{Code: int32(wire.HeartBeat)}); err != nil || resp.ResponseCode() != wire.Success {
		t.Fatalf("after a panic: %v %v", resp, err)
	}
}

func TestBusyWhenKindIsFull(t *testing.T) {
	_, addr := startServer(t, echoMux(), Options{Workers: map[Kind]int{KindSend: 2}, MaxQueued: 1})
	p := dial(t, addr)
	ctx := context.Background()
	busy := make(chan *wire.Command, 8)
	for range 4 {
		go func() {
			resp, err := p.Invoke(ctx, &wire.Command{Code: int32(wire.SendMessage)})
			if err == nil {
				busy <- resp
			}
		}()
	}
	// Two run, one waits, the fourth is refused.
	select {
	case resp := <-busy:
		if resp.ResponseCode() != wire.SystemBusy {
			t.Fatalf("got %v, want SYSTEM_BUSY", resp)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no SYSTEM_BUSY when the send kind was full")
	}
	// Other kinds still get through.
	if resp, err := p.Invoke(ctx, &wire.Command{Code: int32(wire.HeartBeat)}); err != nil || resp.ResponseCode() != wire.Success {
		t.Fatalf("heartbeat while sends are full: %v %v", resp, err)
	}
}

func TestBusyHook(t *testing.T) {
	_, addr := startServer(t, echoMux(), Options{Busy: func(k Kind) bool { return k == KindConsume }})
	p := dial(t, addr)
	resp, err := p.Invoke(context.Background(), &wire.Command{Code: int32(wire.HeartBeat)})
	if err != nil || resp.ResponseCode() != wire.SystemBusy {
		t.Fatalf("got %v %v, want SYSTEM_BUSY", resp, err)
	}
}

func TestGarbageClosesOnlyThatConnection(t *testing.T) {
	var closed atomic.Int32
	_, addr := startServer(t, echoMux(), Options{OnClose: func(*Conn) { closed.Add(1) }})
	good := dial(t, addr)
	for _, junk := range [][]byte{
		{0xff, 0xff, 0xff, 0xff, 1, 2, 3},                                                        // negative length
		{0x7f, 0xff, 0xff, 0xff},                                                                 // absurd length
		binary.BigEndian.AppendUint32(nil, 3),                                                    // shorter than a header
		append(binary.BigEndian.AppendUint32(nil, 8), 9, 0, 0, 1, 'x', 0, 0, 0),                  // unknown serialize type
		append(binary.BigEndian.AppendUint32(nil, 10), 0, 0, 0, 6, '{', '"', 'c', 'o', 'd', 'e'), // truncated JSON
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(junk)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		if _, err := c.Read(buf); err == nil {
			// A response is acceptable too; the connection must not hang.
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("server neither answered nor closed after %x", junk)
		}
		c.Close()
	}
	if resp, err := good.Invoke(context.Background(), &wire.Command{Code: int32(wire.HeartBeat)}); err != nil || resp.ResponseCode() != wire.Success {
		t.Fatalf("good client after garbage: %v %v", resp, err)
	}
}

func TestIdleConnectionsClose(t *testing.T) {
	done := make(chan struct{})
	_, addr := startServer(t, echoMux(), Options{IdleTimeout: 100 * time.Millisecond, OnClose: func(*Conn) { close(done) }})
	p := dial(t, addr)
	if _, err := p.Invoke(context.Background(), &wire.Command{Code: int32(wire.HeartBeat)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("idle connection not closed")
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client did not see the close")
	}
}

func TestServerInitiatedRequest(t *testing.T) {
	srv, addr := startServer(t, echoMux(), Options{})
	p, err := peer.Dial(context.Background(), addr, peer.Options{Handler: peer.HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		resp := wire.NewResponse(req, wire.Success, "checked")
		return resp
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Invoke(context.Background(), &wire.Command{Code: int32(wire.HeartBeat)}); err != nil {
		t.Fatal(err)
	}
	conns := srv.Conns()
	if len(conns) != 1 {
		t.Fatalf("%d connections", len(conns))
	}
	resp, err := conns[0].Invoke(context.Background(), &wire.Command{Code: int32(wire.CheckTransactionState)})
	if err != nil || resp.Remark != "checked" {
		t.Fatalf("server→client request: %v %v", resp, err)
	}
}

// TestInlineRoutes checks requests registered with HandleInline: they
// read their headers in place, a handler that detaches and waits leaves
// the connection serving, and a full kind sends them to wait off the
// reading goroutine.
func TestInlineRoutes(t *testing.T) {
	release := make(chan struct{})
	m := NewMux()
	m.HandleInlineFunc(wire.PullMessage, KindPull, func(ctx context.Context, c *Conn, req *wire.Command) *wire.Command {
		var h wire.PullMessageRequestHeader
		if err := req.DecodeHeader(&h); err != nil {
			return wire.NewResponse(req, wire.SystemError, err.Error())
		}
		if h.SuspendTimeoutMillis > 0 {
			Detach(ctx)
			<-release
		}
		return wire.NewResponse(req, wire.Success, h.Topic)
	})
	m.HandleFunc(wire.HeartBeat, KindConsume, func(ctx context.Context, c *Conn, req *wire.Command) *wire.Command {
		return wire.NewResponse(req, wire.Success, req.ExtFields["k"]) // not inline: ExtFields are decoded
	})
	_, addr := startServer(t, m, Options{Workers: map[Kind]int{KindPull: 2}})
	p := dial(t, addr)
	pull := func(topic string, wait bool) *wire.Command {
		h := wire.PullMessageRequestHeader{ConsumerGroup: "g", Topic: topic, MaxMsgNums: 1}
		if wait {
			h.SuspendTimeoutMillis = 1000
		}
		req := wire.NewRequest(wire.PullMessage, nil)
		req.EncodeHeader(&h)
		return req
	}
	ctx := context.Background()
	waited := make(chan *wire.Command, 2)
	for range 2 {
		go func() {
			resp, err := p.Invoke(ctx, pull("slow", true))
			if err != nil {
				t.Error(err)
			}
			waited <- resp
		}()
	}
	// Both pull slots are held now (or soon): a third pull waits for one
	// off the reading goroutine, and other requests still get through.
	third := make(chan *wire.Command, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		resp, _ := p.Invoke(ctx, pull("third", false))
		third <- resp
	}()
	time.Sleep(100 * time.Millisecond)
	resp, err := p.Invoke(ctx, wire.NewRequest(wire.HeartBeat, map[string]string{"k": "v"}))
	if err != nil || resp.Remark != "v" {
		t.Fatalf("heartbeat while pulls wait: %v %v", resp, err)
	}
	select {
	case r := <-third:
		t.Fatalf("third pull answered while both slots were held: %v", r)
	default:
	}
	close(release)
	for range 2 {
		if r := <-waited; r == nil || r.Remark != "slow" {
			t.Fatalf("waiting pull: %v", r)
		}
	}
	if r := <-third; r == nil || r.Remark != "third" {
		t.Fatalf("third pull: %v", r)
	}
}

// Options.Latency sees each routed request with its answer's code;
// requests of no route are not observed.
func TestLatencyObserved(t *testing.T) {
	type seen struct {
		req  wire.RequestCode
		resp wire.ResponseCode
		d    time.Duration
	}
	got := make(chan seen, 4)
	_, addr := startServer(t, echoMux(), Options{Latency: func(req wire.RequestCode, resp wire.ResponseCode, d time.Duration) {
		got <- seen{req, resp, d}
	}})
	p := dial(t, addr)
	ctx := context.Background()
	if _, err := p.Invoke(ctx, &wire.Command{Code: 99999}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Invoke(ctx, &wire.Command{Code: int32(wire.HeartBeat)}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s.req != wire.HeartBeat || s.resp != wire.Success || s.d <= 0 {
			t.Fatalf("observed %+v, want the heartbeat's success", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the heartbeat was not observed")
	}
	if len(got) != 0 {
		t.Fatalf("also observed %+v", <-got)
	}
}
