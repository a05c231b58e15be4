package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Kind groups request codes that share a concurrency limit, so a flood of
// one kind (say, sends) cannot starve another (say, heartbeats).
type Kind int

// Request kinds.
const (
	KindDefault Kind = iota // admin, queries
	KindSend                // SEND_MESSAGE and friends
	KindPull                // PULL_MESSAGE (mostly waiting, so a high limit)
	KindConsume             // heartbeats, offsets, locks, send-back
	KindNamesrv             // name-server requests
	numKinds
)

var kindNames = [...]string{"default", "send", "pull", "consume", "namesrv"}

func (k Kind) String() string { return kindNames[k] }

// Handler serves one request. It returns the response (built with
// wire.NewResponse) or nil to answer nothing. ctx ends when the connection
// or the server closes.
type Handler interface {
	ServeRemoting(ctx context.Context, c *Conn, req *wire.Command) *wire.Command
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, c *Conn, req *wire.Command) *wire.Command

// ServeRemoting calls f.
func (f HandlerFunc) ServeRemoting(ctx context.Context, c *Conn, req *wire.Command) *wire.Command {
	return f(ctx, c, req)
}

type route struct {
	kind   Kind
	h      Handler
	inline bool
}

// Mux routes requests by code. Register every handler before serving.
type Mux struct{ routes map[wire.RequestCode]route }

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{routes: map[wire.RequestCode]route{}} }

// Handle registers h for code, limited as kind. Each request runs on a
// goroutine of its own.
func (m *Mux) Handle(code wire.RequestCode, kind Kind, h Handler) {
	m.routes[code.Canonical()] = route{kind: kind, h: h}
}

// HandleFunc registers f for code.
func (m *Mux) HandleFunc(code wire.RequestCode, kind Kind, f HandlerFunc) { m.Handle(code, kind, f) }

// HandleInline registers h for code, limited as kind, to run on the
// goroutine that reads the connection: the request costs no goroutine,
// and the responses of requests that arrived together leave in one
// write. Nothing else is read from the connection while h runs, so h
// must call Detach before anything that may wait: the disk, a long poll,
// a lock, a request to the client. The requests h gets may carry their
// extFields undecoded: h reads them with DecodeHeader, or calls
// LoadExtFields before it uses ExtFields. Unless it detached, h must not
// keep the request, its Body or anything aliasing them once it returns:
// the connection reuses their memory for the next request.
func (m *Mux) HandleInline(code wire.RequestCode, kind Kind, h Handler) {
	m.routes[code.Canonical()] = route{kind: kind, h: h, inline: true}
}

// HandleInlineFunc registers f for code like HandleInline.
func (m *Mux) HandleInlineFunc(code wire.RequestCode, kind Kind, f HandlerFunc) {
	m.HandleInline(code, kind, f)
}

// Detach lets a handler registered with HandleInline wait: the
// connection goes on reading on another goroutine, and the handler's
// response is written when it returns. ctx is the context the handler
// was given. It does nothing in other handlers or when called again.
func Detach(ctx context.Context) { peer.Detach(ctx) }

// Options configure a Server. The zero value works.
type Options struct {
	// Logger receives connection events. Default discards.
	Logger *slog.Logger
	// IdleTimeout closes a connection that sends nothing for that long.
	// Default 120s, as RocketMQ clients' own idle limit.
	IdleTimeout time.Duration
	// MaxFrameSize bounds incoming frames. Default wire.DefaultMaxFrameSize.
	MaxFrameSize int
	// MaxInflightBytes bounds the memory of the requests read and not yet
	// handled, across all connections: a frame takes its length from this
	// budget once its length prefix is read, before its memory is
	// allocated, and gives it back once its request is handled. A
	// connection that finds the budget spent is not read until there is
	// room again (TCP slows the client down); it is closed only when it
	// has sent no whole request for IdleTimeout. Frames above
	// peer.SmallFrame leave an eighth of the budget to smaller ones. At
	// least MaxFrameSize (a smaller value is raised to it). Default
	// DefaultMaxInflightBytes (256 MiB); negative means no bound.
	MaxInflightBytes int64
	// Workers bounds the requests of each kind served at once. Defaults:
	// send 256, pull 65536, consume 256, namesrv 64, default 64.
	Workers map[Kind]int
	// MaxQueued bounds the requests of each kind waiting for a worker;
	// beyond it requests get SYSTEM_BUSY. Default 10000.
	MaxQueued int
	// Busy, when set, is asked before each request of a kind; true answers
	// SYSTEM_BUSY (flow control when the engine falls behind).
	Busy func(Kind) bool
	// OnClose is called once when a connection closes.
	OnClose func(*Conn)
	// Latency, when set, is called after each routed request with its
	// code, its answer's code (NoResponse when it got none) and the time
	// from its routing to its answer, waits for a worker and long polls
	// included. It runs on the request's goroutine: keep it cheap.
	Latency func(request wire.RequestCode, response wire.ResponseCode, d time.Duration)
}

