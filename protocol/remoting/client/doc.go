// Package client is a small RocketMQ remoting client: one TCP connection
// to one address, with many requests in flight at once. It is used by
// administration tools, load generators and tests; it does no routing,
// retrying or reconnecting.
//
// # Frames
//
// Every request and response is one frame of package wire:
//
//	+----------+--------------------+----------+------+
//	| length   | type | headerLen   | header   | body |
//	| int32    | u8   | uint24      |          |      |
//	+----------+--------------------+----------+------+
//
// Requests carry an opaque chosen by the client (a per-client counter);
// the server's response carries the same opaque with the response flag
// set, in any order. Requests the server sends to the client (transaction
// checks, consumer notifications) arrive on the same connection without
// the response flag and go to Options.Handler.
//
// # Concurrency
//
// A Client is safe for concurrent use. Invoke may be called from many
// goroutines; each call encodes its frame on the calling goroutine and
// hands it to a single writer goroutine, which batches whatever is queued
// into one buffered write and flush. A single reader goroutine decodes
// incoming frames, completes the matching Invoke, and runs Handler on a
// new goroutine per server request so a slow handler never stalls
// responses. Invoke never modifies the caller's command and does not keep
// it after returning.
//
// The first read or write error closes the connection: every pending and
// later call fails with ErrConnectionLost (wrapping the cause), and Done
// is closed. Close fails pending calls with ErrClosed, cancels the context
// passed to handlers, and waits for the reader, the writer and all
// handlers to return.
package client
