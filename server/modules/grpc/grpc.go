package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/server"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	karman "github.com/karmanmq/karman/server"
	brokerfe "github.com/karmanmq/karman/server/modules/broker"
	"github.com/spf13/pflag"
)

// ID, Name (the prefix of its flags and the name of its listener) and
// DefaultAddr of the module.
const (
	ID          karman.ModuleID = "frontend.grpc"
	Name                        = "grpc"
	DefaultAddr                 = ":8081"
)

// Info describes the module. It starts after the remoting broker when
// both run (an optional dependency): both serve one engine, and the
// broker's routes are published first.
var Info = karman.ModuleInfo{
	ID:          ID,
	New:         func() karman.Module { return &Module{} },
	Name:        Name,
	DefaultAddr: DefaultAddr,
	Usage:       "RocketMQ 5 gRPC listen address",
	Deps:        []karman.Dependency{{ID: brokerfe.ID, Optional: true}, {ID: karman.PluginsID, Optional: true}, {ID: karman.AuthID, Optional: true}},
}

func init() { karman.RegisterModule(Info) }

// Interface guards.
var (
	_ karman.FlagBinder = (*Module)(nil)
	_ karman.Validator  = (*Module)(nil)
	_ karman.Starter    = (*Module)(nil)
	_ karman.Stopper    = (*Module)(nil)
)

// Module is the gRPC module.
type Module struct {
	Config Config
	stop   karman.StopFunc
}

// KarmanModule implements karman.Module.
func (*Module) KarmanModule() karman.ModuleInfo { return Info }

// BindFlags adds the module's flags to fs.
func (m *Module) BindFlags(fs *pflag.FlagSet) { bindFlags(fs, &m.Config) }

// Validate checks that the TLS certificate and key come together and
// load.
func (m *Module) Validate() error {
	if m.Config.TLSCert == "" && m.Config.TLSKey == "" {
		return nil
	}
	_, err := tlsConfig(m.Config.TLSCert, m.Config.TLSKey)
	return err
}

// Start serves the MessagingService on h.Listener.
func (m *Module) Start(ctx context.Context, h karman.Host) error {
	stop, err := Start(ctx, h, &m.Config)
	m.stop = stop
	return err
}

// Stop stops serving, gracefully within ctx's deadline.
func (m *Module) Stop(ctx context.Context) error {
	return m.stop.Stop(ctx)
}

// Config holds the front-end's own settings.
type Config struct {
	// AdvertiseAddr is the "host:port" clients are told to dial; empty
	// derives it from the listener.
	AdvertiseAddr string
	// TLSCert and TLSKey are the PEM files of the certificate served to
	// clients that open with TLS; empty: a self-signed one.
	TLSCert, TLSKey string
}

// bindFlags adds the module's flags to fs, filling c.
func bindFlags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.AdvertiseAddr, Name+"-advertise-addr", "", "host:port gRPC clients are routed to (default: derived from --grpc-addr)")
	fs.StringVar(&c.TLSCert, Name+"-tls-cert", "", "PEM certificate for gRPC clients that use TLS, served on the same port as plaintext (default: a self-signed one)")
	fs.StringVar(&c.TLSKey, Name+"-tls-key", "", "PEM private key of --grpc-tls-cert")
}

// Start serves the MessagingService on h.Listener with the settings of
// cfg; stop undoes it.
func Start(ctx context.Context, h karman.Host, cfg *Config) (stop func(context.Context) error, err error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	endpoint := cfg.AdvertiseAddr
	if endpoint == "" {
		if endpoint, err = brokerfe.Advertise(h.Listener.Addr(), ""); err != nil {
			return nil, err
		}
	}
	srv, err := server.New(h.Engine, server.Options{
		Endpoint:         endpoint,
		Logger:           h.Logger,
		MaxBodySize:      h.EngineOptions.MaxMessageSize,
		AutoCreateTopics: h.EngineOptions.AutoCreateTopics,
		AutoCreateGroups: h.EngineOptions.AutoCreateGroups,
		DefaultQueues:    h.EngineOptions.DefaultQueues,
		Latency:          latency(h),
	})
	if err != nil {
		return nil, err
	}
	tc, err := tlsConfig(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, err
	}
	g := srv.NewTransport(tc)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("grpc: %w", err)
	}
	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- g.Serve(h.Listener) })
	h.Logger.Info("grpc serving", "advertise", endpoint)

	return func(ctx context.Context) error {
		errs := []error{srv.Close()}
		stopped := make(chan struct{})
		go func() { g.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			g.Stop()
			<-stopped
		}
		wg.Wait()
		if serr := <-serveErr; serr != nil && !errors.Is(serr, transport.ErrServerStopped) {
			errs = append(errs, serr)
		}
		return errors.Join(errs...)
	}, nil
}

// latency feeds rocketmq_rpc_latency with the unary calls, labelled by
// method and status code; nil without the metric.
func latency(h karman.Host) func(method, code string, d time.Duration) {
	if h.RPCLatency == nil {
		return nil
	}
	return func(method, code string, d time.Duration) { h.RPCLatency.Observe("grpc", method, code, d) }
}
