// Package server assembles a Karman server: the engine, the HTTP endpoint
// (/healthz, /metrics) and a set of modules, such as the protocol
// front-ends. The karman binary is a thin command line over it; a Go
// program embeds a full server with a few lines:
//
//	opts, err := server.NewOptions() // every module compiled in
//	if err != nil { ... }
//	opts.Flags.Parse([]string{"--data", dir, "--broker-addr", "127.0.0.1:0"})
//	srv, err := server.New(*opts)
//	if err != nil { ... }
//	if err := srv.Start(ctx); err != nil { ... }
//	defer srv.Stop(ctx)
//
// # Modules
//
// A module registers itself by being imported: its package calls
// RegisterModule from an init function with a ModuleInfo. Modules are
// named by namespaced ids, "namespace.name": frontend.remoting (the
// RocketMQ remoting broker), frontend.namesrv, frontend.grpc, and in the
// same way auth.*, interceptor.*, connector.*. Package modules/standard
// imports the standard set; a custom binary imports the module packages
// it wants, and links no code of the others.
//
// A module has its own settings, bound as flags named with its Name
// ("broker" for frontend.remoting: --broker-addr, --broker-name, ...), so
// also settable as KARMAN_BROKER_* variables. A module with a DefaultAddr
// listens: the server adds --<Name>-addr, binds it before the engine
// opens and hands the listener to the module; "off" disables the module.
// Two modules claiming one flag, or a module flag not starting with
// "<Name>-", is an error (ErrFlagConflict).
//
// A module declares its dependencies in ModuleInfo.Deps. The start order
// is a topological order of them, ties broken by id (never Go's package
// initialisation order); a required dependency that is not compiled in,
// not selected or turned off is ErrMissingDependency, a cycle is
// ErrDependencyCycle, an id that names no module is ErrUnknownModule. All
// of these are found by NewOptions or New, before any port is bound. An
// optional dependency only orders: the remoting broker starts after the
// in-process name server, when it runs, to register with it; gRPC after
// the broker.
//
// # Life cycle
//
// The steps are small optional interfaces the server looks for on each
// module instance with type assertions (modules assert them at compile
// time: var _ server.Starter = (*Module)(nil)):
//
//	FlagBinder        BindFlags: add the module's flags (NewOptions)
//	Provisioner       Provision: set up from the parsed settings (New)
//	Validator         Validate: check them (New, before any port is bound)
//	EngineConfigurer  ConfigureEngine: adjust engine.Options, knowing the
//	                  bound addresses (Start, before the engine opens)
//	Starter           Start: serve, with the open engine (Start, in order)
//	Stopper           Stop: end it (Stop, in reverse order)
//	Cleaner           Cleanup: release what Provision took (Stop, after the
//	                  engine closed, in reverse order; also when New fails
//	                  or a server that never started is stopped)
//
// Besides the steps, a module may report: StatusReporter (its state in
// the JSON API's overview), RoleReporter (its replication role),
// RuntimeInfoReporter (figures the remoting broker adds to its runtime
// information: a replicated broker's role, epoch and lag, the gRPC
// endpoint). Provision's ProvisionContext.Flag reads another module's
// flag (--broker-name, --ha-broker-id), which a module's own flag set
// does not hold.
//
// Start binds every listener first (a taken port fails before any data is
// touched) and announces each bound address on Options.Announce as
// "karman: <name> listening on <addr>"; the HTTP endpoint serves (health
// 503 "starting"), the engine opens, the modules start in order, health
// turns 200 and "karman: ready" is announced. Stop turns health to 503
// "stopping", stops the started modules in reverse order, closes the
// engine and shuts the HTTP endpoint down, all within its context.
//
// # Hooks
//
// Modules that only observe or veto messages need no life cycle: the
// engine's hook points are in engine/hook (BeforeStore, BeforeDeliver,
// the client in a context), installed through engine.Options.Hooks.
//
// Concurrency: Start, Stop and the accessors are safe for concurrent use;
// metrics scrapes read the engine under a read lock that Stop waits for.
// Registration is safe for concurrent use but meant for init functions.
package server
