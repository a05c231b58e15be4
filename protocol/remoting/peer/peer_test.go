package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func dial(t *testing.T, s *testServer, opts Options) *Peer {
	t.Helper()
	c, err := Dial(context.Background(), s.addr(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestInvokeEcho(t *testing.T) {
	for _, typ := range []wire.SerializeType{wire.JSON, wire.RocketMQ} {
		t.Run(typ.String(), func(t *testing.T) {
			s := startServer(t, echo)
			s.got = make(chan *wire.Command, 1)
			c := dial(t, s, Options{SerializeType: typ})
			req := wire.NewRequest(wire.SendMessage, map[string]string{"topic": "T", "properties": "a\x01b\x02"})
			req.Body = []byte("hello")
			req.Opaque = 999 // ignored
			req.Flag = wire.FlagOneway
			resp, err := c.Invoke(ctxTimeout(t, 5*time.Second), req)
			if err != nil {
				t.Fatal(err)
			}
			got := <-s.got
			if got.SerializeType != typ || got.IsOneway() || got.IsResponse() || got.Opaque == 999 {
				t.Fatalf("server saw %+v", got)
			}
			if req.Opaque != 999 || req.Flag != wire.FlagOneway {
				t.Fatal("Invoke modified the caller's command")
			}
			if resp.Opaque != got.Opaque || resp.ResponseCode() != wire.Success || string(resp.Body) != "hello" ||
				resp.ExtFields["properties"] != "a\x01b\x02" {
				t.Fatalf("response %+v", resp)
			}
		})
	}
}

func TestPipelinedOutOfOrder(t *testing.T) {
	const n = 200
	// Hold every response until all requests are in, then answer in
	// reverse order.
	var mu sync.Mutex
	var held []*wire.Command
	var heldConn *testConn
	s := startServer(t, func(sc *testConn, req *wire.Command) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, req)
		heldConn = sc
		if len(held) == n {
			for i := len(held) - 1; i >= 0; i-- {
				echo(heldConn, held[i])
			}
		}
	})
	c := dial(t, s, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := wire.NewRequest(wire.PullMessage, map[string]string{"i": strconv.Itoa(i)})
			req.Body = []byte(strconv.Itoa(i))
			resp, err := c.Invoke(ctxTimeout(t, 10*time.Second), req)
			if err != nil {
				errs <- err
				return
			}
			if string(resp.Body) != strconv.Itoa(i) || resp.ExtFields["i"] != strconv.Itoa(i) {
				errs <- fmt.Errorf("request %d got response %q", i, resp.Body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	s := startServer(t, func(sc *testConn, req *wire.Command) {
		if req.ExtFields["slow"] == "true" {
			<-release
		}
		echo(sc, req)
	})
	defer close(release)
	c := dial(t, s, Options{RequestTimeout: 100 * time.Millisecond})

	slow := wire.NewRequest(wire.PullMessage, map[string]string{"slow": "true"})
	// Deadline from the context.
	_, err := c.Invoke(ctxTimeout(t, 50*time.Millisecond), slow)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "PULL_MESSAGE") || !strings.Contains(err.Error(), s.addr()) {
		t.Fatalf("error %q should name the request and address", err)
	}
	// Deadline from Options.RequestTimeout.
	start := time.Now()
	_, err = c.Invoke(context.Background(), slow)
	if !errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > 2*time.Second {
		t.Fatalf("timed out after %v", d)
	}
	// Cancellation is not a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = c.Invoke(ctx, slow)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	// The connection still works, and late responses are dropped.
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls left pending", n)
	}
}

func TestConnectionLost(t *testing.T) {
	arrived := make(chan struct{}, 10)
	s := startServer(t, func(sc *testConn, req *wire.Command) { arrived <- struct{}{} })
	c := dial(t, s, Options{})
	errs := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := c.Invoke(context.Background(), wire.NewRequest(wire.PullMessage, nil))
			errs <- err
		}()
	}
	for range 5 {
		<-arrived
	}
	s.closeConns()
	for range 5 {
		err := <-errs
		if !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("err = %v", err)
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
			t.Logf("cause: %v", err)
		}
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	if !errors.Is(c.Err(), ErrConnectionLost) {
		t.Fatalf("Err = %v", c.Err())
	}
	// Later calls fail at once.
	_, err := c.Invoke(context.Background(), wire.NewRequest(wire.HeartBeat, nil))
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("err = %v", err)
	}
	if err := c.InvokeOneway(context.Background(), wire.NewRequest(wire.HeartBeat, nil)); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("oneway err = %v", err)
	}
}

func TestMalformedFromServer(t *testing.T) {
	s := startServer(t, func(sc *testConn, req *wire.Command) {
		sc.sendRaw([]byte{0, 0, 0, 6, 0, 0, 0, 2, '{', 'x'})
	})
	c := dial(t, s, Options{})
	_, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil))
	if !errors.Is(err, ErrConnectionLost) || !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
}

func TestFrameTooLargeFromServer(t *testing.T) {
	s := startServer(t, func(sc *testConn, req *wire.Command) {
		resp := wire.NewResponse(req, wire.Success, "")
		resp.Body = make([]byte, 2000)
		sc.send(resp)
	})
	c := dial(t, s, Options{MaxFrameSize: 1000})
	_, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil))
	if !errors.Is(err, ErrConnectionLost) || !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("err = %v", err)
	}
}

