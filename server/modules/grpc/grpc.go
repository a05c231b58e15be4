package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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
	_ karman.FlagBinder          = (*Module)(nil)
	_ karman.Provisioner         = (*Module)(nil)
	_ karman.RuntimeInfoReporter = (*Module)(nil)
	_ karman.Validator           = (*Module)(nil)
	_ karman.Starter             = (*Module)(nil)
	_ karman.Stopper             = (*Module)(nil)
)

// Module is the gRPC module.
type Module struct {
	Config   Config
	stop     karman.StopFunc
	endpoint atomic.Value // string: the advertised endpoint, once started
}

// Provision takes the broker group's name and the name servers from the
// remoting broker's flags: routes name this group as the broker does, and
// list the other groups the name servers route a topic to.
func (m *Module) Provision(pc karman.ProvisionContext) error {
	if pc.Flag == nil {
		return nil
	}
	if v, ok := pc.Flag("broker-name"); ok && m.Config.BrokerName == "" {
		m.Config.BrokerName = v
	}
	if v, ok := pc.Flag("broker-namesrv"); ok && v != "" && len(m.Config.NameServers) == 0 {
		m.Config.NameServers = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
	}
	return nil
}

// RuntimeInfo names the gRPC endpoint in the broker's runtime
// information (InfoEndpoint), where other groups' front-ends find it.
func (m *Module) RuntimeInfo() map[string]string {
	if e, _ := m.endpoint.Load().(string); e != "" {
		return map[string]string{InfoEndpoint: e}
	}
	return nil
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
	if err == nil {
		m.endpoint.Store(m.Config.advertised)
	}
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
	// BrokerName is the broker group routes name this front-end by
	// (the module takes --broker-name); empty: the gRPC server's default.
	BrokerName string
	// NameServers, when set, are asked for the other broker groups
	// serving a topic, which routes and assignments list too (the module
	// takes --broker-namesrv, else the name server of this process).
	NameServers []string

	advertised string // set by Start
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
	nameServers := cfg.NameServers
	if len(nameServers) == 0 {
		if a, ok := h.Addrs["namesrv"]; ok {
			if d, err := brokerfe.Advertise(a, ""); err == nil {
				nameServers = []string{d}
			}
		}
	}
	var routes *clusterRoutes
	var groups func(context.Context, string) []server.GroupRoute
	if len(nameServers) > 0 {
		routes = newClusterRoutes(nameServers, brokerName(cfg.BrokerName), endpoint, h.Logger)
		groups = routes.Groups
	}
	cfg.advertised = endpoint
	srv, err := server.New(h.Engine, server.Options{
		Endpoint:         endpoint,
		BrokerName:       cfg.BrokerName,
		Groups:           groups,
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
		if routes != nil {
			defer routes.close()
		}
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

// brokerName is the group name routes carry for name ("" : the default).
func brokerName(name string) string {
	if name == "" {
		return server.DefaultBrokerName
	}
	return name
}

// latency feeds rocketmq_rpc_latency with the unary calls, labelled by
// method and status code; nil without the metric.
func latency(h karman.Host) func(method, code string, d time.Duration) {
	if h.RPCLatency == nil {
		return nil
	}
	return func(method, code string, d time.Duration) { h.RPCLatency.Observe("grpc", method, code, d) }
}
