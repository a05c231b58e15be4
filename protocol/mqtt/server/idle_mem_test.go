//go:build !race

package server_test

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

// TestIdleConnectionMemory opens idle connections (CONNECT, CONNACK,
// nothing more) and measures the heap they hold: a waiting connection
// keeps no read or write buffer (they are pooled), nor the packets its
// decoder reuses. The figure includes the test's own end of each
// connection (about 0.6 KiB); and the stack of its one goroutine, 2 KiB
// (a goroutine waiting deep in the stack its CONNECT grew holds 4).
func TestIdleConnectionMemory(t *testing.T) {
	b := startBroker(t, "", nil)
	const n = 2000
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	g0 := runtime.NumGoroutine()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var ack [16]byte
	for i := range n {
		nc, err := net.Dial("tcp", b.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		packet.Encode(nc, &packet.Connect{Version: packet.Version5, ClientID: fmt.Sprint("idle-", i), CleanStart: true, KeepAlive: 600}, packet.Version5)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Read(ack[:]); err != nil {
			t.Fatal(err)
		}
	}
	// The last connections are handed to their waiting goroutines once
	// their grace has passed: poll until the stacks settle.
	var heap, stack float64
	for deadline := time.Now().Add(5 * time.Second); ; {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		heap = float64(ms1.HeapInuse-ms0.HeapInuse) / 1024 / n
		stack = float64(ms1.StackInuse-ms0.StackInuse) / 1024 / n
		if stack <= 2.5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("per idle connection: heap %.2f KiB, stack %.2f KiB, %d goroutines", heap, stack, (runtime.NumGoroutine()-g0)/n)
	if heap > 3.5 {
		t.Errorf("an idle connection holds %.2f KiB of heap, want at most 3.5 (no buffers)", heap)
	}
	if stack > 3 {
		t.Errorf("an idle connection holds %.2f KiB of stack, want about 2 (a fresh goroutine)", stack)
	}
	if g := runtime.NumGoroutine() - g0; g > n+n/100 {
		t.Errorf("%d goroutines for %d idle connections, want one each", g, n)
	}
}
