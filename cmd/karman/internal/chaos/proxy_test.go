package chaos

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every connection with what it reads, until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func newTestProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := NewProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip sends b through c and reads it back.
func roundTrip(c net.Conn, b []byte) ([]byte, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(b); err != nil {
		return nil, err
	}
	got := make([]byte, len(b))
	_, err := io.ReadFull(c, got)
	return got, err
}

// Bytes pass unchanged, each direction held for the delay: a round trip
// takes at least twice it, and none once the fault is cleared.
func TestProxyDelay(t *testing.T) {
	p := newTestProxy(t)
	const delay = 40 * time.Millisecond
	if err := p.SetFault(delay, 0); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := bytes.Repeat([]byte("karman"), 20000) // several chunks
	for range 3 {
		start := time.Now()
		got, err := roundTrip(c, msg)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round trip: %v, %d bytes back, equal %v", err, len(got), bytes.Equal(got, msg))
		}
		if d := time.Since(start); d < 2*delay {
			t.Errorf("round trip in %s, want at least %s", d, 2*delay)
		}
	}
	if err := p.SetFault(0, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(c, []byte("ping")); err != nil || string(got) != "ping" {
		t.Fatalf("after clearing the fault: %q, %v", got, err)
	}
	if links, stalls, resets := p.Counts(); links != 1 || stalls != 0 || resets != 0 {
		t.Errorf("Counts = %d links, %d stalls, %d resets; want 1, 0, 0", links, stalls, resets)
	}
}

// With loss 1 every chunk stalls or resets: a connection is reset
// within a few round trips (one chunk in four), and the data that did
// pass is intact.
func TestProxyLoss(t *testing.T) {
	p := newTestProxy(t)
	p.StallFor = time.Millisecond
	if err := p.SetFault(0, 1); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rtErr error
	for i := 0; i < 200 && rtErr == nil; i++ {
		var got []byte
		got, rtErr = roundTrip(c, []byte{byte(i)})
		if rtErr == nil && got[0] != byte(i) {
			t.Fatalf("round trip %d came back as %d", i, got[0])
		}
	}
	if rtErr == nil {
		t.Fatal("200 round trips with loss 1 and no reset")
	}
	var ne net.Error
	if errors.As(rtErr, &ne) && ne.Timeout() {
		t.Fatalf("the connection hung instead of being reset: %v", rtErr)
	}
	if _, _, resets := p.Counts(); resets != 1 {
		t.Errorf("%d resets, want 1", resets)
	}
}

func TestProxySetFaultRefusesBadInput(t *testing.T) {
	p := newTestProxy(t)
	for _, tc := range []struct {
		delay time.Duration
		loss  float64
	}{{-time.Millisecond, 0}, {0, -0.1}, {0, 1.5}, {0, nan()}} {
		if err := p.SetFault(tc.delay, tc.loss); !errors.Is(err, ErrBadProxyFault) {
			t.Errorf("SetFault(%s, %v) = %v, want ErrBadProxyFault", tc.delay, tc.loss, err)
		}
	}
}

func nan() float64 { z := 0.0; return z / z }

// Close ends relayed connections and returns: nothing is left waiting
// on a peer that never closes.
func TestProxyClose(t *testing.T) {
	p := newTestProxy(t)
	p.SetFault(time.Hour, 0) // chunks sit in the delay line
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("held"))
	// The relay is up once the proxy dialed the target.
	deadline := time.Now().Add(5 * time.Second)
	for links, _, _ := p.Counts(); links == 0; links, _, _ = p.Counts() {
		if time.Now().After(deadline) {
			t.Fatal("the proxy never relayed the connection")
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the client's connection is still open after Close")
	}
}
