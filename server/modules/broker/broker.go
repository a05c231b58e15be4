package broker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	karman "github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
)

// ID, Name (the prefix of its flags and the name of its listener) and
// DefaultAddr of the module.
const (
	ID          karman.ModuleID = "frontend.remoting"
	Name                        = "broker"
	DefaultAddr                 = ":10911"
)

// NamesrvID is the in-process name server the broker registers with when
// it runs and no --broker-namesrv is given: an optional dependency.
const NamesrvID karman.ModuleID = "frontend.namesrv"

// startRegisterTimeout bounds the first registration, which start-up
// waits for so that the broker is routable once serve reports ready.
const startRegisterTimeout = 5 * time.Second

// Info describes the module.
var Info = karman.ModuleInfo{
	ID:             ID,
	New:            func() karman.Module { return New() },
	Name:           Name,
	DefaultAddr:    DefaultAddr,
	Usage:          "RocketMQ remoting broker listen address",
	MaxMessageSize: MaxMessageSize,
	Deps:           []karman.Dependency{{ID: NamesrvID, Optional: true}, {ID: karman.PluginsID, Optional: true}, {ID: karman.AuthID, Optional: true}},
}

// MaxMessageSize is the largest body a remoting frame carries: the frame
// limit less room for the header, whose properties may take 32 KiB.
const MaxMessageSize = wire.DefaultMaxFrameSize - 64<<10

// brokerID is the id the broker registers with: 0 for a master, replica
// (1 or more) for a replica (cluster.ha), which clients then never send
// to. Each replica of a group needs its own id: the name server keeps one
// address per id.
func brokerID(e *engine.Engine, replica int64) int64 {
	if e.Role() == engine.RoleReplica {
		return replica
	}
	return 0
}

// registeredRole is the broker id and state version the broker registers
// with, asked before each registration: its id as brokerID says, and the
// epoch of its log, so that a new master (a higher epoch) takes id 0 from
// the one it replaced.
func registeredRole(e *engine.Engine, replica int64) func() (int64, int64) {
	return func() (int64, int64) {
		var epoch int64
		if eps := e.Epochs(); len(eps) > 0 {
			epoch = int64(eps[len(eps)-1].Epoch)
		}
		return brokerID(e, replica), epoch
	}
}

// HABrokerIDFlag is the replication module's flag whose value, when set,
// is the id this broker registers with as a replica: with a controller,
// the id the controller knows it by.
const HABrokerIDFlag = "ha-broker-id"

// maxDerivedID bounds the ids ReplicaID derives from addresses.
const maxDerivedID = 1_000_000

// ReplicaID is the id a replica registers with: configured when it is
// 1 or more, else derived from its advertised address (stable across
// restarts at the same address, and distinct between the replicas of a
// group with a probability of about one in a million per pair).
func ReplicaID(configured int64, advertise string) int64 {
	if configured > 0 {
		return configured
	}
	h := fnv.New32a()
	h.Write([]byte(advertise))
	return 1 + int64(h.Sum32()%maxDerivedID)
}

// roleCheckInterval is how often the broker looks for a change of its
// engine's role (a promotion or demotion by the controller).
const roleCheckInterval = 200 * time.Millisecond

func init() { karman.RegisterModule(Info) }

// Interface guards: the life-cycle steps the broker takes part in.
var (
	_ karman.FlagBinder       = (*Module)(nil)
	_ karman.Provisioner      = (*Module)(nil)
	_ karman.Validator        = (*Module)(nil)
	_ karman.EngineConfigurer = (*Module)(nil)
	_ karman.Starter          = (*Module)(nil)
	_ karman.Stopper          = (*Module)(nil)
)

// Module is the broker module: its settings, then, once started, what
// Stop ends.
type Module struct {
	Config Config
	stop   karman.StopFunc
}

// New returns a broker module with the default settings.
func New() *Module {
	return &Module{Config: Config{
		BrokerName:       broker.DefaultBrokerName,
		ClusterName:      broker.DefaultClusterName,
		MaxInflightBytes: server.DefaultMaxInflightBytes,
	}}
}

// KarmanModule implements karman.Module.
func (*Module) KarmanModule() karman.ModuleInfo { return Info }

// BindFlags adds the broker's flags to fs.
func (m *Module) BindFlags(fs *pflag.FlagSet) { bindFlags(fs, &m.Config) }

