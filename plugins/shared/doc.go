// Package shared is what a Karman plugin and the broker that runs it
// agree on: the handshake (a magic cookie and the protocol version), the
// plugin map, the Go interfaces a plugin implements and the values they
// exchange. A plugin's main passes its implementation to Serve; the
// broker's host (package plugins) dispenses the same plugin and calls it
// over hashicorp/go-plugin's gRPC transport.
//
// # Plugin kinds
//
// One value may implement several of these interfaces; Serve offers
// every one it implements:
//
//   - StoreInterceptor: a send batch before it is stored; change
//     properties or reject it (Reject).
//   - DeliverInterceptor: a batch before it is delivered to a consumer
//     group; drop messages (DeliverBatch.Drop) or reject it.
//   - Sink: the broker follows its commit log and hands the plugin
//     batches in order (Write); a nil error acknowledges the batch, and
//     the broker stores the position after it. A batch may be handed
//     again after a crash: at least once.
//   - Source: the broker asks for batches (Read), sends them to the
//     engine and acknowledges them (Ack).
//   - hook.Authenticator and hook.Authorizer, the engine's own
//     interfaces: the broker asks the plugin who a request's credentials
//     prove (refuse with hook.Unauthenticated) and whether a principal may
//     act on a resource (refuse with hook.Deny). They are called once per
//     request, and fail closed: a call that fails refuses the request.
//     The credentials are those the front-end took: a signature and what
//     it signs, an MQTT client's username, password and client id, and
//     the client certificate its TLS connection verified
//     (hook.Credentials.Certificate, parsed again from its DER).
//
// A value implementing Configurer gets its name and configuration (the
// key=value pairs of the broker's plugin spec) before any other call,
// again after each restart of its process.
//
// # Concurrency and cost
//
// The broker calls interceptors from many goroutines at once; their
// methods must be safe for concurrent use. Sinks and sources are called
// from one goroutine. Every call is made per batch, never per message,
// and has a deadline (the context's); a call that outlives it counts as
// a failure, and the broker applies its failure policy.
package shared
