package server

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/karmanmq/karman/server/config"
	"github.com/spf13/pflag"
)

// Options configure a Server.
type Options struct {
	// Config is the server's configuration; Flags fills it.
	Config *config.Config
	// Modules are the module instances, in start order (Registry.Resolve's
	// order); Flags fills their settings.
	Modules []Module
	// Flags holds every flag: the server's (config.Config.Bind) and each
	// module's, with their defaults. Parse a command line into it, then
	// apply the environment with config.ApplyEnv. Nil when the options
	// were built by hand.
	Flags *pflag.FlagSet
	// Hooks are added to the engine's hooks (engine.Options.Hooks), after
	// those the modules' ConfigureEngine added.
	Hooks []any
	// Version labels karman_build_info and the HTTP index page.
	Version string
	// Logger receives the server's log records. Nil: discarded.
	Logger *slog.Logger
	// LagInterval is how often the console samples each consumer group's
	// lag for its chart (the last console.DefaultLagSamples kept).
	// Default console.DefaultLagInterval.
	LagInterval time.Duration
	// Announce receives one line per bound listener ("karman: <name>
	// listening on <addr>") and "karman: ready", for scripts and tests
	// that wait for the server. Nil: discarded.
	Announce io.Writer
}

// NewOptions returns options running the modules of Default named by ids
// (all of them when ids is empty); see Registry.NewOptions.
func NewOptions(ids ...ModuleID) (*Options, error) { return Default.NewOptions(ids...) }

// NewOptions resolves ids (every registered module when empty) into start
// order, makes an instance of each, and binds the server's flags and every
// module's on a new flag set, all with their defaults. An unknown id, a
// missing required dependency, a dependency cycle, or a module flag that is
// taken already or not named after its module is an error.
func (r *Registry) NewOptions(ids ...ModuleID) (*Options, error) {
	infos, err := r.Resolve(ids...)
	if err != nil {
		return nil, err
	}
	cfg := &config.Config{}
	fs := pflag.NewFlagSet("karman", pflag.ContinueOnError)
	fs.SortFlags = false
	cfg.BindServer(fs)
	// The engine's flags follow the modules' in --help, as the server's
	// precede them, but are claimed first.
	engineFlags := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	engineFlags.SortFlags = false
	cfg.BindEngine(engineFlags)
	owner := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) { owner[f.Name] = "the server" })
	engineFlags.VisitAll(func(f *pflag.Flag) { owner[f.Name] = "the server" })

	o := &Options{Config: cfg, Flags: fs}
	for _, mi := range infos {
		m := mi.New()
		if got := m.KarmanModule().ID; got != mi.ID {
			return nil, fmt.Errorf("server: module %s: New returned module %s", mi.ID, got)
		}
		if err := bindModuleFlags(cfg, fs, owner, mi, m); err != nil {
			return nil, err
		}
		o.Modules = append(o.Modules, m)
	}
	fs.AddFlagSet(engineFlags)
	return o, nil
}

// bindModuleFlags adds the flags of m (its --<name>-addr, then its own)
// to fs, refusing any that fs has already or that do not start with the
// module's name.
func bindModuleFlags(cfg *config.Config, fs *pflag.FlagSet, owner map[string]string, mi ModuleInfo, m Module) error {
	name := mi.name()
	mine := pflag.NewFlagSet(string(mi.ID), pflag.ContinueOnError)
	mine.SortFlags = false
	mine.SetOutput(io.Discard) // pflag reports a redefinition there too
	if mi.DefaultAddr != "" {
		if o, taken := owner[name+"-addr"]; taken {
			return fmt.Errorf("server: module %s: flag --%s-addr is %s's already: %w", mi.ID, name, o, ErrFlagConflict)
		}
		cfg.AddListener(mine, config.Listener{Name: name, DefaultAddr: mi.DefaultAddr, Usage: mi.Usage, MaxMessageSize: mi.MaxMessageSize})
	}
	if fb, ok := m.(FlagBinder); ok {
		var perr error
		func() {
			defer func() { // pflag panics when a module defines a flag twice
				if v := recover(); v != nil {
					perr = fmt.Errorf("server: module %s: %v: %w", mi.ID, v, ErrFlagConflict)
				}
			}()
			fb.BindFlags(mine)
		}()
		if perr != nil {
			return perr
		}
	}
	var err error
	mine.VisitAll(func(f *pflag.Flag) {
		switch {
		case err != nil:
		case f.Name != name && !strings.HasPrefix(f.Name, name+"-"):
			err = fmt.Errorf("server: module %s: flag --%s is neither --%s nor starts with %q: %w", mi.ID, f.Name, name, name+"-", ErrFlagConflict)
		case owner[f.Name] != "":
			err = fmt.Errorf("server: module %s: flag --%s is %s's already: %w", mi.ID, f.Name, owner[f.Name], ErrFlagConflict)
		default:
			owner[f.Name] = "module " + string(mi.ID)
			fs.AddFlag(f)
		}
	})
	return err
}
