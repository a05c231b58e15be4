// Package session keeps the gRPC clients a server knows, keyed by the
// x-mq-client-id every request carries: the settings each client last
// declared on its telemetry stream, the stream itself (so the server can
// send commands, such as transaction checks, to the client), and its
// Gone channel, which ends the work done on the client's behalf, such as
// the renewal of the receipts it received with auto_renew.
//
// A Table and its Sessions are safe for concurrent use.
package session