// Provision takes the id the broker registers with as a replica from
// the replication module's --ha-broker-id, when it is set.
func (m *Module) Provision(pc karman.ProvisionContext) error {
	if m.Config.ReplicaID != 0 || pc.Flag == nil {
		return nil
	}
	v, ok := pc.Flag(HABrokerIDFlag)
	if !ok {
		return nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 0 {
		return fmt.Errorf("broker: --%s %q: want an id, 1 or more", HABrokerIDFlag, v)
	}
	m.Config.ReplicaID = id
	return nil
}

// Validate checks the settings the flags cannot.
func (m *Module) Validate() error {
	if m.Config.MaxInflightBytes != 0 && m.Config.MaxInflightBytes < wire.DefaultMaxFrameSize {
		return fmt.Errorf("broker: --%s-max-inflight-bytes %s is below the largest frame, %s", Name, m.Config.MaxInflightBytes, config.ByteSize(wire.DefaultMaxFrameSize))
	}
	if m.Config.AdvertiseAddr != "" {
		if _, err := Advertise(nil, m.Config.AdvertiseAddr); err != nil {
			return err
		}
	}
	return nil
}

// ConfigureEngine makes the engine write the broker's advertised address
// into stored messages and offset message ids, which clients decode to
// find the broker again.
func (m *Module) ConfigureEngine(o *engine.Options, addrs map[string]net.Addr) error {
	return ConfigureEngine(o, addrs[Name], &m.Config)
}

// Start serves the broker on h.Listener and registers it with the name
// servers.
func (m *Module) Start(ctx context.Context, h karman.Host) error {
	stop, err := Start(ctx, h, &m.Config)
	m.stop = stop
	return err
}

// Stop stops serving and deregisters from the name servers.
func (m *Module) Stop(ctx context.Context) error {
	return m.stop.Stop(ctx)
}

// Config holds the broker's own settings.
type Config struct {
	// AdvertiseAddr is the "ip:port" clients dial; empty derives it from
	// the listener (see Advertise).
	AdvertiseAddr string
	// NameServers to register with; empty means the name server of the
	// same process, if it runs.
	NameServers []string
	BrokerName  string
	ClusterName string
	// MaxInflightBytes bounds the memory of the requests read and not yet
	// handled, across all connections (server.Options.MaxInflightBytes);
	// zero means server.DefaultMaxInflightBytes.
	MaxInflightBytes config.ByteSize
	// ReplicaID is the id the broker registers with while it is a
	// replica; 0 derives one from the advertised address (ReplicaID).
	// The module takes it from --ha-broker-id.
	ReplicaID int64
}

// bindFlags adds the broker's flags to fs, filling c.
func bindFlags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.AdvertiseAddr, Name+"-advertise-addr", "", "IPv4 ip:port clients dial to reach the broker (default: derived from --broker-addr)")
	fs.Var(listValue{&c.NameServers}, Name+"-namesrv", "name servers to register with, ip:port separated by commas (default: the name server of this process)")
	fs.StringVar(&c.BrokerName, Name+"-name", broker.DefaultBrokerName, "broker name")
	fs.StringVar(&c.ClusterName, Name+"-cluster", broker.DefaultClusterName, "cluster name")
	c.MaxInflightBytes = server.DefaultMaxInflightBytes
	fs.Var(&c.MaxInflightBytes, Name+"-max-inflight-bytes",
		"memory for requests read and not yet handled, across all connections; a client finding it spent is read no further until there is room (at least "+
			config.ByteSize(wire.DefaultMaxFrameSize).String()+", the largest frame)")
}

// ConfigureEngine makes the engine write the broker's advertised address
// into stored messages and offset message ids, which clients decode to
// find the broker again.
func ConfigureEngine(o *engine.Options, addr net.Addr, cfg *Config) error {
	if cfg == nil {
		cfg = &Config{}
	}
	advertise, err := Advertise(addr, cfg.AdvertiseAddr)
	if err != nil {
		return err
	}
	o.StoreHost = netip.MustParseAddrPort(advertise)
	return nil
}

