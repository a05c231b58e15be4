package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/server/config"
	"github.com/karmanmq/karman/server/console"
	"github.com/karmanmq/karman/server/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
)

// Errors of module registration and resolution, wrapped with the module
// and the id at fault.
var (
	// ErrUnknownModule: an id names no registered module.
	ErrUnknownModule = errors.New("unknown module")
	// ErrMissingDependency: a module requires one that is not selected
	// or does not run.
	ErrMissingDependency = errors.New("missing dependency")
	// ErrDependencyCycle: modules depend on each other in a circle.
	ErrDependencyCycle = errors.New("dependency cycle")
	// ErrFlagConflict: a flag is claimed twice, or outside its module's
	// prefix.
	ErrFlagConflict = errors.New("flag conflict")
)

// ModuleID names a module: a namespace, a dot, and the module's own name,
// both in lower-case letters, digits and dashes, as "frontend.remoting".
type ModuleID string

var validID = regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$`)

// Namespace returns the part before the last dot ("frontend").
func (id ModuleID) Namespace() string {
	i := strings.LastIndexByte(string(id), '.')
	if i < 0 {
		return ""
	}
	return string(id[:i])
}

// Name returns the part after the last dot ("remoting").
func (id ModuleID) Name() string {
	return string(id[strings.LastIndexByte(string(id), '.')+1:])
}

// PluginsID is the id of the module that runs process plugins
// (server/modules/plugin). Front-ends whose requests run the engine's
// hooks depend on it, optionally, so that the plugins behind the hooks
// start before the front-ends take requests and stop after they stop.
const PluginsID ModuleID = "plugin.process"

// AuthID is the id of the module that installs the access-control list
// (server/modules/auth). Front-ends whose requests run the engine's
// hooks depend on it, optionally, so that no request is served before
// the ACL is loaded.
const AuthID ModuleID = "auth.acl"

// Dependency is a module another one needs.
type Dependency struct {
	ID ModuleID
	// Optional: when the module is selected and runs, it starts first
	// (and stops last); when it does not, the dependent runs without it.
	// A dependency that is not optional must run, or the server does not
	// start.
	Optional bool
}

// ModuleInfo describes a registered module.
type ModuleInfo struct {
	// ID identifies the module, unique in its registry.
	ID ModuleID
	// New returns a fresh instance, holding the module's configuration
	// with its defaults.
	New func() Module
	// Name prefixes the module's flags ("broker" for --broker-addr,
	// --broker-name, ...; so also KARMAN_BROKER_* variables), names its
	// listener in announcements and its "module" log attribute. Empty:
	// the last part of ID.
	Name string
	// DefaultAddr, when set, makes the module a listening one: the host
	// adds --<Name>-addr with this default, binds the listener before the
	// engine opens and hands it to Start. "off" as the address disables
	// the module.
	DefaultAddr string
	// Usage is the help text of --<Name>-addr.
	Usage string
	// MaxMessageSize is the largest message body, in bytes, the module's
	// protocol can carry; the server refuses --max-message-size above it
	// while the module runs. Zero: no limit of its own.
	MaxMessageSize int64
	// Deps are the modules this one needs, started before it.
	Deps []Dependency
}

// name returns Name, defaulted.
func (mi ModuleInfo) name() string {
	if mi.Name != "" {
		return mi.Name
	}
	return mi.ID.Name()
}

// Module is one instance of a registered module. Everything else a module
// does is in the optional interfaces below, which the host looks for with
// type assertions.
type Module interface {
	KarmanModule() ModuleInfo
}

// FlagBinder adds the module's settings to fs, each named "<Name>-..."
// (so also settable as KARMAN_<NAME>_... variables). It is called once,
// before the command line is parsed; the values land in the module.
type FlagBinder interface {
	BindFlags(fs *pflag.FlagSet)
}

// Provisioner sets the module up from its settings and the server's, once
// the flags are parsed and before anything is validated or bound.
type Provisioner interface {
	Provision(ctx ProvisionContext) error
}

// ProvisionContext is what a module is provisioned with.
type ProvisionContext struct {
	// Config is the server's configuration. Read only.
	Config *config.Config
	// Logger has a "module" attribute.
	Logger *slog.Logger
	// Flag returns the value of any module's flag by name (another
	// module's flags are not in the set a module binds), and whether some
	// module declares it.
	Flag func(name string) (string, bool)
}

// Validator checks the module's settings. It runs after Provision and
// before any port is bound; an error stops the start.
type Validator interface {
	Validate() error
}

// EngineConfigurer adjusts the engine's options before the engine opens,
// knowing every bound address (a broker sets the store host its message
// ids carry).
type EngineConfigurer interface {
	ConfigureEngine(o *engine.Options, addrs map[string]net.Addr) error
}

// Starter begins the module's work and returns once it is serving, doing
// its work in its own goroutines. ctx is done when the server begins
// shutting down.
type Starter interface {
	Start(ctx context.Context, h Host) error
}

// Stopper ends what Start began: it closes the module's listener and
// connections within ctx's deadline. Modules stop in the reverse of the
// order they started; Stop is called once, only after Start succeeded.
type Stopper interface {
	Stop(ctx context.Context) error
}

// Cleaner releases what Provision took (processes, files): after the
// server stopped and its engine closed, for a server that never started
// when it is stopped, or when New fails after provisioning the module.
// It is called once per provisioned module, in the reverse of their
// order.
type Cleaner interface {
	Cleanup() error
}

// APIProvider adds operations to the JSON API under /api/v1/ (package
// console), asked once when the HTTP server is made, before the modules
// start: a route's handler answers console.ErrUnavailable while the
// module does not serve.
type APIProvider interface {
	APIRoutes() []console.Route
}

// StatusReporter reports a module's state in the JSON API's overview
// (its "status", by module id). Status is called for each overview, on
// the HTTP server's goroutines, also before the module starts and after
// it stopped; its value is encoded as JSON.
type StatusReporter interface {
	Status() any
}

// RoleReporter is a module that replicates the node: ReplicationRole
// is its role ("master", "replica"), or "" when it does not replicate.
type RoleReporter interface {
	ReplicationRole() string
}

// RuntimeInfoReporter is a module that adds key-value figures to the
// remoting broker's runtime information (GET_BROKER_RUNTIME_INFO): a
// replicated node's role, epoch, in-sync set and lag, the gRPC
// front-end's endpoint. RuntimeInfo is called from other modules'
// goroutines, also before the module starts; nil adds nothing.
type RuntimeInfoReporter interface {
	RuntimeInfo() map[string]string
}

// StopFunc is a stop function such as a module's Start may keep; its
// Stop calls it, and does nothing when it is nil (Start failed or never
// ran).
type StopFunc func(context.Context) error

// Stop calls f, if set.
func (f StopFunc) Stop(ctx context.Context) error {
	if f == nil {
		return nil
	}
	return f(ctx)
}

// Host is what the server hands a module when it starts.
type Host struct {
	// Engine is open for as long as the module runs.
	Engine *engine.Engine
	// Listener is bound to the module's configured address, for a module
	// with a DefaultAddr; the module owns it. Nil otherwise.
	Listener net.Listener
	// Logger is the server logger with a "module" attribute.
	Logger *slog.Logger
	// Metrics registers the module's own Prometheus collectors, served
	// on /metrics with everything else.
	Metrics prometheus.Registerer
	// RPCLatency is rocketmq_rpc_latency, which front-ends feed with the
	// time they take to answer each request (remoting and gRPC protocol
	// modules; the name server feeds its NameServer histogram); nil when
	// the server keeps no RocketMQ metrics.
	RPCLatency *metrics.RPCLatency
	// Addrs holds the bound address of every listener, keyed by module
	// Name ("http" for the HTTP endpoint), for modules that advertise
	// another one (a broker registering with the name server).
	Addrs map[string]net.Addr
	// EngineOptions are the options Engine was opened with, defaults
	// applied. Read only.
	EngineOptions engine.Options
	// RuntimeInfo returns the figures of every RuntimeInfoReporter
	// module, merged.
	RuntimeInfo func() map[string]string
	// Announce announces a listener the module bound itself (MQTT's
	// WebSocket and TLS listeners) as the server does its own: a log
	// line and "karman: <name> listening on <addr>" on Options.Announce.
	Announce func(name string, addr net.Addr)
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Registry holds the modules that can run, by id.
type Registry struct {
	mu   sync.Mutex
	mods map[ModuleID]ModuleInfo
}

// Register adds a module. It panics on an invalid or already registered
// id, an invalid name or a missing New: programming errors found when the
// program starts.
func (r *Registry) Register(mi ModuleInfo) {
	if err := checkInfo(mi); err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.mods[mi.ID]; dup {
		panic(fmt.Sprintf("server: module %q registered twice", mi.ID))
	}
	if r.mods == nil {
		r.mods = map[ModuleID]ModuleInfo{}
	}
	r.mods[mi.ID] = mi
}

func checkInfo(mi ModuleInfo) error {
	switch {
	case !validID.MatchString(string(mi.ID)):
		return fmt.Errorf("server: invalid module id %q (want namespace.name in lower-case letters, digits and dashes)", mi.ID)
	case !validName.MatchString(mi.name()):
		return fmt.Errorf("server: module %s: invalid name %q", mi.ID, mi.name())
	case mi.New == nil:
		return fmt.Errorf("server: module %s has no New function", mi.ID)
	}
	return nil
}

// Lookup returns the module registered as id.
func (r *Registry) Lookup(id ModuleID) (ModuleInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	mi, ok := r.mods[id]
	return mi, ok
}

// Modules returns every registered module, sorted by id.
func (r *Registry) Modules() []ModuleInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := make([]ModuleInfo, 0, len(r.mods))
	for _, mi := range r.mods {
		all = append(all, mi)
	}
	slices.SortFunc(all, func(a, b ModuleInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return all
}

// Resolve returns the modules ids name (every registered one when ids is
// empty) in start order: a topological order of their dependencies, ties
// broken by id. An id registered nowhere, a required dependency not among
// them, and a cycle are errors.
func (r *Registry) Resolve(ids ...ModuleID) ([]ModuleInfo, error) {
	var infos []ModuleInfo
	if len(ids) == 0 {
		infos = r.Modules()
	} else {
		seen := map[ModuleID]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			mi, ok := r.Lookup(id)
			if !ok {
				return nil, fmt.Errorf("server: %w %q (registered: %s)", ErrUnknownModule, id, r.idList())
			}
			infos = append(infos, mi)
		}
	}
	return order(infos, nil)
}

func (r *Registry) idList() string {
	var ids []string
	for _, mi := range r.Modules() {
		ids = append(ids, string(mi.ID))
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// order sorts infos topologically by their dependencies. A required
// dependency outside infos is an error; so is one in off, the modules
// that will not run, which are left out of the result.
func order(infos []ModuleInfo, off map[ModuleID]bool) ([]ModuleInfo, error) {
	byID := map[ModuleID]ModuleInfo{}
	for _, mi := range infos {
		if !off[mi.ID] {
			byID[mi.ID] = mi
		}
	}
	indeg := map[ModuleID]int{}
	users := map[ModuleID][]ModuleID{}
	for id, mi := range byID {
		indeg[id] += 0
		for _, d := range mi.Deps {
			if _, ok := byID[d.ID]; !ok {
				if d.Optional {
					continue
				}
				why := "is not compiled in or not selected"
				if off[d.ID] {
					why = "is turned off"
				}
				return nil, fmt.Errorf("server: module %s requires %s, which %s: %w", id, d.ID, why, ErrMissingDependency)
			}
			indeg[id]++
			users[d.ID] = append(users[d.ID], id)
		}
	}
	var ready []ModuleID
	for id, n := range indeg {
		if n == 0 {
			ready = append(ready, id)
		}
	}
	var out []ModuleInfo
	for len(ready) > 0 {
		slices.Sort(ready)
		id := ready[0]
		ready = ready[1:]
		out = append(out, byID[id])
		for _, u := range users[id] {
			if indeg[u]--; indeg[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	if len(out) < len(byID) {
		var stuck []string
		for id, n := range indeg {
			if n > 0 {
				stuck = append(stuck, string(id))
			}
		}
		slices.Sort(stuck)
		return nil, fmt.Errorf("server: modules %s: %w", strings.Join(stuck, ", "), ErrDependencyCycle)
	}
	return out, nil
}

// Default is the registry modules register with when imported.
var Default = &Registry{}

// RegisterModule adds a module to Default; modules call it from init.
func RegisterModule(mi ModuleInfo) { Default.Register(mi) }
