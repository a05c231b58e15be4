package server

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// stall opens a connection that declares a frame of frame bytes, sends
// junk of it and then nothing more; the write blocks while the server
// does not read. Closing the returned connection ends it.
func stall(t *testing.T, addr string, frame int, junk []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		var prefix [4]byte
		binary.BigEndian.PutUint32(prefix[:], uint32(frame))
		if _, err := c.Write(prefix[:]); err == nil {
			c.Write(junk)
		}
	}()
	return c
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// pollFor checks ok every few milliseconds until it holds or timeout
// passes, and reports whether it held.
func pollFor(timeout time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// TestInflightBudget: many connections each send most of a large
// declared frame and stall. With a budget, the server's heap grows by at
// most the budget (plus every connection's read buffer and some slack),
// the connections beyond it wait unread but stay open, and an ordinary
// client is still served; without one (the control), the heap grows past
// that bound, so the measurement can tell.
func TestInflightBudget(t *testing.T) {
	const (
		mb     = 1 << 20
		frame  = 4 * mb
		conns  = 20
		budget = 16 * mb // frames above 64 KiB may hold 14 MiB: three of these
	)
	junk := make([]byte, frame-mb/2) // shared by every connection, allocated before measuring
	bound := int64(budget + conns*64<<10 + 8*mb)

	t.Run("bounded", func(t *testing.T) {
		s, addr := startServer(t, echoMux(), Options{MaxFrameSize: frame, MaxInflightBytes: budget, IdleTimeout: time.Minute})
		base := heapInUse()
		for range conns {
			stall(t, addr, frame, junk)
		}
		b := s.Budget()
		if !pollFor(10*time.Second, func() bool { return b.InUse() == 3*frame && b.Waiting() == conns-3 }) {
			t.Fatalf("budget: %d bytes in use, %d waiting; want %d and %d", b.InUse(), b.Waiting(), 3*frame, conns-3)
		}
		if grew := heapInUse() - base; grew > bound {
			t.Fatalf("heap grew by %d MiB with a budget of %d MiB (bound %d MiB)", grew/mb, budget/mb, bound/mb)
		} else {
			t.Logf("heap grew by %.1f MiB (budget %d MiB, bound %d MiB)", float64(grew)/mb, budget/mb, bound/mb)
		}

		// An ordinary client is served meanwhile.
		p := dial(t, addr)
		req := wire.NewRequest(wire.HeartBeat, nil)
		req.Body = make([]byte, 1<<10)
		resp, err := p.Invoke(t.Context(), req)
		if err != nil || resp.ResponseCode() != wire.Success {
			t.Fatalf("ordinary request: %v %v", resp, err)
		}
		// The stalled connections are slowed, not closed.
		if n := len(s.Conns()); n != conns+1 {
			t.Fatalf("%d connections open, want %d", n, conns+1)
		}
	})

	t.Run("unbounded-control", func(t *testing.T) {
		_, addr := startServer(t, echoMux(), Options{MaxFrameSize: frame, MaxInflightBytes: -1, IdleTimeout: time.Minute})
		base := heapInUse()
		for range conns {
			stall(t, addr, frame, junk)
		}
		var grew int64
		if !pollFor(10*time.Second, func() bool { grew = heapInUse() - base; return grew > bound }) {
			t.Fatalf("without a budget the heap grew by only %d MiB, within the bound of %d MiB: the test cannot tell", grew/mb, bound/mb)
		}
		t.Logf("without a budget the heap grew by %.1f MiB", float64(grew)/mb)
	})
}

// TestStalledConnectionsClosedWhenIdle: connections stalled in a frame,
// those holding budget and those waiting for it, are closed once idle
// for IdleTimeout, and the budget comes back.
func TestStalledConnectionsClosedWhenIdle(t *testing.T) {
	const frame = 1 << 20
	s, addr := startServer(t, echoMux(), Options{MaxFrameSize: frame, MaxInflightBytes: frame, IdleTimeout: 400 * time.Millisecond})
	junk := make([]byte, frame/2)
	start := time.Now()
	c1 := stall(t, addr, frame, junk)
	c2 := stall(t, addr, frame, junk)
	b := s.Budget()
	if !pollFor(5*time.Second, func() bool { return b.InUse() == frame && b.Waiting() == 1 }) {
		t.Fatalf("budget: %d bytes in use, %d waiting", b.InUse(), b.Waiting())
	}
	for i, c := range []net.Conn{c1, c2} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("connection %d: read %v, want it closed by the server", i, err)
		} else if err != io.EOF {
			t.Logf("connection %d: %v", i, err)
		}
	}
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", el)
	}
	if !pollFor(5*time.Second, func() bool { return b.InUse() == 0 && b.Waiting() == 0 }) {
		t.Fatalf("budget after close: %d bytes in use, %d waiting", b.InUse(), b.Waiting())
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
