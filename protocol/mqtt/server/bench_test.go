package server_test

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// benchConn is a lean MQTT 5 client for the benchmarks: buffered writes,
// acknowledgements flushed once the read buffer is drained.
type benchConn struct {
	nc  net.Conn
	r   *bufio.Reader
	dec *packet.Decoder
	wmu sync.Mutex
	w   *bufio.Writer
	buf []byte
}

func dialBench(b *testing.B, addr string, cp *packet.Connect) *benchConn {
	b.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	c := &benchConn{nc: nc, r: bufio.NewReaderSize(nc, 32<<10), w: bufio.NewWriterSize(nc, 32<<10)}
	c.dec = packet.NewDecoder(c.r)
	c.dec.Version = packet.Version5
	cp.Version = packet.Version5
	c.write(b, cp, true)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if p, err := c.dec.Read(); err != nil || p.(*packet.Connack).ReasonCode != 0 {
		b.Fatalf("CONNACK %v %v", p, err)
	}
	nc.SetReadDeadline(time.Time{})
	return c
}

func (c *benchConn) flush(b *testing.B) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.w.Flush(); err != nil {
		b.Error(err)
	}
}

func (c *benchConn) write(b *testing.B, p packet.Packet, flush bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var err error
	if c.buf, err = p.AppendTo(c.buf[:0], packet.Version5); err == nil {
		if _, err = c.w.Write(c.buf); err == nil && flush {
			err = c.w.Flush()
		}
	}
	if err != nil {
		b.Error(err)
	}
}

// BenchmarkP2P is the point-to-point shape of the load generator in
// process: 4 publishers, each to its own topic with a window of 16
// unacknowledged QoS 1 messages, each topic read by one subscriber; one
// op is one 256 B message delivered. "persistent" subscribers have a
// session that outlives the connection (expiry 1 h), so their offsets are
// engine state; "clean" ones do not. QoS 0 subscribers are never skipped
// ahead (MaxQoS0Lag is unbounded): the broker's lag rule would drop
// messages the subscribers wait for, so qos0 measures every message
// delivered, as the other cases do.
func BenchmarkP2P(b *testing.B) {
	for _, bc := range []struct {
		name    string
		qos     byte
		persist bool
	}{
		{"qos0", 0, false},
		{"qos1/clean", 1, false},
		{"qos1/persistent", 1, true},
		{"qos2/persistent", 2, true},
	} {
		b.Run(bc.name, func(b *testing.B) { benchP2P(b, bc.qos, bc.persist) })
	}
}

func benchP2P(b *testing.B, qos byte, persist bool) {
	const pairs, window = 4, 16
	br := startBroker(b, "", &server.Options{MaxQoS0Lag: math.MaxInt64})
	payload := make([]byte, 256)
	per := (b.N + pairs - 1) / pairs
	var subs sync.WaitGroup
	subs.Add(pairs)
	pubs := make([]*benchConn, pairs)
	for i := range pairs {
		topic := fmt.Sprintf("bench/p2p/%d", i)
		var expiry uint32
		if persist {
			expiry = 3600
		}
		s := dialBench(b, br.addr, v5connect(fmt.Sprint("sub", i), !persist, expiry))
		s.write(b, &packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: topic, QoS: qos}}}, true)
		if p, err := s.dec.Read(); err != nil || p.Type() != packet.SUBACK {
			b.Fatalf("SUBACK %v %v", p, err)
		}
		go func() {
			defer subs.Done()
			for n := 0; n < per; {
				p, err := s.dec.Read()
				if err != nil {
					b.Error(err)
					return
				}
				switch p := p.(type) {
				case *packet.Publish:
					n++
					switch p.QoS {
					case 1:
						s.write(b, &packet.Puback{PacketID: p.PacketID}, s.r.Buffered() == 0)
					case 2:
						s.write(b, &packet.Pubrec{PacketID: p.PacketID}, s.r.Buffered() == 0)
					}
				case *packet.Pubrel:
					s.write(b, &packet.Pubcomp{PacketID: p.PacketID}, s.r.Buffered() == 0)
				}
			}
		}()
		pubs[i] = dialBench(b, br.addr, v5connect(fmt.Sprint("pub", i), true, 0))
	}
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, c := range pubs {
		topic := fmt.Sprintf("bench/p2p/%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			benchPublish(b, c, topic, qos, payload, per, window)
		}()
	}
	wg.Wait()
	subs.Wait()
	if d := br.srv.Stats().DroppedQoS0; d != 0 {
		b.Fatalf("%d QoS 0 messages dropped", d)
	}
}

// benchPublish sends n messages keeping at most window unacknowledged
// (QoS 1 and 2; QoS 0 is not limited).
func benchPublish(b *testing.B, c *benchConn, topic string, qos byte, payload []byte, n, window int) {
	slots := make(chan struct{}, window)
	done := make(chan struct{})
	if qos > 0 {
		go func() {
			defer close(done)
			for got := 0; got < n; {
				p, err := c.dec.Read()
				if err != nil {
					b.Error(err)
					return
				}
				switch p := p.(type) {
				case *packet.Puback:
					got++
					<-slots
				case *packet.Pubrec:
					c.write(b, &packet.Pubrel{PacketID: p.PacketID}, false)
				case *packet.Pubcomp:
					got++
					<-slots
				}
				if c.r.Buffered() == 0 {
					// Before the read waits: a PUBREL written while a
					// PUBCOMP was still buffered must not stay behind.
					c.flush(b)
				}
			}
		}()
	} else {
		close(done)
	}
	pub := &packet.Publish{Topic: topic, QoS: qos, Payload: payload}
	for i := range n {
		if qos > 0 {
			select {
			case slots <- struct{}{}:
			case <-done:
				return
			}
			pub.PacketID = uint16(i%window) + 1
		}
		c.write(b, pub, qos > 0 || i%64 == 63 || i == n-1)
	}
	<-done
}
