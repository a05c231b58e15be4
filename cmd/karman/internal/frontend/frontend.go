package frontend

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"sync"

	"github.com/karmanmq/karman/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
)

// Frontend describes one protocol front-end.
type Frontend struct {
	// Name identifies the front-end; it names its flag (--<name>-addr) and
	// its log records. Lower-case letters, digits and dashes.
	Name string
	// DefaultAddr is the listen address used when none is configured, for
	// example ":10911".
	DefaultAddr string
	// Usage is the flag's help text. Optional.
	Usage string
	// Start begins serving on h.Listener and returns once the front-end is
	// serving, doing its work in its own goroutines. ctx is done when serve
	// begins shutting down; serve then calls stop, which must close the
	// listener and every connection within its context's deadline. A nil
	// stop means there is nothing to stop.
	Start func(ctx context.Context, h Host) (stop func(context.Context) error, err error)
	// Flags, when set, adds the front-end's own settings to serve's flags,
	// each named "<Name>-..." (so also KARMAN_<NAME>_... variables). It is
	// called once per command line and returns the value the flags fill,
	// which reaches Start as Host.Config. Optional.
	Flags func(fs *pflag.FlagSet) any
	// MaxMessageSize is the largest message body, in bytes, that the
	// front-end's protocol can carry (a remoting frame is at most 16 MiB
	// with its header); serve refuses to start with --max-message-size
	// above it while the front-end is enabled. Zero: no limit of its own.
	MaxMessageSize int64
	// ConfigureEngine, when set, may adjust the engine's options before
	// the engine opens, knowing the front-end's bound address and its
	// Config (a broker sets the store host its message ids carry).
	// Optional.
	ConfigureEngine func(o *engine.Options, addr net.Addr, config any) error
}

// Host is what serve hands a front-end when it starts.
type Host struct {
	// Engine is open for as long as the front-end runs.
	Engine *engine.Engine
	// Listener is bound to the configured address. The front-end owns it.
	Listener net.Listener
	// Logger is the process logger with a "frontend" attribute.
	Logger *slog.Logger
	// Metrics registers the front-end's own Prometheus collectors, served
	// on /metrics with everything else.
	Metrics prometheus.Registerer
	// Addrs holds the bound address of every listener serve opened, keyed
	// by front-end name ("http" for the HTTP endpoint), for front-ends that
	// advertise another one (a name server publishing the broker address).
	Addrs map[string]net.Addr
	// EngineOptions are the options Engine was opened with, defaults
	// applied (the front-end's policies, such as auto-creation, follow
	// them). Read only.
	EngineOptions engine.Options
	// Config is what the front-end's Flags function returned, filled from
	// the command line; nil when it has no Flags or serve was configured
	// without a command line.
	Config any
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Registry holds front-ends in registration order.
type Registry struct {
	mu    sync.Mutex
	items []Frontend
}

// Register adds f. It panics when f has an invalid or already registered
// name or no Start function: those are programming errors found at start-up.
func (r *Registry) Register(f Frontend) {
	if err := check(f); err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.items {
		if g.Name == f.Name {
			panic(fmt.Sprintf("frontend: %q registered twice", f.Name))
		}
	}
	r.items = append(r.items, f)
}

// All returns the registered front-ends in registration order.
func (r *Registry) All() []Frontend {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items)
}

func check(f Frontend) error {
	switch {
	case !validName.MatchString(f.Name):
		return fmt.Errorf("frontend: invalid name %q (want lower-case letters, digits and dashes)", f.Name)
	case f.Name == "http":
		return fmt.Errorf("frontend: name %q is reserved for serve's HTTP endpoint", f.Name)
	case f.Start == nil:
		return fmt.Errorf("frontend: %q has no Start function", f.Name)
	}
	return nil
}

// Default is the registry the karman binary serves from.
var Default = &Registry{}

// Register adds f to Default.
func Register(f Frontend) { Default.Register(f) }
