package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
)

// Defaults of Options.
const (
	DefaultWindowSize           = 1 << 20
	DefaultConnWindowSize       = 4 << 20
	DefaultMaxRecvMsgSize       = 4 << 20
	DefaultMaxConcurrentStreams = 1000
	DefaultWorkers              = 64
	DefaultMaxHeaderListSize    = 64 << 10
	DefaultHandshakeTimeout     = 10 * time.Second
	DefaultRecvBudget           = 256 << 20
	DefaultStallTimeout         = time.Minute
)

// minWindowSize is HTTP/2's initial window, the smallest a server may
// announce without stalling clients that send before reading SETTINGS.
const minWindowSize = 65535

// Options configure a Server. The zero value works.
type Options struct {
	// Codec encodes and decodes messages. Default: gRPC's proto codec.
	Codec encoding.CodecV2
	// RetainMessages gives each received message memory of its own that
	// the transport never reuses, so that what Codec decodes may point
	// into it (as protocol buffers' unsafe decoding does) and stay valid
	// for as long as the decoded message lives. Default false: the
	// memory is reused once the message is decoded.
	RetainMessages bool
	// UnaryInterceptor and StreamInterceptor wrap every unary call and
	// every streaming call, as grpc.UnaryInterceptor and
	// grpc.StreamInterceptor do. Default: none.
	UnaryInterceptor  grpc.UnaryServerInterceptor
	StreamInterceptor grpc.StreamServerInterceptor
	// WindowSize and ConnWindowSize are the flow-control windows given to
	// each call and to each connection for what clients send. Default
	// DefaultWindowSize and DefaultConnWindowSize; at least 65,535.
	WindowSize, ConnWindowSize int32
	// MaxRecvMsgSize is the largest message accepted; a larger one ends
	// its call with RESOURCE_EXHAUSTED. Default DefaultMaxRecvMsgSize.
	MaxRecvMsgSize int
	// MaxConcurrentStreams is how many calls a client may have open on
	// one connection. Default DefaultMaxConcurrentStreams.
	MaxConcurrentStreams uint32
	// Inline names the unary calls that run on the goroutine reading
	// their connection rather than on a worker: calls that do not wait
	// (or call Detach first), whose answers then leave with those of the
	// calls that arrived with them, in one write. Default: none.
	Inline func(fullMethod string) bool
	// Workers is how many goroutines are kept to run calls; they keep
	// their grown stacks from call to call. A call that finds them all
	// busy gets a goroutine of its own. Default DefaultWorkers; negative:
	// a goroutine per call.
	Workers int
	// MaxHeaderListSize bounds the headers of one call. Default
	// DefaultMaxHeaderListSize.
	MaxHeaderListSize uint32
	// TLSConfig, when set, serves over TLS the connections that open with
	// a TLS handshake, on the same listener as those in plaintext (as
	// RocketMQ's proxy does: its clients use TLS by default). It must
	// offer "h2" by ALPN. Default nil: plaintext only.
	TLSConfig *tls.Config
	// HandshakeTimeout bounds how long a new connection may take to send
	// the HTTP/2 preface (and finish its TLS handshake). Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// RecvBudget bounds the bytes of received messages that all
	// connections hold together, assembling them or waiting for their
	// handlers: beyond it a connection's window is credited only as its
	// handlers consume what they were sent (see the package
	// documentation). Default DefaultRecvBudget.
	RecvBudget int64
	// StallTimeout is how long a client may leave what the server sends
	// untaken: a call that waits that long for the client's flow-control
	// window is reset (its send fails with UNAVAILABLE), and a connection
	// whose socket takes nothing for that long is closed. Default
	// DefaultStallTimeout.
	StallTimeout time.Duration
	// Logger receives connection errors at debug level and handler
	// panics at error level. Default: discarded.
	Logger *slog.Logger
}

