package namesrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	routetable "github.com/karmanmq/karman/cluster/namesrv"
	"github.com/karmanmq/karman/engine/hook"
	remoting "github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	karman "github.com/karmanmq/karman/server"
	"github.com/prometheus/client_golang/prometheus"
)

// ID, Name (the prefix of its flag and the name of its listener) and
// DefaultAddr of the module.
const (
	ID          karman.ModuleID = "frontend.namesrv"
	Name                        = "namesrv"
	DefaultAddr                 = ":9876"
)

// ExpireInterval is how often silent brokers are swept out (Java's
// scanNotActiveBroker runs every 5 s).
const ExpireInterval = 5 * time.Second

// expireEvery is ExpireInterval; tests shorten it.
var expireEvery = ExpireInterval

// Info describes the module.
var Info = karman.ModuleInfo{
	ID:          ID,
	New:         func() karman.Module { return &Module{} },
	Name:        Name,
	DefaultAddr: DefaultAddr,
	Usage:       "RocketMQ name server listen address",
	Deps:        []karman.Dependency{{ID: karman.PluginsID, Optional: true}, {ID: karman.AuthID, Optional: true}},
}

func init() { karman.RegisterModule(Info) }

// Interface guards.
var (
	_ karman.Starter = (*Module)(nil)
	_ karman.Stopper = (*Module)(nil)
)

// Module is the name-server module. It has no settings beyond its
// address.
type Module struct {
	stop karman.StopFunc
}

// KarmanModule implements karman.Module.
func (*Module) KarmanModule() karman.ModuleInfo { return Info }

// Start serves a new, empty route table on h.Listener.
func (m *Module) Start(ctx context.Context, h karman.Host) error {
	stop, err := Start(ctx, h)
	m.stop = stop
	return err
}

// Stop stops serving.
func (m *Module) Stop(ctx context.Context) error {
	return m.stop.Stop(ctx)
}

// Start serves a new, empty route table on h.Listener. The engine's
// Authenticators and Authorizers (h.Engine.Hooks) guard the name
// server's administration requests; h.Engine may be nil, which guards
// nothing. h.Metrics may be nil.
func Start(_ context.Context, h karman.Host) (stop func(context.Context) error, err error) {
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	table := routetable.New(routetable.Options{})
	kv := routetable.NewKV()
	var hooks *hook.Set
	if h.Engine != nil {
		hooks = h.Engine.Hooks()
	}
	proc := remoting.New(routes{table}, kv, remoting.Options{Logger: h.Logger, Hooks: hooks})
	mux := server.NewMux()
	proc.Mount(mux)
	so := server.Options{Logger: h.Logger, OnClose: proc.ConnClosed}
	if h.RPCLatency != nil {
		// rocketmq_rpc_latency, node_type "nameserver".
		observe := h.RPCLatency.NameServer().Coded("remoting", codeNames)
		so.Latency = func(req wire.RequestCode, resp wire.ResponseCode, d time.Duration) {
			observe(int32(req), int32(resp), d)
		}
	}
	srv := server.New(mux, so)

	if h.Metrics != nil {
		for _, c := range []prometheus.Collector{
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_namesrv_brokers", Help: "Broker members registered with the name server."},
				func() float64 { return float64(len(table.Brokers())) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_namesrv_topics", Help: "Topics the name server routes."},
				func() float64 { return float64(len(table.Topics())) }),
		} {
			if err := h.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("namesrv: metrics: %w", err)
			}
		}
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- srv.Serve(h.Listener) })
	wg.Go(func() {
		t := time.NewTicker(expireEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				for _, b := range table.Expire(now) {
					h.Logger.Warn("broker expired", "cluster", b.Cluster, "broker", b.BrokerName, "id", b.BrokerID,
						"addr", b.Addr, "silent", now.Sub(b.LastUpdate).Round(time.Second))
				}
			}
		}
	})
	return func(ctx context.Context) error {
		close(done)
		err := srv.Shutdown(ctx)
		wg.Wait()
		if serr := <-serveErr; !errors.Is(serr, server.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}, nil
}

// codeNames labels a request and its answer for rocketmq_rpc_latency:
// the codes' names in lower case, "none" for a request not answered.
func codeNames(req, resp int32) (string, string) {
	answer := "none"
	if resp != int32(server.NoResponse) {
		answer = strings.ToLower(wire.ResponseCode(resp).String())
	}
	return strings.ToLower(wire.RequestCode(req).String()), answer
}