// Start serves the broker on h.Listener with the settings of cfg and
// registers it with the name servers; stop undoes it.
func Start(ctx context.Context, h karman.Host, cfg *Config) (stop func(context.Context) error, err error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	advertise, err := Advertise(h.Listener.Addr(), cfg.AdvertiseAddr)
	if err != nil {
		return nil, err
	}
	if cfg.MaxInflightBytes != 0 && cfg.MaxInflightBytes < wire.DefaultMaxFrameSize {
		return nil, fmt.Errorf("broker: --%s-max-inflight-bytes %s is below the largest frame, %s", Name, cfg.MaxInflightBytes, config.ByteSize(wire.DefaultMaxFrameSize))
	}
	nameServers := cfg.NameServers
	if len(nameServers) == 0 {
		if a, ok := h.Addrs[namesrvName]; ok {
			nameServers = []string{dialable(a)}
		}
	}

	b := broker.New(h.Engine, broker.Options{
		BrokerName:       cfg.BrokerName,
		ClusterName:      cfg.ClusterName,
		Addr:             advertise,
		AutoCreateTopics: h.EngineOptions.AutoCreateTopics,
		AutoCreateGroups: h.EngineOptions.AutoCreateGroups,
		RuntimeInfo:      h.RuntimeInfo,
		Logger:           h.Logger,
	})
	mux := server.NewMux()
	b.Register(mux)
	so := server.Options{Logger: h.Logger, Busy: b.Busy, OnClose: b.OnClose, MaxInflightBytes: int64(cfg.MaxInflightBytes)}
	if h.RPCLatency != nil {
		observe := h.RPCLatency.Coded("remoting", codeNames)
		so.Latency = func(req wire.RequestCode, resp wire.ResponseCode, d time.Duration) {
			observe(int32(req), int32(resp), d)
		}
	}
	srv := server.New(mux, so)
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	if h.Metrics != nil {
		if err := registerMetrics(h.Metrics, b); err != nil {
			b.Close()
			return nil, err
		}
	}

	var reg *namesrv.Registrar
	if len(nameServers) > 0 {
		reg, err = namesrv.NewRegistrar(namesrv.RegistrarOptions{
			NameServers: nameServers,
			Cluster:     cfg.ClusterName,
			BrokerName:  b.Options().BrokerName,
			Role:        registeredRole(h.Engine, ReplicaID(cfg.ReplicaID, advertise)),
			BrokerAddr:  advertise,
			Topics:      b.TopicConfigs,
			Logger:      h.Logger,
		})
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("broker: %w", err)
		}
	} else {
		h.Logger.Warn("no name server to register with: clients will not find this broker", "addr", advertise)
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- srv.Serve(h.Listener) })
	if reg != nil {
		rctx, cancel := context.WithTimeout(ctx, startRegisterTimeout)
		if err := reg.RegisterAll(rctx); err != nil {
			h.Logger.Warn("first registration with the name servers failed; retrying in the background", "name_servers", nameServers, "err", err)
		}
		cancel()
		reg.Start()
		wg.Go(func() {
			// A role the controller changes is registered at once.
			tick := time.NewTicker(roleCheckInterval)
			defer tick.Stop()
			role := h.Engine.Role()
			for {
				select {
				case <-done:
					return
				case <-b.TopicsChanged():
					reg.Trigger()
				case <-tick.C:
					if now := h.Engine.Role(); now != role {
						role = now
						reg.Trigger()
					}
				}
			}
		})
	}
	h.Logger.Info("broker serving", "advertise", advertise, "name_servers", nameServers, "broker", b.Options().BrokerName)

	return func(ctx context.Context) error {
		close(done)
		var errs []error
		if reg != nil {
			errs = append(errs, reg.Close(ctx))
		}
		errs = append(errs, b.Close(), srv.Shutdown(ctx))
		wg.Wait()
		if serr := <-serveErr; !errors.Is(serr, server.ErrServerClosed) {
			errs = append(errs, serr)
		}
		return errors.Join(errs...)
	}, nil
}

func registerMetrics(r prometheus.Registerer, b *broker.Broker) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_broker_held_pulls", Help: "Pull requests waiting for messages (long polling)."},
			func() float64 { return float64(b.HeldPulls()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_broker_flow_control", Help: "1 while sends are refused because the engine is behind, else 0."},
			func() float64 {
				if b.Busy(server.KindSend) {
					return 1
				}
				return 0
			}),
	} {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("broker: metrics: %w", err)
		}
	}
	return nil
}

// namesrvName is the listener name of the in-process name server.
const namesrvName = "namesrv"

// listValue is a flag holding a list of addresses separated by commas or
// semicolons.
type listValue struct{ l *[]string }

func (v listValue) String() string {
	if v.l == nil {
		return ""
	}
	return strings.Join(*v.l, ",")
}

func (v listValue) Set(s string) error {
	*v.l = nil
	for a := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("want ip:port: %w", err)
		}
		*v.l = append(*v.l, a)
	}
	return nil
}

func (v listValue) Type() string { return "addrs" }

// codeNames labels a remoting request and its answer in
// rocketmq_rpc_latency: the codes' names in lower case, as RocketMQ's
// broker writes them (send_message, success); "none" for no answer.
func codeNames(req, resp int32) (string, string) {
	answer := "none"
	if resp != int32(server.NoResponse) {
		answer = strings.ToLower(wire.ResponseCode(resp).String())
	}
	return strings.ToLower(wire.RequestCode(req).String()), answer
}
