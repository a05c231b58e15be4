package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
	"github.com/karmanmq/karman/protocol/mqtt/route"
)

// Errors of the server.
var (
	ErrClosed = errors.New("mqtt: server closed")
)

// Options configure a Server. The zero value works.
type Options struct {
	// Logger receives the server's logs. Default discards them.
	Logger *slog.Logger
	// MaxPacketSize bounds the packets a client may send (the MQTT 5
	// Maximum Packet Size of the CONNACK). Default the engine's largest
	// message plus 64 KiB.
	MaxPacketSize int
	// ReceiveMaximum is how many QoS 2 publishes a client may have
	// awaiting PUBREL. Default 256.
	ReceiveMaximum int
	// MaxInflight bounds the QoS 1 and 2 messages sent to a session and
	// not acknowledged, below the client's Receive Maximum. Default 128.
	MaxInflight int
	// MaxQoS0Lag is how far (in messages) a QoS 0 subscription may fall
	// behind its queue before the messages in between are dropped and
	// counted (Stats.DroppedQoS0). Default 10,000.
	MaxQoS0Lag int64
	// TopicAliasMaximum is the number of topic aliases a client may use.
	// Default 64.
	TopicAliasMaximum int
	// MaxKeepAlive, when set, caps the keep alive of clients (MQTT 5
	// Server Keep Alive). Default none.
	MaxKeepAlive time.Duration
	// MaxConnections bounds the open connections; more are refused with
	// Server Busy (MQTT 5) or Server Unavailable. Default 100,000.
	MaxConnections int
	// ConnectTimeout is how long a new connection has to send CONNECT.
	// Default 10 s.
	ConnectTimeout time.Duration
	// WriteTimeout is how long a write to a client may block before the
	// connection is closed. Default 30 s.
	WriteTimeout time.Duration
	// SysInterval is how often $SYS/broker/... statistics are
	// published; default 10 s.
	SysInterval time.Duration
	// MaxPacketMemory bounds the bytes of packets larger than a
	// connection's read buffer held across all connections, from their
	// reading until they are handled; a connection whose packet does not
	// fit waits, unread, until there is room. Default 256 MiB, and at
	// least MaxPacketSize.
	MaxPacketMemory int64
	// SharedStallTimeout is how long a member of a shared subscription
	// may leave a QoS 1 message unacknowledged before it is handed to
	// another member. Default 30 s.
	SharedStallTimeout time.Duration
	// OffsetCommitInterval is how long the offset of a persistent
	// session's subscription may stay unwritten after it moved (a QoS 0
	// batch or a QoS 1 acknowledgement): a crash sends the messages of
	// that while again. QoS 2 state is written at once. Default 100 ms.
	OffsetCommitInterval time.Duration
}

func (o *Options) defaults(e *engine.Engine) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxPacketSize <= 0 {
		o.MaxPacketSize = e.Options().MaxMessageSize + 64<<10
	}
	if o.ReceiveMaximum <= 0 {
		o.ReceiveMaximum = 256
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = 128
	}
	if o.MaxQoS0Lag <= 0 {
		o.MaxQoS0Lag = 10_000
	}
	if o.TopicAliasMaximum <= 0 {
		o.TopicAliasMaximum = 64
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = 100_000
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.SysInterval <= 0 {
		o.SysInterval = 10 * time.Second
	}
	if o.MaxPacketMemory < int64(o.MaxPacketSize) {
		o.MaxPacketMemory = max(256<<20, int64(o.MaxPacketSize))
	}
	if o.SharedStallTimeout <= 0 {
		o.SharedStallTimeout = 30 * time.Second
	}
	if o.OffsetCommitInterval <= 0 {
		o.OffsetCommitInterval = 100 * time.Millisecond
	}
}

// Stats are the server's counters.
type Stats struct {
	Connections     int64 // open, after CONNACK
	Sessions        int64 // held, connected or not
	MessagesIn      int64 // PUBLISH received and stored
	MessagesOut     int64 // PUBLISH sent
	DroppedQoS0     int64 // QoS 0 messages skipped for subscribers too slow to take them
	Retained        int64
	Subscriptions   int64
	BytesIn         int64
	RefusedConnects int64
	PacketMemory    int64 // bytes of large packets held (MaxPacketMemory)
}

