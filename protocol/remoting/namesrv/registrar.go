package namesrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Defaults of RegistrarOptions.
const (
	DefaultCluster            = "DefaultCluster"
	DefaultRegisterInterval   = 30 * time.Second
	DefaultRegisterTimeout    = 10 * time.Second
	DefaultRegisterMinBackoff = time.Second
)

// ErrRegistrarClosed is returned by RegisterAll after Close.
var ErrRegistrarClosed = errors.New("namesrv: registrar closed")

// ResponseError is a name server's answer other than SUCCESS.
type ResponseError struct {
	NameServer string
	Request    wire.RequestCode
	Code       wire.ResponseCode
	Remark     string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("namesrv: %s to %s answered %s: %s", e.Request, e.NameServer, e.Code, e.Remark)
}

// RegistrarOptions configure a Registrar.
type RegistrarOptions struct {
	// NameServers are the "ip:port" addresses to register with. Required.
	NameServers []string
	// Cluster is the broker's cluster name. Default DefaultCluster.
	Cluster string
	// BrokerName names the broker group. Required.
	BrokerName string
	// BrokerID is 0 for a master, > 0 for a replica.
	BrokerID int64
	// Role, when set, is asked before each registration for the broker
	// id and the state version (a controlled broker's master epoch) in
	// place of BrokerID: a broker whose role changes at run time
	// registers as what it is now (call Trigger on a change).
	Role func() (brokerID, stateVersion int64)
	// BrokerAddr is the remoting address clients dial, "ip:port" with an
	// IPv4 address (the Go client cannot parse IPv6 routes). Required.
	BrokerAddr string
	// HAAddr is the address replicas replicate from. Optional.
	HAAddr string
	// Topics returns the broker's complete current topic set. It is
	// called for every registration, from the Registrar's goroutines.
	// Required.
	Topics func() []TopicConfig
	// Interval between registrations. Default DefaultRegisterInterval
	// (30 s, as Java brokers).
	Interval time.Duration
	// Timeout bounds one registration request, dial included. Default
	// DefaultRegisterTimeout (10 s).
	Timeout time.Duration
	// MinBackoff is the first retry delay after a failed registration;
	// it doubles up to MaxBackoff (default Interval). Default
	// DefaultRegisterMinBackoff (1 s).
	MinBackoff, MaxBackoff time.Duration
	// BrokerTimeout, when > 0, is sent as heartbeatTimeoutMillis: how long
	// the name servers keep the broker without hearing from it (their
	// default is 120 s).
	BrokerTimeout time.Duration
	// Compressed sends the deflate form of the body (which carries no
	// topicSysFlag or order) instead of JSON.
	Compressed bool
	// EnableActingMaster lets this replica stand in for a missing master.
	EnableActingMaster bool
	// Peer configures the connections (TLS, dial timeout, frame limit).
	Peer peer.Options
	// Logger receives registration failures and recoveries. Default
	// discards.
	Logger *slog.Logger
	// OnRegister, when set, is called after every registration attempt
	// with the name server's answer (a replica learns its master from
	// it). It runs on the registering goroutine and must not block long.
	OnRegister func(nameServer string, res RegisterResult, err error)
}