func TestClose(t *testing.T) {
	before := runtime.NumGoroutine()
	s := startServer(t, func(sc *testConn, req *wire.Command) {}) // never answers
	c, err := Dial(context.Background(), s.addr(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.Invoke(context.Background(), wire.NewRequest(wire.PullMessage, nil))
			errs <- err
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("err = %v", err)
		}
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("Err = %v", c.Err())
	}
	if _, err := c.Invoke(context.Background(), wire.NewRequest(wire.HeartBeat, nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	s.stop()
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOneway(t *testing.T) {
	s := startServer(t, echo)
	s.got = make(chan *wire.Command, 2)
	c := dial(t, s, Options{})
	req := wire.NewRequest(wire.UpdateConsumerOffset, map[string]string{"commitOffset": "5"})
	if err := c.InvokeOneway(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := <-s.got
	if !got.IsOneway() || got.IsResponse() || got.ExtFields["commitOffset"] != "5" {
		t.Fatalf("server saw %+v", got)
	}
	if req.Flag != 0 {
		t.Fatal("InvokeOneway modified the caller's command")
	}
}

func TestServerRequests(t *testing.T) {
	s := startServer(t, echo)
	// Each request runs on a goroutine of its own: the handler reports
	// every code it saw, in whatever order they run.
	handled := make(chan wire.RequestCode, 8)
	c := dial(t, s, Options{Handler: HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		if req.RequestCode() != wire.HeartBeat {
			defer func() { handled <- req.RequestCode() }()
		}
		switch req.RequestCode() {
		case wire.CheckTransactionState:
			return nil // Go clients answer this with a separate END_TRANSACTION
		case wire.GetConsumerRunningInfo:
			resp := wire.NewResponse(req, wire.Success, "")
			resp.Body = []byte(`{"properties":{}}`)
			resp.Opaque = 12345 // corrected by the client
			return resp
		case wire.NotifyConsumerIdsChanged:
			panic("boom")
		}
		return wire.NewResponse(req, wire.Success, "")
	})})
	// Make sure the connection is up and accepted.
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
	sc := s.conn(0)

	check := &wire.Command{Code: int32(wire.CheckTransactionState), Opaque: 7}
	sc.send(check)
	info := &wire.Command{Code: int32(wire.GetConsumerRunningInfo), Opaque: 8}
	sc.send(info)
	resp := <-s.responses
	if resp.Opaque != 8 || !resp.IsResponse() || string(resp.Body) != `{"properties":{}}` {
		t.Fatalf("response %+v", resp)
	}
	// A oneway request gets no answer even though the handler returns one.
	sc.send(&wire.Command{Code: int32(wire.ResetConsumerClientOffset), Opaque: 9, Flag: wire.FlagOneway})
	// A panicking handler yields SYSTEM_ERROR.
	sc.send(&wire.Command{Code: int32(wire.NotifyConsumerIdsChanged), Opaque: 10})
	resp = <-s.responses
	if resp.Opaque != 10 || resp.ResponseCode() != wire.SystemError || !strings.Contains(resp.Remark, "boom") {
		t.Fatalf("response %+v", resp)
	}
	want := map[wire.RequestCode]bool{wire.CheckTransactionState: true, wire.GetConsumerRunningInfo: true,
		wire.ResetConsumerClientOffset: true, wire.NotifyConsumerIdsChanged: true}
	timeout := time.After(5 * time.Second)
	for len(want) > 0 {
		select {
		case code := <-handled:
			delete(want, code)
		case <-timeout:
			t.Fatalf("requests not handled: %v", want)
		}
	}
	// Neither the check (no response) nor the oneway request is answered.
	select {
	case r := <-s.responses:
		t.Fatalf("unexpected response %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestDefaultHandler(t *testing.T) {
	s := startServer(t, echo)
	c := dial(t, s, Options{})
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
	s.conn(0).send(&wire.Command{Code: 39, Opaque: 3})
	resp := <-s.responses
	if resp.Opaque != 3 || resp.ResponseCode() != wire.RequestCodeNotSupported {
		t.Fatalf("%+v", resp)
	}
}

func TestHandlerContextCancelledOnClose(t *testing.T) {
	s := startServer(t, echo)
	started := make(chan struct{})
	c := dial(t, s, Options{Handler: HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		close(started)
		<-ctx.Done()
		return nil
	})})
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
	s.conn(0).send(&wire.Command{Code: 40, Opaque: 1})
	<-started
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
}

func TestEncodeError(t *testing.T) {
	s := startServer(t, echo)
	c := dial(t, s, Options{SerializeType: wire.RocketMQ})
	_, err := c.Invoke(ctxTimeout(t, time.Second), &wire.Command{Code: 200050})
	if !errors.Is(err, wire.ErrOutOfRange) {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Invoke(ctxTimeout(t, 5*time.Second), wire.NewRequest(wire.HeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
}

func TestDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Dial(context.Background(), addr, Options{DialTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v", err)
	}
}

func TestLargeBodies(t *testing.T) {
	s := startServer(t, echo)
	c := dial(t, s, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := wire.NewRequest(wire.SendMessage, nil)
			req.Body = bytes.Repeat([]byte{byte(i)}, 2<<20)
			resp, err := c.Invoke(ctxTimeout(t, 10*time.Second), req)
			if err != nil {
				t.Error(err)
				return
			}
			if !bytes.Equal(resp.Body, req.Body) {
				t.Error("body differs")
			}
		}()
	}
	wg.Wait()
}
