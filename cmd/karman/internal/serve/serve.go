package serve

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

	"github.com/karmanmq/karman/cmd/karman/internal/config"
	"github.com/karmanmq/karman/cmd/karman/internal/frontend"
	"github.com/karmanmq/karman/cmd/karman/internal/metrics"
	"github.com/karmanmq/karman/engine"
)

// Options configure Run.
type Options struct {
	Config    *config.Config
	Frontends []frontend.Frontend
	// Version labels karman_build_info.
	Version string
	// Logger receives the server's log records.
	Logger *slog.Logger
	// Announce receives one line per bound listener and a "karman: ready"
	// line, for scripts and tests that wait for the server.
	Announce io.Writer
}

// Server states, as /healthz reports them.
const (
	starting int32 = iota
	ready
	stopping
)

// server is one run of Run.
type server struct {
	o     Options
	log   *slog.Logger
	state atomic.Int32

	mu  sync.RWMutex // guards eng against Close while metrics read it
	eng *engine.Engine
}

// Run serves until ctx is done, then shuts down gracefully. It returns nil
// after a clean shutdown, or the error that stopped start-up or serving.
func Run(ctx context.Context, o Options) (err error) {
	if err := o.Config.Validate(); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Announce == nil {
		o.Announce = io.Discard
	}
	s := &server{o: o, log: o.Logger}
	ms := metrics.New(s.stats, o.Version)

	// Every shutdown step shares one deadline, set when shutdown begins.
	var (
		shutOnce   sync.Once
		shutCtx    context.Context
		shutCancel context.CancelFunc = func() {}
	)
	shutdown := func() context.Context {
		shutOnce.Do(func() {
			shutCtx, shutCancel = context.WithTimeout(context.WithoutCancel(ctx), o.Config.ShutdownTimeout)
		})
		return shutCtx
	}
	defer func() { shutCancel() }()

	lns, err := s.listen()
	if err != nil {
		return err
	}
	addrs := map[string]net.Addr{}
	for name, ln := range lns {
		addrs[name] = ln.Addr()
	}
	defer func() {
		for _, ln := range lns { // those not handed over
			ln.Close()
		}
	}()

	httpErr := make(chan error, 1)
	if ln := lns[config.HTTP]; ln != nil {
		delete(lns, config.HTTP)
		srv := s.httpServer(ms)
		go func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				httpErr <- fmt.Errorf("serve: http: %w", err)
			}
		}()
		defer func() {
			if err := srv.Shutdown(shutdown()); err != nil {
				s.log.Warn("http shutdown", "err", err)
				srv.Close()
			}
		}()
	}

	opts := o.Config.EngineOptions(s.log.With("component", "engine"))
	opts.AppendLatency = func(d time.Duration) { ms.AppendLatency.Observe(d.Seconds()) }
	for _, f := range o.Frontends {
		if ln := lns[f.Name]; ln != nil && f.ConfigureEngine != nil {
			if err := f.ConfigureEngine(opts, ln.Addr(), o.Config.Frontends[f.Name]); err != nil {
				return fmt.Errorf("serve: %s: %w", f.Name, err)
			}
		}
	}
	began := time.Now()
	eng, err := engine.Open(o.Config.Data, opts)
	if err != nil {
		return fmt.Errorf("serve: open engine in %s: %w", o.Config.Data, err)
	}
	s.mu.Lock()
	s.eng = eng
	s.mu.Unlock()
	s.log.Info("engine open", "data", o.Config.Data, "flush", opts.Flush.String(), "took", time.Since(began).Round(time.Millisecond))
	defer func() {
		s.mu.Lock()
		s.eng = nil
		s.mu.Unlock()
		if cerr := eng.Close(); cerr != nil {
			s.log.Error("engine close", "err", cerr)
			err = errors.Join(err, fmt.Errorf("serve: close engine: %w", cerr))
			return
		}
		s.log.Info("engine closed")
	}()
	if ctx.Err() != nil { // stopped while the engine was recovering
		s.log.Info("shutting down before ready", "cause", context.Cause(ctx))
		return nil
	}

	stops, err := s.startFrontends(ctx, eng, *opts.EnsureDefaults(), ms, lns, addrs)
	defer func() {
		s.state.Store(stopping)
		for i := len(stops) - 1; i >= 0; i-- {
			if serr := stops[i].stop(shutdown()); serr != nil {
				s.log.Error("front-end stop", "frontend", stops[i].name, "err", serr)
				err = errors.Join(err, fmt.Errorf("serve: stop %s: %w", stops[i].name, serr))
				continue
			}
			s.log.Info("front-end stopped", "frontend", stops[i].name)
		}
	}()
	if err != nil {
		return err
	}

	s.state.Store(ready)
	s.log.Info("ready")
	fmt.Fprintln(o.Announce, "karman: ready")

	select {
	case <-ctx.Done():
		s.log.Info("shutting down", "cause", context.Cause(ctx))
		return nil
	case err := <-httpErr:
		s.log.Error("http server failed", "err", err)
		return err
	}
}

// listen binds every enabled listener, HTTP first, and once all are
// bound announces each: an address that cannot be bound fails the start
// before anything is announced.
func (s *server) listen() (map[string]net.Listener, error) {
	lns := map[string]net.Listener{}
	names := []string{config.HTTP}
	for _, f := range s.o.Frontends {
		names = append(names, f.Name)
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
			return nil, fmt.Errorf("serve: %s listener: %w", name, err)
		}
		lns[name] = ln
		bound = append(bound, name)
	}
	for _, name := range bound {
		addr := lns[name].Addr()
		s.log.Info("listening", "listener", name, "addr", addr.String())
		fmt.Fprintf(s.o.Announce, "karman: %s listening on %s\n", name, addr)
	}
	return lns, nil
}

type running struct {
	name string
	stop func(context.Context) error
}

// startFrontends starts each front-end with an enabled listener, taking
// its listener out of lns. It returns the started ones even on error. addrs
// holds every bound address; each front-end gets its own copy.
func (s *server) startFrontends(ctx context.Context, eng *engine.Engine, engOpts engine.Options, ms *metrics.Set, lns map[string]net.Listener, addrs map[string]net.Addr) ([]running, error) {
	var started []running
	for _, f := range s.o.Frontends {
		ln := lns[f.Name]
		if ln == nil {
			continue
		}
		delete(lns, f.Name)
		stop, err := f.Start(ctx, frontend.Host{
			Engine:        eng,
			Listener:      ln,
			Logger:        s.log.With("frontend", f.Name),
			Metrics:       ms.Registry,
			Addrs:         maps.Clone(addrs),
			EngineOptions: engOpts,
			Config:        s.o.Config.Frontends[f.Name],
		})
		if err != nil {
			ln.Close()
			return started, fmt.Errorf("serve: start %s: %w", f.Name, err)
		}
		if stop == nil {
			stop = func(context.Context) error { return nil }
		}
		started = append(started, running{f.Name, stop})
		s.log.Info("front-end started", "frontend", f.Name, "addr", ln.Addr().String())
	}
	return started, nil
}

// stats feeds the metrics collector; it holds the read lock so Close
// waits for a scrape in progress.
func (s *server) stats() (engine.Stats, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.eng == nil || s.state.Load() != ready {
		return engine.Stats{}, false
	}
	return s.eng.Stats(), true
}