func (o *RegistrarOptions) ensureDefaults() error {
	if len(o.NameServers) == 0 {
		return errors.New("namesrv: registrar: no name server address")
	}
	for _, a := range o.NameServers {
		if a == "" {
			return errors.New("namesrv: registrar: empty name server address")
		}
	}
	switch {
	case o.BrokerName == "":
		return errors.New("namesrv: registrar: no broker name")
	case o.BrokerAddr == "":
		return errors.New("namesrv: registrar: no broker address")
	case o.BrokerID < 0:
		return fmt.Errorf("namesrv: registrar: negative broker id %d", o.BrokerID)
	case o.Topics == nil:
		return errors.New("namesrv: registrar: no Topics function")
	}
	if o.Cluster == "" {
		o.Cluster = DefaultCluster
	}
	if o.Interval <= 0 {
		o.Interval = DefaultRegisterInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultRegisterTimeout
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultRegisterMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = o.Interval
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Registrar keeps a broker registered with its name servers: it sends
// REGISTER_BROKER to each of them every Interval and whenever Trigger is
// called, over one connection per name server that it re-dials after a
// failure, retrying with exponential backoff. See the package comment.
type Registrar struct {
	opts RegistrarOptions
	ns   []*nameServer

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	version DataVersion
	started bool
	closed  bool
}

// nameServer is the Registrar's state for one name server.
type nameServer struct {
	addr    string
	trigger chan struct{} // capacity 1: a registration is due

	mu     sync.Mutex // serializes requests; guards p and failed
	p      *peer.Peer
	failed bool // the last attempt failed (for logging transitions)
}

// NewRegistrar checks opts and returns a Registrar that does nothing
// until Start.
func NewRegistrar(opts RegistrarOptions) (*Registrar, error) {
	if err := opts.ensureDefaults(); err != nil {
		return nil, err
	}
	r := &Registrar{opts: opts}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.version = DataVersion{Timestamp: time.Now().UnixMilli()}
	for _, a := range opts.NameServers {
		r.ns = append(r.ns, &nameServer{addr: a, trigger: make(chan struct{}, 1)})
	}
	return r, nil
}

// Start registers with every name server at once and then keeps
// registering in the background until Close. Calling it again does
// nothing.
func (r *Registrar) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	for _, n := range r.ns {
		r.wg.Add(1)
		go r.run(n)
	}
}

// Trigger asks for a registration now, because the topic set changed. It
// never blocks; triggers that arrive while a registration is due are
// coalesced, and a name server in backoff is retried on its schedule.
func (r *Registrar) Trigger() {
	r.mu.Lock()
	r.version.Counter++
	r.version.Timestamp = time.Now().UnixMilli()
	r.mu.Unlock()
	for _, n := range r.ns {
		select {
		case n.trigger <- struct{}{}:
		default:
		}
	}
}

// RegisterAll registers with every name server once, concurrently, and
// returns their errors joined (nil when all succeeded).
func (r *Registrar) RegisterAll(ctx context.Context) error {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrRegistrarClosed
	}
	req, err := r.request()
	if err != nil {
		return err
	}
	errs := make([]error, len(r.ns))
	var wg sync.WaitGroup
	for i, n := range r.ns {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
			defer cancel()
			_, errs[i] = r.register(ctx, n, req)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close stops registering, sends UNREGISTER_BROKER over the connections
// that are up (bounded by ctx) and closes them. The name servers forget
// the broker at once; without Close they drop it after BrokerTimeout.
func (r *Registrar) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()

	errs := make([]error, len(r.ns))
	var wg sync.WaitGroup
	for i, n := range r.ns {
		wg.Go(func() { errs[i] = r.unregister(ctx, n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// run keeps one name server registered.
func (r *Registrar) run(n *nameServer) {
	defer r.wg.Done()
	var backoff time.Duration
	for {
		// This registration sends the current topics: it satisfies every
		// trigger so far.
		select {
		case <-n.trigger:
		default:
		}
		req, err := r.request()
		if err == nil {
			ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
			_, err = r.register(ctx, n, req)
			cancel()
		}
		if r.ctx.Err() != nil {
			return
		}
		wait, trigger := r.opts.Interval, n.trigger
		if err != nil {
			backoff = min(max(2*backoff, r.opts.MinBackoff), r.opts.MaxBackoff)
			wait, trigger = backoff, nil
		} else {
			backoff = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-trigger:
			t.Stop()
		case <-t.C:
		}
	}
}

// request builds a REGISTER_BROKER request from the current topics.
func (r *Registrar) request() (*wire.Command, error) {
	topics := r.opts.Topics()
	body := RegisterBrokerBody{Topics: make([]TopicConfig, len(topics)), FilterServerList: []string{}}
	copy(body.Topics, topics)
	sortTopics(body.Topics)
	r.mu.Lock()
	body.DataVersion = r.version
	r.mu.Unlock()
	id := r.opts.BrokerID
	if r.opts.Role != nil {
		id, body.DataVersion.StateVersion = r.opts.Role()
	}
	b, err := body.Encode(r.opts.Compressed)
	if err != nil {
		return nil, err
	}
	req := wire.NewRequest(wire.RegisterBroker, nil)
	req.EncodeHeader(&wire.RegisterBrokerRequestHeader{
		BrokerName:             r.opts.BrokerName,
		BrokerAddr:             r.opts.BrokerAddr,
		ClusterName:            r.opts.Cluster,
		HAServerAddr:           r.opts.HAAddr,
		BrokerID:               id,
		HeartbeatTimeoutMillis: r.opts.BrokerTimeout.Milliseconds(),
		EnableActingMaster:     r.opts.EnableActingMaster,
		Compressed:             r.opts.Compressed,
		BodyCRC32:              BodyCRC32(b),
	})
	req.SetExt(ExtCompleteTopics, "true")
	req.Body = b
	return req, nil
}

// connect returns n's connection, dialing when there is none. Called with
// n.mu held.
func (r *Registrar) connect(ctx context.Context, n *nameServer) (*peer.Peer, error) {
	if n.p != nil {
		select {
		case <-n.p.Done():
			n.p.Close()
			n.p = nil
		default:
			return n.p, nil
		}
	}
	p, err := peer.Dial(ctx, n.addr, r.opts.Peer)
	if err != nil {
		return nil, err
	}
	n.p = p
	return p, nil
}

// register sends req to n and reports the outcome.
func (r *Registrar) register(ctx context.Context, n *nameServer, req *wire.Command) (res RegisterResult, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer func() {
		switch {
		case err != nil && r.ctx.Err() == nil:
			r.opts.Logger.Warn("broker registration failed", "namesrv", n.addr, "err", err)
		case err == nil && n.failed:
			r.opts.Logger.Info("broker registered again", "namesrv", n.addr)
		}
		n.failed = err != nil
		if r.opts.OnRegister != nil {
			r.opts.OnRegister(n.addr, res, err)
		}
	}()
	p, err := r.connect(ctx, n)
	if err != nil {
		return res, fmt.Errorf("namesrv: register with %s: %w", n.addr, err)
	}
	resp, err := p.Invoke(ctx, req)
	if err != nil {
		// The connection may be wedged; dial afresh next time.
		p.Close()
		n.p = nil
		return res, fmt.Errorf("namesrv: register with %s: %w", n.addr, err)
	}
	if resp.ResponseCode() != wire.Success {
		return res, &ResponseError{NameServer: n.addr, Request: wire.RegisterBroker, Code: resp.ResponseCode(), Remark: resp.Remark}
	}
	var h wire.RegisterBrokerResponseHeader
	if err := resp.DecodeHeader(&h); err != nil {
		return res, fmt.Errorf("namesrv: register with %s: %w", n.addr, err)
	}
	return RegisterResult{MasterAddr: h.MasterAddr, MasterHAAddr: h.HAServerAddr}, nil
}

// unregister sends UNREGISTER_BROKER over n's connection, if it is up,
// and closes it.
func (r *Registrar) unregister(ctx context.Context, n *nameServer) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.p
	n.p = nil
	if p == nil {
		return nil
	}
	defer p.Close()
	select {
	case <-p.Done():
		return nil
	default:
	}
	id := r.opts.BrokerID
	if r.opts.Role != nil {
		id, _ = r.opts.Role()
	}
	req := wire.NewRequest(wire.UnregisterBroker, nil)
	req.EncodeHeader(&wire.UnregisterBrokerRequestHeader{
		BrokerName:  r.opts.BrokerName,
		BrokerAddr:  r.opts.BrokerAddr,
		ClusterName: r.opts.Cluster,
		BrokerID:    id,
	})
	resp, err := p.Invoke(ctx, req)
	if err != nil {
		return fmt.Errorf("namesrv: unregister from %s: %w", n.addr, err)
	}
	if resp.ResponseCode() != wire.Success {
		return &ResponseError{NameServer: n.addr, Request: wire.UnregisterBroker, Code: resp.ResponseCode(), Remark: resp.Remark}
	}
	return nil
}
