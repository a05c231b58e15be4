package remoting

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/auth"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Defaults of Options.
const (
	DefaultProducerGroup = "karman_bench_producer"
	DefaultConsumerGroup = "karman_bench_consumer"
	DefaultQueues        = 8
)

// goClientVersion is the version the RocketMQ Go client puts into every
// header.
const goClientVersion = 317

// retryPause is how long a producer or puller waits before repeating a
// request the broker answered with SYSTEM_BUSY or flow control.
const retryPause = time.Millisecond

// Options configure a Generator.
type Options struct {
	// NameServer is the "host:port" of the name server. Required.
	NameServer string
	// Connections is the number of connections per broker that the
	// producers (or pullers) of a phase share; 0, the default, gives each
	// producer and each puller its own.
	Connections int
	// ProducerGroup and ConsumerGroup name the groups used. Defaults
	// DefaultProducerGroup and DefaultConsumerGroup.
	ProducerGroup string
	ConsumerGroup string
	// Queues is the queue count of topics the generator creates. Default
	// DefaultQueues.
	Queues int32
	// RequestTimeout bounds every request. Default 30 s.
	RequestTimeout time.Duration
	// AccessKey and SecretKey, when AccessKey is set, sign every request
	// as RocketMQ's ACL client hook does (for a server with
	// authentication on): each send and pull is signed anew, as the Go
	// client signs it.
	AccessKey, SecretKey string
}

// Generator drives a Karman (or any RocketMQ) cluster through the
// remoting protocol. It implements bench.Generator.
type Generator struct {
	o    Options
	ns   *peer.Peer
	sign func(*wire.Command) // nil without credentials; one goroutine at a time
}

// signer returns a signing function of its own (a sender or puller's),
// nil without credentials.
func (g *Generator) signer() func(*wire.Command) {
	if g.o.AccessKey == "" {
		return nil
	}
	return auth.NewSigner(g.o.AccessKey, g.o.SecretKey).Sign
}

// New connects to the name server.
func New(ctx context.Context, o Options) (*Generator, error) {
	if o.NameServer == "" {
		return nil, errors.New("remoting: no name server address")
	}
	if o.Connections < 0 {
		return nil, fmt.Errorf("remoting: connections %d: want 0 (one each) or more", o.Connections)
	}
	if o.ProducerGroup == "" {
		o.ProducerGroup = DefaultProducerGroup
	}
	if o.ConsumerGroup == "" {
		o.ConsumerGroup = DefaultConsumerGroup
	}
	if o.Queues <= 0 {
		o.Queues = DefaultQueues
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	g := &Generator{o: o}
	if o.AccessKey != "" {
		var mu sync.Mutex
		s := auth.NewSigner(o.AccessKey, o.SecretKey)
		g.sign = func(c *wire.Command) { mu.Lock(); s.Sign(c); mu.Unlock() }
	}
	var err error
	if g.ns, err = g.dial(ctx, o.NameServer); err != nil {
		return nil, err
	}
	return g, nil
}

// Close closes the connection to the name server.
func (g *Generator) Close() error { return g.ns.Close() }

// signed signs c when the generator has credentials, and returns it.
func (g *Generator) signed(c *wire.Command) *wire.Command {
	if g.sign != nil {
		g.sign(c)
	}
	return c
}

func (g *Generator) dial(ctx context.Context, addr string) (*peer.Peer, error) {
	p, err := peer.Dial(ctx, addr, peer.Options{RequestTimeout: g.o.RequestTimeout, DeferExtFields: true})
	if err != nil {
		return nil, fmt.Errorf("remoting: %w", err)
	}
	return p, nil
}

// newRequest builds a request the way the Go client does: JSON header,
// language GO, version 317.
func newRequest(code wire.RequestCode, h wire.Header) *wire.Command {
	c := wire.NewRequest(code, make(map[string]string, 16))
	c.Version = goClientVersion
	h.EncodeFields(c.ExtFields)
	return c
}

// conns holds the connections of one phase: per broker address, either
// one per worker or a shared few.
type conns struct {
	byAddr map[string][]*peer.Peer
}

// connect dials n connections to every address in addrs.
func (g *Generator) connect(ctx context.Context, addrs []string, n int) (*conns, error) {
	cs := &conns{byAddr: map[string][]*peer.Peer{}}
	for _, a := range addrs {
		if _, ok := cs.byAddr[a]; ok {
			continue
		}
		for range n {
			p, err := g.dial(ctx, a)
			if err != nil {
				cs.close()
				return nil, err
			}
			cs.byAddr[a] = append(cs.byAddr[a], p)
		}
	}
	return cs, nil
}

// connsFor returns the connection count per broker for workers goroutines.
func (g *Generator) connsFor(workers int) int {
	if g.o.Connections > 0 {
		return min(g.o.Connections, workers)
	}
	return workers
}

// get returns the connection worker i uses to reach addr.
func (cs *conns) get(addr string, i int) *peer.Peer {
	ps := cs.byAddr[addr]
	return ps[i%len(ps)]
}

func (cs *conns) close() {
	var wg sync.WaitGroup
	for _, ps := range cs.byAddr {
		for _, p := range ps {
			wg.Go(func() { p.Close() })
		}
	}
	wg.Wait()
}

func addrsOf(qs []Queue) []string {
	var out []string
	seen := map[string]bool{}
	for _, q := range qs {
		if !seen[q.Addr] {
			seen[q.Addr] = true
			out = append(out, q.Addr)
		}
	}
	return out
}

// group runs goroutines and keeps the first error, cancelling the
// context of the others.
type group struct {
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelCauseFunc
	once   sync.Once
	err    error
}

func newGroup(ctx context.Context) *group {
	g := &group{}
	g.ctx, g.cancel = context.WithCancelCause(ctx)
	return g
}

func (g *group) Go(f func(ctx context.Context) error) {
	g.wg.Go(func() {
		if err := f(g.ctx); err != nil {
			g.once.Do(func() {
				g.err = err
				g.cancel(err)
			})
		}
	})
}

func (g *group) Wait() error {
	g.wg.Wait()
	g.cancel(nil)
	return g.err
}