// Server is an MQTT 3.1.1 and 5.0 server on an engine.
type Server struct {
	e      *engine.Engine
	router *route.Router
	st     *engine.State
	opts   Options
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*session
	lns      map[net.Listener]struct{}
	conns    map[*conn]struct{}
	shared   map[string]*sharedGroup
	closed   bool

	retained *retainStore
	mem      *budget // bytes of large packets being read or handled

	nConns                                         atomic.Int64
	msgsIn, msgsOut, droppedQoS0, bytesIn, refused atomic.Int64
	started                                        time.Time
}

// New returns a server on e. The engine must have been opened with
// router as its Options.Router, so that messages reach subscriptions.
// New loads the sessions, retained messages and wills of the last run,
// publishing the wills of connections the last run did not end.
func New(e *engine.Engine, router *route.Router, opts *Options) (*Server, error) {
	if router == nil {
		return nil, errors.New("mqtt: New needs the engine's route.Router")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.defaults(e)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		e: e, router: router, st: e.State(route.Namespace), opts: o, log: o.Logger,
		ctx: ctx, cancel: cancel,
		sessions: map[string]*session{}, lns: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{},
		shared: map[string]*sharedGroup{}, started: time.Now(),
	}
	s.retained = &retainStore{s: s, msgs: map[string]*mapping.Message{}}
	s.mem = &budget{free: o.MaxPacketMemory}
	if err := s.retained.load(); err != nil {
		cancel()
		return nil, err
	}
	if err := s.loadSessions(); err != nil {
		cancel()
		return nil, err
	}
	if err := router.Sweep(); err != nil {
		cancel()
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	if err := s.publishOrphanWills(); err != nil {
		cancel()
		return nil, err
	}
	s.wg.Add(2)
	go s.sysLoop()
	go s.stallLoop()
	s.watchAuth()
	return s, nil
}

// Serve accepts connections on ln until it fails or the server closes.
// It returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
	}()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay) // back off on EMFILE and the like, as net/http does
				continue
			}
			return err
		}
		delay = 0
		s.ServeConn(c)
	}
}

// ServeConn serves one connection (TCP, TLS or a WebSocket's stream) on
// a goroutine of its own and returns at once.
func (s *Server) ServeConn(nc net.Conn) {
	c := newConn(s, nc)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go c.serve() // c.end undoes the above
}

// Close stops accepting, disconnects every client (MQTT 5: DISCONNECT
// Server Shutting Down) and waits for the connections to end. Their
// connections end without DISCONNECT, so their wills are due: those
// without a delay, or of sessions that end with the connection, are
// published before Close returns; delayed ones stay stored and the next
// start publishes them once what is left of their delay has passed.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	for ln := range s.lns {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.cancel()
	for _, c := range conns {
		c.shutdown()
	}
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		ss.mu.Lock()
		for _, t := range []*time.Timer{ss.willTimer, ss.expireTimer} {
			if t != nil {
				t.Stop() // the next start schedules them again
			}
		}
		ss.mu.Unlock()
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		if err := ss.commitOffsets(); err != nil {
			s.log.Warn("mqtt: commit offsets", "client", ss.id, "err", err)
		}
	}
	s.wg.Wait()
	return nil
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	sessions, subs := int64(len(s.sessions)), int64(0)
	for _, ss := range s.sessions {
		ss.mu.Lock()
		subs += int64(len(ss.subs))
		ss.mu.Unlock()
	}
	s.mu.Unlock()
	return Stats{
		Connections: s.nConns.Load(), Sessions: sessions, Subscriptions: subs,
		MessagesIn: s.msgsIn.Load(), MessagesOut: s.msgsOut.Load(), DroppedQoS0: s.droppedQoS0.Load(),
		Retained: int64(s.retained.count()), BytesIn: s.bytesIn.Load(), RefusedConnects: s.refused.Load(),
		PacketMemory: s.opts.MaxPacketMemory - s.mem.available(),
	}
}

// budget is a count of bytes that waiters take and give back.
type budget struct {
	mu   sync.Mutex
	free int64
	wait chan struct{} // closed when bytes come back; nil while nobody waits
}

// acquire takes n bytes, waiting for them until ctx ends.
func (b *budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		if b.wait == nil {
			b.wait = make(chan struct{})
		}
		ch := b.wait
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *budget) available() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	if b.wait != nil {
		close(b.wait)
		b.wait = nil
	}
	b.mu.Unlock()
}