func (o *Options) ensureDefaults() {
	if o.Codec == nil {
		o.Codec = encoding.GetCodecV2(proto.Name)
	}
	if o.WindowSize == 0 {
		o.WindowSize = DefaultWindowSize
	}
	if o.ConnWindowSize == 0 {
		o.ConnWindowSize = DefaultConnWindowSize
	}
	o.WindowSize = max(o.WindowSize, minWindowSize)
	o.ConnWindowSize = max(o.ConnWindowSize, minWindowSize)
	if o.MaxRecvMsgSize <= 0 {
		o.MaxRecvMsgSize = DefaultMaxRecvMsgSize
	}
	if o.MaxConcurrentStreams == 0 {
		o.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxHeaderListSize == 0 {
		o.MaxHeaderListSize = DefaultMaxHeaderListSize
	}
	if o.RecvBudget <= 0 {
		o.RecvBudget = DefaultRecvBudget
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// ErrServerStopped is returned by Serve once Stop or GracefulStop was
// called.
var ErrServerStopped = errors.New("transport: server stopped")

// method is one registered call.
type method struct {
	name   string // "/package.Service/Method"
	inline bool   // Options.Inline
	impl   any
	unary  *grpc.MethodDesc
	stream *grpc.StreamDesc
}

// Server serves registered gRPC services.
type Server struct {
	opts    Options
	methods map[string]*method
	work    chan func()
	budget  recvBudget

	mu          sync.Mutex
	listeners   map[net.Listener]struct{}
	conns       map[*conn]struct{}
	stopped     bool
	connsDone   *sync.Cond // broadcast when a connection ends
	workersUp   sync.Once
	workersDown sync.Once
}

// NewServer returns a server with no services.
func NewServer(opts Options) *Server {
	opts.ensureDefaults()
	s := &Server{
		opts:      opts,
		methods:   make(map[string]*method),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
	}
	s.connsDone = sync.NewCond(&s.mu)
	s.budget.limit = opts.RecvBudget
	return s
}

var _ grpc.ServiceRegistrar = (*Server)(nil)

// RegisterService registers a service and its implementation; it must
// be called before Serve. It panics if impl does not implement the
// service, as grpc.Server does.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	if desc.HandlerType != nil {
		if err := implements(impl, desc.HandlerType); err != nil {
			panic(fmt.Sprintf("transport: RegisterService(%s): %v", desc.ServiceName, err))
		}
	}
	for i := range desc.Methods {
		m := &desc.Methods[i]
		name := "/" + desc.ServiceName + "/" + m.MethodName
		s.methods[name] = &method{name: name, impl: impl, unary: m, inline: s.opts.Inline != nil && s.opts.Inline(name)}
	}
	for i := range desc.Streams {
		d := &desc.Streams[i]
		name := "/" + desc.ServiceName + "/" + d.StreamName
		s.methods[name] = &method{name: name, impl: impl, stream: d}
	}
}

// Serve accepts connections on l and serves them until l fails or the
// server stops; it then returns ErrServerStopped, or the accept error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		l.Close()
		return ErrServerStopped
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	s.workersUp.Do(s.startWorkers)

	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			stopped := s.stopped
			delete(s.listeners, l)
			s.mu.Unlock()
			if stopped {
				return ErrServerStopped
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				s.mu.Lock()
				s.listeners[l] = struct{}{}
				s.mu.Unlock()
				continue
			}
			return err
		}
		delay = 0
		c := newConn(s, nc)
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go c.serve()
	}
}

// connEnded forgets a connection once it is closed.
func (s *Server) connEnded(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.connsDone.Broadcast()
	s.mu.Unlock()
}

// stopAccepting closes the listeners and marks the server stopped; it
// returns the connections open at that moment.
func (s *Server) stopAccepting() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for l := range s.listeners {
		l.Close()
	}
	s.listeners = make(map[net.Listener]struct{})
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Stop closes the listeners and every connection at once, failing the
// calls in progress, and waits until the connections are closed.
func (s *Server) Stop() {
	for _, c := range s.stopAccepting() {
		c.close()
	}
	s.waitConns()
}

// GracefulStop closes the listeners, tells every client to open no new
// call (GOAWAY), and waits until the calls in progress have ended and
// their connections closed.
func (s *Server) GracefulStop() {
	for _, c := range s.stopAccepting() {
		c.goAway()
	}
	s.waitConns()
}

// waitConns waits until every connection is closed, then lets the idle
// workers go: no reader is left to give them calls.
func (s *Server) waitConns() {
	s.mu.Lock()
	for len(s.conns) > 0 {
		s.connsDone.Wait()
	}
	s.mu.Unlock()
	s.workersUp.Do(func() {}) // a server that never served starts none
	s.workersDown.Do(func() {
		if s.work != nil {
			close(s.work)
		}
	})
}

// startWorkers starts the goroutines that run calls.
func (s *Server) startWorkers() {
	if s.opts.Workers < 0 {
		return
	}
	s.work = make(chan func())
	for range s.opts.Workers {
		go func() {
			for f := range s.work {
				f()
			}
		}()
	}
}

// run runs f on an idle worker, or on a new goroutine when none is idle.
func (s *Server) run(f func()) {
	if s.work != nil {
		select {
		case s.work <- f:
			return
		default:
		}
	}
	go f()
}