// NoResponse is the response code Options.Latency sees for a request that
// got no answer (a oneway request, a connection gone).
const NoResponse wire.ResponseCode = -1

// DefaultMaxInflightBytes is the default of Options.MaxInflightBytes.
const DefaultMaxInflightBytes = 256 << 20

var defaultWorkers = [numKinds]int{KindDefault: 64, KindSend: 256, KindPull: 65536, KindConsume: 256, KindNamesrv: 64}

func (o *Options) ensureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 120 * time.Second
	}
	if o.MaxQueued == 0 {
		o.MaxQueued = 10000
	}
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if o.MaxInflightBytes == 0 {
		o.MaxInflightBytes = DefaultMaxInflightBytes
	}
}

// limit is a counting semaphore with a bounded wait queue.
type limit struct {
	slots  chan struct{}
	queued atomic.Int64
}

// Server serves remoting connections.
type Server struct {
	mux    *Mux
	opts   Options
	limits [numKinds]*limit
	budget *peer.Budget // nil without a bound

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*Conn]struct{}
	nextID    atomic.Uint64
	wg        sync.WaitGroup
	closed    bool
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("server: closed")

// New returns a Server routing with mux.
func New(mux *Mux, opts Options) *Server {
	opts.ensureDefaults()
	s := &Server{mux: mux, opts: opts, listeners: map[net.Listener]struct{}{}, conns: map[*Conn]struct{}{}}
	for k := range numKinds {
		n := defaultWorkers[k]
		if v, ok := opts.Workers[k]; ok && v > 0 {
			n = v
		}
		s.limits[k] = &limit{slots: make(chan struct{}, n)}
	}
	if opts.MaxInflightBytes > 0 {
		s.budget = peer.NewBudget(opts.MaxInflightBytes, opts.MaxFrameSize)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Budget returns the budget of requests in flight (Options.MaxInflightBytes),
// or nil when there is no bound.
func (s *Server) Budget() *peer.Budget { return s.budget }

// Serve accepts connections on ln until Shutdown. It always returns a
// non-nil error: ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return ErrServerClosed
			}
			if retryAccept(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				if backoff == time.Second || backoff == 5*time.Millisecond {
					s.opts.Logger.Warn("remoting: accepting a connection failed; retrying", "err", err, "after", backoff)
				}
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		backoff = 0
		s.accept(nc)
	}
}

// retryAccept reports whether an accept error passes: a timeout, a
// connection that went away before it was accepted, or a lack of file
// descriptors or memory, which closing connections frees. Listening on
// is what keeps the broker reachable once they are back.
func retryAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

