package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/server/config"
	"github.com/karmanmq/karman/server/console"
	"github.com/karmanmq/karman/server/metrics"
)

// ErrStartCanceled is returned by Start when its context is done before
// the server is ready; Run treats it as a clean shutdown.
var ErrStartCanceled = errors.New("server: start canceled")

// State is the life-cycle state of a Server, as /healthz reports it.
type State int32

// Server states.
const (
	Starting State = iota
	Ready
	Stopping
)

func (s State) String() string {
	switch s {
	case Starting:
		return "starting"
	case Ready:
		return "ready"
	default:
		return "stopping"
	}
}

// Server is an engine with the HTTP endpoint and the modules of one set of
// Options. Start, Stop and the accessors are safe for concurrent use; Stop
// waits for a Start in progress (cancel Start's context to cut it short).
type Server struct {
	o     Options
	log   *slog.Logger
	mods  []Module // those that run, in start order
	ms    *metrics.Set
	state atomic.Int32

	mu  sync.RWMutex // guards eng against Close while metrics read it
	eng *engine.Engine

	life      sync.Mutex // held by Start and Stop
	startOnce sync.Once
	stopOnce  sync.Once
	startErr  error
	stopErr   error

	// Set by Start, read by Stop.
	addrs   map[string]net.Addr
	lns     map[string]net.Listener // bound, not yet handed over
	httpSrv *http.Server
	httpErr chan error
	started []Module
	// lag samples the groups' lag for the console while the engine is
	// open: stopLag ends it and waits.
	lag     *console.LagHistory
	stopLag func()
}

// info returns the ModuleInfo of m.
func info(m Module) ModuleInfo { return m.KarmanModule() }

// New checks o and returns a server ready to Start. The configuration is
// validated, modules whose listener is off are left out, the rest are put
// in dependency order (a required dependency that does not run is an
// error), then provisioned and validated, each in start order. No port is
// bound and no data is touched.
func New(o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("server: Options.Config is nil")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Announce == nil {
		o.Announce = io.Discard
	}
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	infos := make([]ModuleInfo, 0, len(o.Modules))
	byID := map[ModuleID]Module{}
	off := map[ModuleID]bool{}
	for _, m := range o.Modules {
		mi := info(m)
		if err := checkInfo(mi); err != nil {
			return nil, err
		}
		if _, dup := byID[mi.ID]; dup {
			return nil, fmt.Errorf("server: module %s given twice", mi.ID)
		}
		byID[mi.ID] = m
		infos = append(infos, mi)
		if mi.DefaultAddr != "" {
			if _, ok := o.Config.Addrs[mi.name()]; !ok {
				return nil, fmt.Errorf("server: module %s: no --%s-addr in the configuration (build Options with NewOptions)", mi.ID, mi.name())
			}
			if _, on := o.Config.Addr(mi.name()); !on {
				off[mi.ID] = true
			}
			if _, ok := m.(Starter); !ok {
				return nil, fmt.Errorf("server: module %s listens but has no Start method", mi.ID)
			}
		}
	}
	ordered, err := order(infos, off)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, log: o.Logger}
	s.ms = metrics.New(s.stats, o.Version, s.withEngine, flagValue(o, "broker-cluster", "DefaultCluster"), flagValue(o, "broker-name", "broker-a"))
	for _, mi := range ordered {
		m := byID[mi.ID]
		if p, ok := m.(Provisioner); ok {
			if err := p.Provision(ProvisionContext{Config: o.Config, Logger: s.moduleLogger(mi), Flag: flagLookup(o)}); err != nil {
				s.cleanup()
				return nil, fmt.Errorf("server: provision %s: %w", mi.ID, err)
			}
		}
		s.mods = append(s.mods, m)
		if v, ok := m.(Validator); ok {
			if err := v.Validate(); err != nil {
				s.cleanup()
				return nil, fmt.Errorf("server: %s: %w", mi.ID, err)
			}
		}
	}
	return s, nil
}

