// Package server executes the apache.rocketmq.v2.MessagingService on the
// engine: one file per RPC (route.go, send.go, receive.go, ...), and
// errors.go, the one table that turns engine errors into the status codes
// RocketMQ 5 clients act on.
//
// Every request names its client in the x-mq-client-id header; the server
// keeps what it knows about each client in a session.Table. A client
// declares its settings on the Telemetry stream; the server answers with
// the settings it is to use (batch sizes, retry policy, FIFO, body limit)
// and later sends transaction checks down the same stream.
//
// A client configured with a namespace gets topics and groups of its own:
// a resource N of namespace S (its resource_namespace, else the call's
// x-mq-namespace header) is the engine's "S%N", as RocketMQ's proxy and
// remoting clients with a namespace name it, and messages name their
// topic back to the client without the namespace (namespace.go).
//
// A Server is safe for concurrent use. New starts nothing; Start begins
// the background work (receipt renewal, transaction checks, expiry of
// silent clients) and Close stops it, ending the telemetry streams.
//
// NewTransport serves the service on protocol/grpc/transport, as karman
// serve does: SendMessage, AckMessage and ChangeInvisibleDuration run on
// their connection's reader (a send that will wait detaches first), and
// requests are decoded without copies. The service is served by that
// transport alone: it relies on it to detach, cork and read headers
// without copies, and for its defences against floods.
package server
