package peer

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func TestInvokeAsync(t *testing.T) {
	s := startServer(t, echo)
	c := dial(t, s, Options{})
	const n = 500
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		errs []error
		wg   sync.WaitGroup
	)
	wg.Add(n)
	for i := range n {
		req := wire.NewRequest(wire.SendMessage, map[string]string{"i": strconv.Itoa(i)})
		err := c.InvokeAsync(context.Background(), req, func(resp *wire.Command, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			seen[resp.ExtFields["i"]] = true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if len(errs) > 0 || len(seen) != n {
		t.Fatalf("%d answers, errors %v", len(seen), errs)
	}
	c.mu.Lock()
	pending, async := len(c.pending), c.async
	c.mu.Unlock()
	if pending != 0 || async != 0 {
		t.Fatalf("%d calls (%d async) left pending", pending, async)
	}
}

func TestInvokeAsyncTimeout(t *testing.T) {
	release := make(chan struct{})
	s := startServer(t, func(sc *testConn, req *wire.Command) { <-release })
	defer close(release)
	c := dial(t, s, Options{RequestTimeout: 100 * time.Millisecond})
	done := make(chan error, 2)
	start := time.Now()
	cb := func(resp *wire.Command, err error) { done <- err }
	if err := c.InvokeAsync(context.Background(), wire.NewRequest(wire.PullMessage, nil), cb); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := c.InvokeAsync(ctx, wire.NewRequest(wire.PullMessage, nil), cb); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no timeout")
		}
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Fatalf("the calls timed out after %v", d)
	}
}

func TestInvokeAsyncClose(t *testing.T) {
	release := make(chan struct{})
	s := startServer(t, func(sc *testConn, req *wire.Command) { <-release })
	defer close(release)
	c := dial(t, s, Options{})
	done := make(chan error, 1)
	if err := c.InvokeAsync(context.Background(), wire.NewRequest(wire.PullMessage, nil), func(resp *wire.Command, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	err := c.InvokeAsync(context.Background(), wire.NewRequest(wire.PullMessage, nil), func(*wire.Command, error) { t.Error("done called") })
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestInlineDetach runs handlers on the reading goroutine: one that
// detaches and waits must not stop the connection from reading, answering
// other requests and completing Invoke.
func TestInlineDetach(t *testing.T) {
	s := startServer(t, echo)
	release := make(chan struct{})
	waiting := make(chan struct{})
	var mu sync.Mutex
	readers := map[bool]int{} // detached or not → handlers seen
	c := dial(t, s, Options{Inline: true, Handler: HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		if req.ExtFields["wait"] == "true" {
			Detach(ctx)
			Detach(ctx) // a second call does nothing
			waiting <- struct{}{}
			<-release
		}
		mu.Lock()
		readers[req.ExtFields["wait"] == "true"]++
		mu.Unlock()
		return wire.NewResponse(req, wire.Success, req.ExtFields["n"])
	})})
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
	sc := s.conn(0)
	// Two waits in a row: the second needs a new reader while the first
	// still holds its goroutine.
	for i := range 2 {
		sc.send(&wire.Command{Code: 50, Opaque: int32(100 + i), ExtFields: map[string]string{"wait": "true", "n": "w"}})
		<-waiting
	}
	for i := range 20 {
		sc.send(&wire.Command{Code: 51, Opaque: int32(i), ExtFields: map[string]string{"n": strconv.Itoa(i)}})
	}
	for i := range 20 {
		select {
		case resp := <-s.responses:
			if resp.Opaque != int32(i) || resp.Remark != strconv.Itoa(i) {
				t.Fatalf("response %d: %+v", i, resp)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("inline requests not answered while a handler waits")
		}
	}
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatalf("Invoke while a handler waits: %v", err)
	}
	close(release)
	for range 2 {
		select {
		case resp := <-s.responses:
			if resp.Opaque < 100 || resp.Remark != "w" {
				t.Fatalf("%+v", resp)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("detached handler's response not written")
		}
	}
	// The spare goroutine takes over the next time a handler detaches.
	go func() { <-waiting }()
	sc.send(&wire.Command{Code: 50, Opaque: 200, ExtFields: map[string]string{"wait": "true", "n": "again"}})
	if resp := <-s.responses; resp.Opaque != 200 {
		t.Fatalf("%+v", resp)
	}
	c.Close()
	if readers[true] != 3 || readers[false] != 20 {
		t.Fatalf("handlers: %v", readers)
	}
}

// TestInlineBatchesResponses checks that responses to requests that
// arrived together are all written, in order.
func TestInlineBatchesResponses(t *testing.T) {
	s := startServer(t, echo)
	c := dial(t, s, Options{Inline: true, Handler: HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		return wire.NewResponse(req, wire.Success, "")
	})})
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
	var frames []byte
	for i := range 200 {
		b, err := (&wire.Command{Code: 52, Opaque: int32(i), Body: make([]byte, 700)}).AppendTo(nil, wire.JSON)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b...)
	}
	s.conn(0).sendRaw(frames)
	for i := range 200 {
		select {
		case resp := <-s.responses:
			if resp.Opaque != int32(i) {
				t.Fatalf("response %d has opaque %d", i, resp.Opaque)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 200 responses", i)
		}
	}
}

