package server

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// exhaustedListener fails its first accepts as a process out of file
// descriptors does, then accepts normally.
type exhaustedListener struct {
	net.Listener
	failures atomic.Int32
}

func (l *exhaustedListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestServeRidesOutFileDescriptorExhaustion: accept failing with EMFILE
// (too many open files) does not end Serve; once descriptors are back, a
// client is served.
func TestServeRidesOutFileDescriptorExhaustion(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &exhaustedListener{Listener: inner}
	ln.failures.Store(3)
	s := New(echoMux(), Options{})
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	p := dial(t, inner.Addr().String())
	resp, err := p.Invoke(context.Background(), wire.NewRequest(wire.HeartBeat, nil))
	if err != nil || resp.ResponseCode() != wire.Success {
		t.Fatalf("after EMFILE: %v, %v", resp, err)
	}
	if n := ln.failures.Load(); n >= 0 {
		t.Fatalf("the listener still had %d failures to give", n+1)
	}
	if !retryAccept(&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ENFILE)}) || retryAccept(net.ErrClosed) {
		t.Error("retryAccept: ENFILE should pass and a closed listener should not")
	}
}
