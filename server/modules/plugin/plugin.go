package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/plugins"
	karman "github.com/karmanmq/karman/server"
	"github.com/spf13/pflag"
)

// ID and Name (the prefix of its flags) of the module.
const (
	ID   karman.ModuleID = karman.PluginsID
	Name                 = "plugin"
)

// Info describes the module.
var Info = karman.ModuleInfo{
	ID:   ID,
	New:  func() karman.Module { return &Module{} },
	Name: Name,
}

func init() { karman.RegisterModule(Info) }

// Interface guards.
var (
	_ karman.FlagBinder       = (*Module)(nil)
	_ karman.Provisioner      = (*Module)(nil)
	_ karman.EngineConfigurer = (*Module)(nil)
	_ karman.Starter          = (*Module)(nil)
	_ karman.Stopper          = (*Module)(nil)
	_ karman.Cleaner          = (*Module)(nil)
	_ karman.StatusReporter   = (*Module)(nil)
)

// Module runs the plugins of --plugin.
type Module struct {
	specs       []string
	callTimeout time.Duration
	onFailure   string

	mu      sync.Mutex // guards loaded against Status
	loaded  []*plugins.Plugin
	started []*plugins.Connector
}

// Status is what the module reports in the API's overview.
type Status struct {
	Plugins []PluginStatus `json:"plugins"`
}

// PluginStatus is a loaded plugin's counters since it was loaded.
type PluginStatus struct {
	Name     string `json:"name"`
	Calls    uint64 `json:"calls"`
	Failures uint64 `json:"failures"` // timeouts included
	Timeouts uint64 `json:"timeouts"`
	Rejects  uint64 `json:"rejects"` // batches the plugin rejected
	Restarts uint64 `json:"restarts"`
	Up       bool   `json:"up"` // its process runs now
}

// Status reports the loaded plugins and their counters.
func (m *Module) Status() any {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{Plugins: []PluginStatus{}}
	for _, p := range m.loaded {
		s := p.Stats()
		st.Plugins = append(st.Plugins, PluginStatus{Name: s.Name, Calls: s.Calls, Failures: s.Failures, Timeouts: s.Timeouts,
			Rejects: s.Rejects, Restarts: s.Restarts, Up: s.Up})
	}
	return st
}

// KarmanModule implements karman.Module.
func (*Module) KarmanModule() karman.ModuleInfo { return Info }

// BindFlags adds --plugin (repeatable) and the plugins' settings.
func (m *Module) BindFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&m.specs, Name, nil, "run a process plugin: NAME=PATH[,key=value…] (sha256=HEX pins its checksum, timeout=, on-failure=reject|skip, from=first|end; other keys go to the plugin); repeatable")
	fs.DurationVar(&m.callTimeout, Name+"-call-timeout", 2*time.Second, "deadline of each call to a plugin")
	fs.StringVar(&m.onFailure, Name+"-on-failure", "reject", "what a failed interceptor call does to its batch: reject (fail it) or skip (let it pass); authentication and authorization always fail closed")
}

// Provision starts every plugin: a plugin that cannot start is an error
// before any port is bound.
func (m *Module) Provision(ctx karman.ProvisionContext) error {
	if len(m.specs) == 0 {
		return nil
	}
	opts := plugins.Options{Logger: ctx.Logger, CallTimeout: m.callTimeout}
	switch m.onFailure {
	case "reject":
		opts.Policy = plugins.PolicyReject
	case "skip":
		opts.Policy = plugins.PolicySkip
	default:
		return fmt.Errorf("plugin: --%s-on-failure %q: want reject or skip", Name, m.onFailure)
	}
	if m.callTimeout <= 0 {
		return fmt.Errorf("plugin: --%s-call-timeout %s must be positive", Name, m.callTimeout)
	}
	start, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range m.specs {
		spec, err := plugins.ParseSpec(s)
		if err != nil {
			m.closePlugins(ctx.Logger)
			return fmt.Errorf("plugin: --%s %q: %w", Name, s, err)
		}
		p, err := plugins.Load(start, spec, opts)
		if err != nil {
			m.closePlugins(ctx.Logger)
			return fmt.Errorf("plugin: --%s %s: %w", Name, spec.Name, err)
		}
		m.mu.Lock()
		m.loaded = append(m.loaded, p)
		m.mu.Unlock()
	}
	return nil
}

// ConfigureEngine adds the plugins' hooks to the engine's, in the order
// the plugins were given.
func (m *Module) ConfigureEngine(o *engine.Options, _ map[string]net.Addr) error {
	for _, p := range m.loaded {
		o.Hooks = append(o.Hooks, p.Hooks()...)
	}
	return nil
}

// Start registers the plugins' metrics and starts their connectors.
func (m *Module) Start(ctx context.Context, h karman.Host) error {
	if len(m.loaded) == 0 {
		return nil
	}
	if h.Metrics != nil {
		if err := h.Metrics.Register(plugins.NewCollector(m.loaded...)); err != nil {
			return fmt.Errorf("plugin: register metrics: %w", err)
		}
	}
	for _, p := range m.loaded {
		for _, c := range p.Connectors() {
			if err := c.Start(ctx, h.Engine); err != nil {
				return fmt.Errorf("plugin: start connector %s: %w", c.Name(), err)
			}
			m.started = append(m.started, c)
		}
	}
	return nil
}

// Stop stops the connectors.
func (m *Module) Stop(context.Context) error {
	for _, c := range m.started {
		c.Stop()
	}
	m.started = nil
	return nil
}

// Cleanup ends the plugins' processes, once the engine that calls their
// hooks has closed.
func (m *Module) Cleanup() error { return m.closePlugins(nil) }

func (m *Module) closePlugins(l *slog.Logger) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, p := range m.loaded {
		if err := p.Close(); err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: %w", p.Name(), err))
		}
	}
	m.loaded = nil
	err := errors.Join(errs...)
	if err != nil && l != nil {
		l.Warn("closing plugins", "err", err)
	}
	return err
}
