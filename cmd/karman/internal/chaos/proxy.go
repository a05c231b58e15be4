package chaos

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBadProxyFault is a delay or loss a Proxy cannot apply.
var ErrBadProxyFault = errors.New("chaos: bad proxy fault")

// Proxy is a user-space TCP relay for delay and loss where the kernel
// has no netem: it accepts connections on its own address and relays
// each to Target, both directions. With a delay D every chunk read is
// written D after it was read (a delay line: throughput is kept, each
// byte arrives late). TCP cannot lose bytes, so loss is what a lossy
// path does to a TCP stream: with probability Loss per chunk, that
// direction stalls for StallFor (as a retransmission after a lost
// segment would) or, one time in four, the connection is reset.
//
// Faults are set and cleared at run time (SetFault); connections
// already open take them up at their next chunk.
type Proxy struct {
	ln     net.Listener
	target string
	// StallFor is how long a stall holds a direction (200 ms).
	StallFor time.Duration

	delay  atomic.Int64  // nanoseconds
	loss   atomic.Uint64 // math.Float64bits of the probability
	stalls atomic.Int64
	resets atomic.Int64
	links  atomic.Int64

	quit   chan struct{} // closed by Close: delay lines stop waiting
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// proxyChunk is the most a relay reads at once.
const proxyChunk = 32 << 10

// proxyQueue is how many chunks a direction holds in its delay line
// before it stops reading: TCP backpressure past it.
const proxyQueue = 256

// NewProxy listens on listen (host:port; port 0 picks one) and relays
// every connection to target.
func NewProxy(listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy: %w", err)
	}
	p := &Proxy{ln: ln, target: target, StallFor: 200 * time.Millisecond, conns: map[net.Conn]struct{}{}, quit: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetFault sets the delay of every chunk and the probability of a
// stall or reset per chunk; zeros clear the fault.
func (p *Proxy) SetFault(delay time.Duration, loss float64) error {
	if delay < 0 || !(loss >= 0 && loss <= 1) {
		return fmt.Errorf("%w: delay %s, loss %v: want a delay of 0 or more and a loss in [0, 1]", ErrBadProxyFault, delay, loss)
	}
	p.delay.Store(int64(delay))
	p.loss.Store(floatBits(loss))
	return nil
}

// Counts returns the connections the proxy relayed to its target and
// the stalls and resets it injected.
func (p *Proxy) Counts() (links, stalls, resets int64) {
	return p.links.Load(), p.stalls.Load(), p.resets.Load()
}

// Close stops accepting, closes every relayed connection and waits for
// the relays to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		close(p.quit)
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// track adds c to the open connections; false when the proxy is closed
// (c is closed then).
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.relay(c)
		}()
	}
}

// relay joins c to a new connection to the target until either side
// ends or a reset is injected.
func (p *Proxy) relay(c net.Conn) {
	defer c.Close()
	t, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return // the client sees its connection closed, as a refused one
	}
	if !p.track(t) {
		return
	}
	defer p.untrack(t)
	defer t.Close()
	p.links.Add(1)
	var once sync.Once
	reset := func() {
		once.Do(func() {
			p.resets.Add(1)
			for _, x := range []net.Conn{c, t} {
				if tc, ok := x.(*net.TCPConn); ok {
					tc.SetLinger(0) // an RST, not a FIN
				}
				x.Close()
			}
		})
	}
	ended := make(chan struct{})
	var endOnce sync.Once
	closeBoth := func() {
		endOnce.Do(func() { close(ended) })
		c.Close()
		t.Close()
	}
	done := make(chan struct{}, 2)
	go func() { p.pipe(t, c, reset, closeBoth, ended); done <- struct{}{} }()
	go func() { p.pipe(c, t, reset, closeBoth, ended); done <- struct{}{} }()
	<-done
	<-done
}

// chunk is bytes read and when.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst through the delay line, injecting the faults.
// When either end fails or src ends, it closes both (closeBoth): a
// replication link is over once one direction is.
// A wait in the delay line ends early when ended is closed.
func (p *Proxy) pipe(dst, src net.Conn, reset, closeBoth func(), ended <-chan struct{}) {
	q := make(chan chunk, proxyQueue)
	go func() {
		defer close(q)
		for {
			b := make([]byte, proxyChunk)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		closeBoth()
		for range q { // the reader ends: src is closed
		}
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	wait := func(d time.Duration) bool {
		if d <= 0 {
			return true
		}
		timer.Reset(d)
		select {
		case <-timer.C:
			return true
		case <-ended:
			timer.Stop()
			return false
		case <-p.quit:
			timer.Stop()
			return false
		}
	}
	for ch := range q {
		if !wait(time.Until(ch.at.Add(time.Duration(p.delay.Load())))) {
			return
		}
		if loss := bitsFloat(p.loss.Load()); loss > 0 && rand.Float64() < loss {
			if rand.IntN(4) == 0 {
				reset()
				return
			}
			p.stalls.Add(1)
			if !wait(p.StallFor) {
				return
			}
		}
		if _, err := dst.Write(ch.b); err != nil {
			return
		}
	}
}

func floatBits(f float64) uint64 { return math.Float64bits(f) }
func bitsFloat(b uint64) float64 { return math.Float64frombits(b) }