func (s *Server) accept(nc net.Conn) {
	c := &Conn{srv: s, id: s.nextID.Add(1), addr: nc.RemoteAddr().String(), ready: make(chan struct{})}
	if ap, err := netip.ParseAddrPort(c.addr); err == nil {
		c.ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	c.touch()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.wg.Add(1)
	c.p = peer.New(nc, peer.Options{Handler: c, Inline: true, DeferExtFields: true, MaxFrameSize: s.opts.MaxFrameSize, Budget: s.budget, Logger: s.opts.Logger, RequestTimeout: 3 * time.Second})
	close(c.ready)
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	go s.watch(c)
}

// idleChecks is how many times per IdleTimeout the watcher looks for
// requests: a connection is closed after between IdleTimeout and
// IdleTimeout plus one check interval without one.
const idleChecks = 8

// watch closes c when it goes idle and cleans up once it is closed.
func (s *Server) watch(c *Conn) {
	defer s.wg.Done()
	t := time.NewTicker(max(s.opts.IdleTimeout/idleChecks, time.Millisecond))
	defer t.Stop()
	lastSeen := time.Now() // when the watcher last found c active
	for {
		select {
		case <-c.p.Done():
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.p.Close()
			if s.opts.OnClose != nil {
				s.opts.OnClose(c)
			}
			return
		case now := <-t.C:
			if c.active.Swap(false) {
				lastSeen = now
				continue
			}
			if idle := now.Sub(lastSeen); idle >= s.opts.IdleTimeout {
				s.opts.Logger.Info("closing idle remoting connection", "addr", c.addr, "idle", idle)
				c.p.Close()
			}
		}
	}
}

// serve routes one request of c. It runs on the goroutine that reads the
// connection, and detaches from it unless the route is inline and a
// worker slot of its kind is free.
func (s *Server) serve(ctx context.Context, c *Conn, req *wire.Command) *wire.Command {
	c.touch()
	code := req.RequestCode().Canonical()
	r, ok := s.mux.routes[code]
	if !ok {
		return wire.NewResponse(req, wire.RequestCodeNotSupported, fmt.Sprintf("request code %d is not supported", req.Code))
	}
	if s.opts.Latency == nil {
		return s.serveRoute(ctx, c, req, r)
	}
	start := time.Now()
	resp := s.serveRoute(ctx, c, req, r)
	rc := NoResponse
	if resp != nil {
		rc = resp.ResponseCode()
	}
	s.opts.Latency(code, rc, time.Since(start))
	return resp
}

// serveRoute serves req by its route r.
func (s *Server) serveRoute(ctx context.Context, c *Conn, req *wire.Command, r route) *wire.Command {
	if !r.inline {
		peer.Detach(ctx)
		req.LoadExtFields()
	}
	if s.opts.Busy != nil && s.opts.Busy(r.kind) {
		return wire.NewResponse(req, wire.SystemBusy, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while")
	}
	l := s.limits[r.kind]
	select {
	case l.slots <- struct{}{}:
	default:
		peer.Detach(ctx)
		if l.queued.Add(1) > int64(s.opts.MaxQueued) {
			l.queued.Add(-1)
			return wire.NewResponse(req, wire.SystemBusy, fmt.Sprintf("[TIMEOUT_CLEAN_QUEUE]broker busy: too many %s requests waiting", r.kind))
		}
		select {
		case l.slots <- struct{}{}:
			l.queued.Add(-1)
		case <-ctx.Done():
			l.queued.Add(-1)
			return nil
		case <-s.ctx.Done():
			// The context of a oneway request outlives its connection,
			// not the server.
			l.queued.Add(-1)
			return nil
		}
	}
	defer func() { <-l.slots }()
	return r.h.ServeRemoting(ctx, c, req)
}

// Conns returns the open connections.
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Shutdown stops accepting, closes every connection (cancelling the
// requests in progress) and waits for them, or for ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	for ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		go c.p.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Conn is one client connection.
type Conn struct {
	srv    *Server
	p      *peer.Peer    // set before ready is closed
	ready  chan struct{} // closed once p is set
	id     uint64
	addr   string
	ap     netip.AddrPort // addr parsed, unmapped; zero when it does not parse
	active atomic.Bool    // a request came since the idle watcher last looked

	mu    sync.Mutex
	attrs map[string]any
}

// HandleRequest implements peer.Handler.
func (c *Conn) HandleRequest(ctx context.Context, req *wire.Command) *wire.Command {
	<-c.ready // the peer can deliver a request before accept has stored it
	return c.srv.serve(ctx, c, req)
}

// touch marks c active for the idle watcher. It writes only when the
// watcher has cleared the mark, so that requests mostly just read it.
func (c *Conn) touch() {
	if !c.active.Load() {
		c.active.Store(true)
	}
}

// ID returns a number unique to the connection within the server.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr returns the client's address, "ip:port".
func (c *Conn) RemoteAddr() string { return c.addr }

// AddrPort returns the client's address, an IPv4-mapped one unmapped, or
// the zero AddrPort when RemoteAddr does not parse as one.
func (c *Conn) AddrPort() netip.AddrPort { return c.ap }

// Invoke sends a request to the client and waits for its answer.
func (c *Conn) Invoke(ctx context.Context, req *wire.Command) (*wire.Command, error) {
	resp, err := c.p.Invoke(ctx, req)
	if resp != nil {
		resp.LoadExtFields()
	}
	return resp, err
}

// InvokeOneway sends a request to the client and expects no answer.
func (c *Conn) InvokeOneway(ctx context.Context, req *wire.Command) error {
	return c.p.InvokeOneway(ctx, req)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.p.Close() }

// Done is closed when the connection closes.
func (c *Conn) Done() <-chan struct{} { return c.p.Done() }

// Set stores a value on the connection (for example the client id it
// heartbeats with).
func (c *Conn) Set(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.attrs == nil {
		c.attrs = map[string]any{}
	}
	c.attrs[key] = v
}

// Get returns a value stored with Set.
func (c *Conn) Get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.attrs[key]
	return v, ok
}
