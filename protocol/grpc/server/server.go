package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
)

// Protocol is the name the server registers its clients under in the
// engine's client registry.
const Protocol = "grpc"

// DefaultBrokerName is the broker name routes carry when Options give none.
const DefaultBrokerName = "broker-a"

// Defaults of the transport Options.
const (
	DefaultStreamWorkers  = 64
	DefaultWindowSize     = 1 << 20
	DefaultConnWindowSize = 4 << 20
)

// Options configure a Server. The zero value works, except that Endpoint
// must be set for routes to be dialable.
type Options struct {
	// Endpoint is the "host:port" clients dial to reach this server, put
	// into every route and assignment.
	Endpoint string
	// BrokerName names this server in routes. Default DefaultBrokerName.
	BrokerName string
	// MaxBodySize is the largest message body accepted, told to producers
	// in their settings. Default 4 MiB.
	MaxBodySize int
	// AutoCreateTopics creates an unknown topic when a client asks for its
	// route, as the engine creates one on its first send (set it to the
	// engine's Options.AutoCreateTopics). Default false: TOPIC_NOT_FOUND.
	AutoCreateTopics bool
	// AutoCreateGroups creates an unknown consumer group when a consumer
	// declares it in its settings (set it to the engine's
	// Options.AutoCreateGroups). Default false: CONSUMER_GROUP_NOT_FOUND.
	AutoCreateGroups bool
	// DefaultQueues is the queue count of topics created for routes.
	// Default engine.DefaultQueueCount.
	DefaultQueues int32
	// ClientExpiry is how long a client may stay silent (no request, no
	// telemetry message) before the server forgets it: its session, its
	// telemetry stream and its registry membership. Default
	// registry.DefaultExpiry.
	ClientExpiry time.Duration
	// TerminationGrace is how long the telemetry stream of a client that
	// said it terminates (NotifyClientTermination) stays open for the
	// client to end it (see Telemetry). Default DefaultTerminationGrace.
	TerminationGrace time.Duration
	// Consume tunes message consumption (invisible durations, long
	// polling, receipt renewal); see ConsumeOptions for the defaults.
	Consume ConsumeOptions
	// StreamWorkers is the number of goroutines kept to run calls, which
	// keep their grown stacks from call to call; a call that finds every
	// worker busy runs on a goroutine of its own. Streams that stay open
	// (every client's telemetry stream, long polls) hold their worker.
	// Idle workers take calls in turn and lose their stacks to the
	// garbage collector when they wait too long, so more is not better.
	// Default DefaultStreamWorkers; negative: none, a goroutine per call.
	StreamWorkers int
	// WindowSize and ConnWindowSize are the HTTP/2 flow-control windows
	// of each call and of each connection for what clients send. Fixed
	// windows spare each request the ping gRPC otherwise sends to
	// estimate the bandwidth. Default DefaultWindowSize and
	// DefaultConnWindowSize; below 64 KiB they are 64 KiB.
	WindowSize, ConnWindowSize int32
	// Groups, when set, returns the broker groups besides this one that
	// serve a topic (as the name servers route it), which QueryRoute and
	// QueryAssignment answer beside this server's own. It is called for
	// each of those requests and should answer from a cache.
	Groups func(ctx context.Context, topic string) []GroupRoute
	// Logger receives the server's log records. Default: discarded.
	Logger *slog.Logger
	// Latency, when set, is called after each unary call with its method
	// (SendMessage), the code of its answer's status (OK, BAD_REQUEST,
	// ...; the gRPC status code when it has none) and its duration. The
	// calls that answer one request with a stream (ReceiveMessage,
	// PullMessage) are observed once each, until their last response, with
	// the code of the first status they send; Telemetry, a session, is
	// not. It runs on the call's goroutine: keep it cheap.
	Latency func(method, code string, d time.Duration)
}

