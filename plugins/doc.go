// Package plugins runs Karman plugins: programs outside the broker's
// process, started and spoken to with hashicorp/go-plugin over gRPC
// (mutual TLS set up per process), that authenticate and authorize
// requests, intercept batches before they are stored or delivered and
// connect the broker to other systems.
//
// # Loading
//
// A plugin is named by a spec, as `karman serve --plugin` takes it:
//
//	NAME=PATH[,key=value…]
//
// ParseSpec reads it; Load starts the program, checks its SHA-256 when
// the spec pins one (sha256=HEX), checks the handshake (magic cookie and
// protocol version, package shared), configures it with the spec's
// other keys and returns a *Plugin. Its Hooks go into
// engine.Options.Hooks (they implement the interfaces of engine/hook the
// plugin serves); its Connectors are started with the open engine. Close
// stops them and the process; a program must Close every plugin it
// loaded before it exits.
//
// A few keys are the host's and do not reach the plugin: sha256 (the
// checksum pin), timeout (the deadline of each call, a Go duration) and
// on-failure (skip or reject, the interceptor policy), from (first or
// end: where a sink with no stored position starts).
//
// # Failure policy
//
// Authenticators and authorizers always fail closed: a failed call
// refuses the request (hook.ErrUnauthenticated, hook.ErrDenied, and
// ErrCallFailed). A plugin that crashes or hangs does not take the
// broker down. Every
// call has a deadline (Options.CallTimeout, or the spec's timeout). A
// call that fails (error, deadline, dead process) is logged and counted
// and its batch gets the interceptor policy: PolicyReject fails the send
// or delivery with an error matching ErrCallFailed (the engine reports
// it as engine.ErrHookFailed), PolicySkip lets the batch pass as if the
// plugin were not there. A process that exited, or that failed
// Options.FailuresBeforeRestart calls in a row, is killed and started
// again after an exponential backoff (Options.RestartMin doubling to
// Options.RestartMax); while it is down its calls fail at once under the
// policy. Connectors retry with the same backoff and lose nothing.
//
// # Connectors
//
// A sink connector follows the commit log (engine.Follow) from its
// position, hands the plugin the messages of its topics in order, in
// batches, and stores the position after each batch the plugin
// acknowledged, in DATA/plugins/NAME.pos: after a crash or restart the
// batch may be handed again (at least once), and nothing is skipped. A
// source connector reads batches from the plugin, sends them with
// engine.SendBatch (one call per run of messages to one topic) and
// acknowledges them once stored.
//
// # Concurrency and cost
//
// A Plugin and its hooks are safe for concurrent use. A call costs a
// gRPC round trip to another process (tens of microseconds and up), so
// plugins are called per batch, never per message, and interceptors get
// message bodies only when they ask for them (shared.Settings.Bodies).
//
// Stats returns each plugin's counters; NewCollector exports them to
// Prometheus.
package plugins
