package bench

import (
	"io"
	"net"
	"sync"
	"testing"
)

// The loopback floor: what a server and a client that do no work at all
// reach on this machine with the request and answer sizes of a 1 KiB send,
// through Go's network poller. The protocol figures are read against it
// (bench/README.md, "The floor under 16 sync producers").
//
//	go test -run '^$' -bench LoopbackFloor ./bench

const (
	floorRequest = 1200 // a 1 KiB send as the Go client frames it
	floorAnswer  = 200  // its answer
)

// serveFloor answers every floorRequest bytes read from c with
// floorAnswer bytes, the answers to one read in one write.
func serveFloor(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	out := make([]byte, 0, 64<<10)
	answer := make([]byte, floorAnswer)
	have := 0
	for {
		n, err := c.Read(buf[have:])
		if err != nil {
			return
		}
		have += n
		k := have / floorRequest
		out = out[:0]
		for range k {
			out = append(out, answer...)
		}
		copy(buf, buf[k*floorRequest:have])
		have -= k * floorRequest
		if k > 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}

// floorServer listens on loopback and serves every connection with
// serve on a goroutine of its own. It is closed with the benchmark.
func floorServer(b *testing.B, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	})
	return ln.Addr().String()
}

func dialFloor(b *testing.B, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkLoopbackFloor measures round trips per second: 16 clients
// that each wait for the answer before the next request (the floor of
// "16 sync producers"), and one connection with 1,000 requests in flight
// (the floor of "1,000 in flight").
func BenchmarkLoopbackFloor(b *testing.B) {
	b.Run("sync16", func(b *testing.B) { floorSync(b, floorServer(b, serveFloor), 16) })
	b.Run("inflight1000", func(b *testing.B) { floorPipelined(b, floorServer(b, serveFloor), 1000) })
}

// floorSync runs b.N round trips from clients clients over connections
// of their own to addr, and reports them per second.
func floorSync(b *testing.B, addr string, clients int) {
	conns := make([]net.Conn, clients)
	for i := range conns {
		conns[i] = dialFloor(b, addr)
	}
	errs := make(chan error, clients)
	b.SetBytes(floorRequest)
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, c := range conns {
		n := int(Share(int64(b.N), clients, i))
		wg.Go(func() {
			req := make([]byte, floorRequest)
			answer := make([]byte, floorAnswer)
			for range n {
				if _, err := c.Write(req); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, answer); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trips/s")
}

// floorPipelined runs b.N round trips over one connection to addr,
// keeping inflight requests outstanding, and reports them per second.
func floorPipelined(b *testing.B, addr string, inflight int) {
	c := dialFloor(b, addr)
	credits := make(chan struct{}, inflight)
	for range inflight {
		credits <- struct{}{}
	}
	read := make(chan error, 1)
	b.SetBytes(floorRequest)
	b.ResetTimer()
	go func() {
		buf := make([]byte, 64<<10)
		have, got := 0, 0
		for got < b.N {
			n, err := c.Read(buf[have:])
			if err != nil {
				read <- err
				return
			}
			have += n
			k := have / floorAnswer
			for range k {
				credits <- struct{}{}
			}
			got += k
			copy(buf, buf[k*floorAnswer:have])
			have -= k * floorAnswer
		}
		read <- nil
	}()
	req := make([]byte, floorRequest)
	out := make([]byte, 0, 64<<10)
	for sent := 0; sent < b.N; {
		select {
		case <-credits:
		case err := <-read:
			b.Fatalf("reading answers: %v", err)
		}
		out = append(out[:0], req...)
		sent++
	more:
		for sent < b.N && len(out)+floorRequest <= cap(out) {
			select {
			case <-credits:
				out = append(out, req...)
				sent++
			default:
				break more
			}
		}
		if _, err := c.Write(out); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-read; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trips/s")
}