func (o *Options) ensureDefaults() {
	if o.BrokerName == "" {
		o.BrokerName = DefaultBrokerName
	}
	if o.MaxBodySize <= 0 {
		o.MaxBodySize = 4 << 20
	}
	if o.DefaultQueues <= 0 {
		o.DefaultQueues = engine.DefaultQueueCount
	}
	if o.ClientExpiry <= 0 {
		o.ClientExpiry = registry.DefaultExpiry
	}
	if o.TerminationGrace <= 0 {
		o.TerminationGrace = DefaultTerminationGrace
	}
	if o.StreamWorkers == 0 {
		o.StreamWorkers = DefaultStreamWorkers
	}
	if o.WindowSize == 0 {
		o.WindowSize = DefaultWindowSize
	}
	if o.ConnWindowSize == 0 {
		o.ConnWindowSize = DefaultConnWindowSize
	}
	o.WindowSize = max(o.WindowSize, minWindowSize)
	o.ConnWindowSize = max(o.ConnWindowSize, minWindowSize)
	o.Consume.ensureDefaults()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Server is the MessagingService of one engine.
type Server struct {
	rmqpb.UnimplementedMessagingServiceServer

	eng      *engine.Engine
	hooks    *hook.Set // eng.Hooks()
	hooked   bool      // the engine has hooks: calls carry a hook.Client
	opts     Options
	endpoint *rmqpb.Endpoints
	sessions *session.Table
	leases   leaseTable // receipts renewed for clients (renew.go)
	startups startups   // settings answers of starting clients (startup.go)
	log      *slog.Logger

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started atomic.Bool
}

// New returns a server for eng.
func New(eng *engine.Engine, opts Options) (*Server, error) {
	opts.ensureDefaults()
	ep, err := endpointOf(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	hooks := &hook.Set{}
	if eng != nil {
		hooks = eng.Hooks()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		hooks:    hooks,
		hooked:   !hooks.Empty(),
		eng:      eng,
		opts:     opts,
		endpoint: ep,
		sessions: session.NewTable(),
		log:      opts.Logger,
		ctx:      ctx,
		cancel:   cancel,
	}, nil
}

// endpointOf parses "host:port" into the Endpoints routes carry.
func endpointOf(hostport string) (*rmqpb.Endpoints, error) {
	if hostport == "" {
		return &rmqpb.Endpoints{Scheme: rmqpb.AddressScheme_IPv4}, nil
	}
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("grpc server: endpoint %q: %w", hostport, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("grpc server: endpoint %q: bad port", hostport)
	}
	scheme := rmqpb.AddressScheme_DOMAIN_NAME
	if ip := net.ParseIP(host); ip != nil {
		scheme = rmqpb.AddressScheme_IPv4
		if ip.To4() == nil {
			scheme = rmqpb.AddressScheme_IPv6
		}
	}
	return &rmqpb.Endpoints{Scheme: scheme, Addresses: []*rmqpb.Address{{Host: host, Port: int32(port)}}}, nil
}

// minWindowSize is HTTP/2's default window, the smallest gRPC takes.
const minWindowSize = 64 << 10

// NewTransport returns the server to serve the service with: a
// transport.Server with this service registered and TransportOptions,
// serving TLS with tc to clients that open with TLS (nil: plaintext
// only). Serve it on a listener; stop it before calling Close.
func (s *Server) NewTransport(tc *tls.Config) *transport.Server {
	o := s.TransportOptions()
	o.TLSConfig = tc
	t := transport.NewServer(o)
	s.Register(t)
	return t
}

// TransportOptions returns the transport.Options the service needs: the
// interceptors that tie each call to its client session, the codec that
// sends messages encoded straight from stored records (codec.go), and
// the settings of Options (workers, windows, the largest request).
func (s *Server) TransportOptions() transport.Options {
	return transport.Options{
		Codec:             newAliasingCodec(),
		RetainMessages:    true,
		UnaryInterceptor:  s.unaryInterceptor,
		StreamInterceptor: s.streamInterceptor,
		WindowSize:        s.opts.WindowSize,
		ConnWindowSize:    s.opts.ConnWindowSize,
		MaxRecvMsgSize:    s.maxRequestSize(),
		Inline:            inlineCall,
		Workers:           s.opts.StreamWorkers,
		Logger:            s.log,
	}
}

// inlineCall names the calls that run on their connection's reader:
// the frequent ones that do not wait, or detach first (SendMessage).
func inlineCall(fullMethod string) bool {
	switch fullMethod {
	case rmqpb.MessagingService_SendMessage_FullMethodName,
		rmqpb.MessagingService_AckMessage_FullMethodName,
		rmqpb.MessagingService_ChangeInvisibleDuration_FullMethodName:
		return true
	}
	return false
}

// maxRequestSize is the largest request accepted: a body of MaxBodySize
// with room for its properties, so that a larger body is answered with
// MESSAGE_BODY_TOO_LARGE rather than cut off by the transport.
func (s *Server) maxRequestSize() int { return s.opts.MaxBodySize + 1<<20 }

// Register adds the service to g, a transport.Server built with
// TransportOptions (NewTransport does both).
func (s *Server) Register(g grpc.ServiceRegistrar) {
	rmqpb.RegisterMessagingServiceServer(g, s)
}

// Start begins the server's background work.
func (s *Server) Start() error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("grpc server: started twice")
	}
	s.eng.SetTransactionChecker(Protocol, s.checkTransaction)
	s.startBackground()
	return nil
}

// Close stops the background work. It does not stop the transport.
func (s *Server) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// goBackground runs fn until the server closes.
func (s *Server) goBackground(fn func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(s.ctx)
	}()
}
