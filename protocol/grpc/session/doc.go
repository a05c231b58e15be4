// Package session keeps the gRPC clients a server knows, keyed by the
// x-mq-client-id every request carries: the settings each client last
// declared on its telemetry stream, the stream itself (so the server can
// send commands, such as transaction checks, to the client), and the
// receipt handles the server keeps invisible on the client's behalf
// (auto-renew).
//
// A Table and its Sessions are safe for concurrent use.
package session