// TestLentBody checks responses whose body is handed back with BodyDone:
// large ones are written from the body's own memory, small ones copied,
// and BodyDone runs once either way, after which the memory is reused.
func TestLentBody(t *testing.T) {
	s := startServer(t, echo)
	var mu sync.Mutex
	pool := map[int][]byte{} // size → buffer handed back
	done := map[int]int{}
	c := dial(t, s, Options{Inline: true, Handler: HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		n, _ := strconv.Atoi(req.ExtFields["n"])
		mu.Lock()
		body := pool[n]
		delete(pool, n)
		mu.Unlock()
		if body == nil {
			body = make([]byte, n)
		}
		for i := range body {
			body[i] = byte(n + i)
		}
		resp := wire.NewResponse(req, wire.Success, "")
		resp.Body = body
		resp.BodyDone = func() {
			mu.Lock()
			defer mu.Unlock()
			done[n]++
			clear(body) // whatever the connection still had to send is gone
			pool[n] = body
		}
		return resp
	})})
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
	sc := s.conn(0)
	sizes := []int{100, 50000, 100, 50000, 70000, 3000}
	for i, n := range sizes {
		sc.send(&wire.Command{Code: 53, Opaque: int32(i), ExtFields: map[string]string{"n": strconv.Itoa(n)}})
	}
	for i, n := range sizes {
		select {
		case resp := <-s.responses:
			if resp.Opaque != int32(i) || len(resp.Body) != n {
				t.Fatalf("response %d: opaque %d, %d bytes", i, resp.Opaque, len(resp.Body))
			}
			for j, b := range resp.Body {
				if b != byte(n+j) {
					t.Fatalf("response %d: byte %d is %d", i, j, b)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("response %d missing", i)
		}
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	if done[100] != 2 || done[50000] != 2 || done[70000] != 1 || done[3000] != 1 {
		t.Fatalf("BodyDone calls: %v", done)
	}
}

// TestStalledReaderIsCut checks that a peer whose other end keeps
// sending requests but never reads the answers shuts the connection down
// once MaxQueuedResponses bytes of answers wait, instead of holding them
// all. Handlers run on goroutines of their own here, as detached inline
// handlers do; an inline handler that is not detached writes its answer
// itself and so stops reading while the other end does.
func TestStalledReaderIsCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			accepted <- conn
		}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	body := make([]byte, 64<<10)
	p := New(<-accepted, Options{MaxQueuedResponses: 4 << 20, Handler: HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		resp := wire.NewResponse(req, wire.Success, "")
		resp.Body = body
		return resp
	})})
	defer p.Close()
	req, err := (&wire.Command{Code: 53}).AppendTo(nil, wire.JSON)
	if err != nil {
		t.Fatal(err)
	}
	// The socket buffers hold a few MiB of answers; the bound is reached
	// well within 1,000 requests (64 MiB of answers). Writes fail once
	// the peer has shut the connection.
	var sent int
	for sent = 0; sent < 1000; sent++ {
		raw.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := raw.Write(req); err != nil {
			break
		}
		select {
		case <-p.Done():
			sent = 1000
		default:
		}
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the connection is still up after %d requests whose answers were never read", sent)
	}
	if err := p.Err(); !errors.Is(err, ErrStalled) {
		t.Fatalf("the connection ended with %v, want ErrStalled", err)
	}
}