// cleanup calls Cleanup on every provisioned module, in reverse order.
func (s *Server) cleanup() error {
	var errs []error
	for i := len(s.mods) - 1; i >= 0; i-- {
		if c, ok := s.mods[i].(Cleaner); ok {
			if err := c.Cleanup(); err != nil {
				errs = append(errs, fmt.Errorf("server: clean up %s: %w", info(s.mods[i]).ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Server) moduleLogger(mi ModuleInfo) *slog.Logger {
	return s.log.With("module", mi.name())
}

// Run starts the server, serves until ctx is done, then shuts down
// gracefully within the configured shutdown timeout. It returns nil after
// a clean shutdown, or the error that stopped start-up or serving.
func Run(ctx context.Context, o Options) error {
	s, err := New(o)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// Run is Start, then waiting for ctx, then Stop within the configured
// shutdown timeout.
func (s *Server) Run(ctx context.Context) error {
	err := s.Start(ctx)
	if errors.Is(err, ErrStartCanceled) {
		s.log.Info("shutting down before ready", "cause", context.Cause(ctx))
		err = nil
	} else if err == nil {
		select {
		case <-ctx.Done():
			s.log.Info("shutting down", "cause", context.Cause(ctx))
		case err = <-s.httpErr:
			s.log.Error("http server failed", "err", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.Config.ShutdownTimeout)
	defer cancel()
	return errors.Join(err, s.Stop(sctx))
}

// Start binds every listener, serves the HTTP endpoint, opens the engine
// and starts the modules in order, returning once the server is ready or
// has failed. ctx is handed to the modules' Start: when it is done they
// wind down, but only Stop releases the server. After a failed Start, call
// Stop to release what was acquired. Start runs once; later calls return
// the first one's result.
func (s *Server) Start(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	s.startOnce.Do(func() { s.startErr = s.start(ctx) })
	return s.startErr
}

func (s *Server) start(ctx context.Context) error {
	s.httpErr = make(chan error, 1)
	lns, err := s.listen()
	if err != nil {
		return err
	}
	addrs := map[string]net.Addr{}
	for name, ln := range lns {
		addrs[name] = ln.Addr()
	}
	s.mu.Lock()
	s.addrs = addrs
	s.mu.Unlock()
	s.lns = lns

	if ln := lns[config.HTTP]; ln != nil {
		delete(lns, config.HTTP)
		s.lag = console.NewLagHistory(s.withEngine, s.o.LagInterval, 0)
		s.httpSrv = s.httpServer(s.ms)
		go func() {
			if err := s.httpSrv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				s.httpErr <- fmt.Errorf("server: http: %w", err)
			}
		}()
	}

	opts := s.o.Config.EngineOptions(s.log.With("component", "engine"))
	opts.AppendLatency = func(d time.Duration) { s.ms.AppendLatency.Observe(d.Seconds()) }
	opts.SendLatency = func(topic string, d time.Duration, err error) {
		metrics.ObserveSend(s.ms.SendCost, topic, float64(d.Nanoseconds())/1e6, err)
	}
	opts.MessageSize = func(topic string, n int) { s.ms.MessageSize.WithLabelValues(topic).Observe(float64(n)) }
	for _, m := range s.mods {
		if c, ok := m.(EngineConfigurer); ok {
			if err := c.ConfigureEngine(opts, maps.Clone(addrs)); err != nil {
				return fmt.Errorf("server: %s: %w", info(m).ID, err)
			}
		}
	}
	opts.Hooks = append(opts.Hooks, s.o.Hooks...)
	began := time.Now()
	eng, err := engine.Open(s.o.Config.Data, opts)
	if err != nil {
		return fmt.Errorf("server: open engine in %s: %w", s.o.Config.Data, err)
	}
	s.mu.Lock()
	s.eng = eng
	s.mu.Unlock()
	s.log.Info("engine open", "data", s.o.Config.Data, "flush", opts.Flush.String(), "took", time.Since(began).Round(time.Millisecond))
	if ctx.Err() != nil { // stopped while the engine was recovering
		return fmt.Errorf("%w: %w", ErrStartCanceled, context.Cause(ctx))
	}
	if s.lag != nil {
		lctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.lag.Run(lctx) }()
		s.stopLag = func() { cancel(); <-done }
	}

	engOpts := *opts.EnsureDefaults()
	var reporters []RuntimeInfoReporter
	for _, m := range s.mods {
		if r, ok := m.(RuntimeInfoReporter); ok {
			reporters = append(reporters, r)
		}
	}
	runtimeInfo := func() map[string]string {
		out := map[string]string{}
		for _, r := range reporters {
			maps.Copy(out, r.RuntimeInfo())
		}
		return out
	}
	for _, m := range s.mods {
		mi := info(m)
		ln := lns[mi.name()]
		delete(lns, mi.name())
		if st, ok := m.(Starter); ok {
			err := st.Start(ctx, Host{
				Engine:        eng,
				Listener:      ln,
				Logger:        s.moduleLogger(mi),
				Metrics:       s.ms.Registry,
				RPCLatency:    s.ms.RPCLatency,
				Addrs:         maps.Clone(addrs),
				EngineOptions: engOpts,
				RuntimeInfo:   runtimeInfo,
				Announce:      s.announce,
			})
			if err != nil {
				if ln != nil {
					ln.Close()
				}
				return fmt.Errorf("server: start %s: %w", mi.ID, err)
			}
		}
		s.started = append(s.started, m)
		if ln != nil {
			s.log.Info("module started", "module", mi.name(), "addr", ln.Addr().String())
		} else {
			s.log.Info("module started", "module", mi.name())
		}
	}

	s.state.Store(int32(Ready))
	s.log.Info("ready")
	fmt.Fprintln(s.o.Announce, "karman: ready")
	return nil
}

// Stop shuts the server down: health turns "stopping", the started
// modules stop in reverse order, the engine closes, the HTTP endpoint
// shuts down, each step bounded by ctx, and the modules clean up (see
// Cleaner). A server that was never started is stopped to clean up. It returns the errors of the
// steps; Stop runs once, later calls return the first one's result.
func (s *Server) Stop(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *Server) stop(ctx context.Context) error {
	s.startOnce.Do(func() { s.startErr = errors.New("server: stopped before Start") })
	s.state.Store(int32(Stopping))
	var errs []error
	for i := len(s.started) - 1; i >= 0; i-- {
		mi := info(s.started[i])
		st, ok := s.started[i].(Stopper)
		if !ok {
			continue
		}
		if err := st.Stop(ctx); err != nil {
			s.log.Error("module stop", "module", mi.name(), "err", err)
			errs = append(errs, fmt.Errorf("server: stop %s: %w", mi.ID, err))
			continue
		}
		s.log.Info("module stopped", "module", mi.name())
	}
	if s.stopLag != nil {
		s.stopLag()
	}
	s.mu.Lock()
	eng := s.eng
	s.eng = nil
	s.mu.Unlock()
	if eng != nil {
		if err := eng.Close(); err != nil {
			s.log.Error("engine close", "err", err)
			errs = append(errs, fmt.Errorf("server: close engine: %w", err))
		} else {
			s.log.Info("engine closed")
		}
	}
	if s.httpSrv != nil {
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			s.log.Warn("http shutdown", "err", err)
			s.httpSrv.Close()
		}
	}
	for _, ln := range s.lns { // those never handed over
		ln.Close()
	}
	if err := s.cleanup(); err != nil {
		s.log.Warn("module clean-up", "err", err)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// State returns the server's life-cycle state.
func (s *Server) State() State { return State(s.state.Load()) }

// Addr returns the bound address of the named listener ("http", or a
// module's Name such as "broker"), or nil when it is not bound.
func (s *Server) Addr(name string) net.Addr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.addrs[name]
}

// Engine returns the open engine, or nil before Start opened it and after
// Stop closed it.
func (s *Server) Engine() *engine.Engine {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.eng
}

// Modules returns the modules that run, in start order.
func (s *Server) Modules() []Module { return append([]Module(nil), s.mods...) }

// listen binds every enabled listener, HTTP first, and once all are
// bound announces each: an address that cannot be bound fails the start
// before anything is announced.
func (s *Server) listen() (map[string]net.Listener, error) {
	lns := map[string]net.Listener{}
	names := []string{config.HTTP}
	for _, m := range s.o.Modules {
		if mi := info(m); mi.DefaultAddr != "" {
			names = append(names, mi.name())
		}
	}
	var bound []string
	for _, name := range names {
		addr, on := s.o.Config.Addr(name)
		if !on {
			s.log.Info("listener disabled", "listener", name)
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("server: %s listener: %w", name, err)
		}
		lns[name] = ln
		bound = append(bound, name)
	}
	for _, name := range bound {
		s.announce(name, lns[name].Addr())
	}
	return lns, nil
}

// announce logs a bound listener and prints it on Options.Announce.
func (s *Server) announce(name string, addr net.Addr) {
	s.log.Info("listening", "listener", name, "addr", addr.String())
	fmt.Fprintf(s.o.Announce, "karman: %s listening on %s\n", name, addr)
}

// stats feeds the metrics collector; it holds the read lock so Close
// waits for a scrape in progress.
// withEngine calls visit with the engine while the server is ready, and
// reports whether it did; the engine cannot close before visit returns.
func (s *Server) withEngine(visit func(*engine.Engine)) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.eng == nil || s.State() != Ready {
		return false
	}
	visit(s.eng)
	return true
}

// flagValue returns the value of the flag name when some module declares
// it, else def: how the server learns the broker's cluster and name for
// the labels of RocketMQ's metrics.
func flagValue(o Options, name, def string) string {
	if o.Flags != nil {
		if f := o.Flags.Lookup(name); f != nil && f.Value.String() != "" {
			return f.Value.String()
		}
	}
	return def
}

// flagLookup returns the value of a flag of any module, for
// ProvisionContext.Flag.
func flagLookup(o Options) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if o.Flags == nil {
			return "", false
		}
		f := o.Flags.Lookup(name)
		if f == nil {
			return "", false
		}
		return f.Value.String(), true
	}
}

func (s *Server) stats() (engine.Stats, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.eng == nil || s.State() != Ready {
		return engine.Stats{}, false
	}
	return s.eng.Stats(), true
}
