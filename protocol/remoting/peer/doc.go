// Package peer is one end of a RocketMQ remoting connection: one TCP
// connection with many requests in flight at once in both directions. A
// client dials a Peer (administration tools, load generators, tests); the
// server wraps every accepted connection in a Peer, whose Handler serves
// the client's requests and whose Invoke sends the server's own requests
// (transaction checks, consumer notifications). It does no routing,
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
// Requests carry an opaque chosen by the sender (a per-Peer counter); the
// response carries the same opaque with the response flag set, in any
// order. Requests from the other end arrive without the response flag and
// go to Options.Handler.
//
// # Concurrency
//
// A Peer is safe for concurrent use. Invoke may be called from many
// goroutines; each call encodes its frame on the calling goroutine and
// queues it; a writer goroutine writes whatever is queued with one
// system call (writev). InvokeAsync queues the same way and returns at
// once; its callback runs when the response arrives. A single reading
// goroutine decodes incoming frames and completes the matching calls.
// Requests from the other end run Handler on a new goroutine each, so a
// slow handler never stalls responses; with Options.Inline they run on
// the reading goroutine instead, their responses are written together
// once nothing more is buffered to read, and a handler that must wait
// calls Detach, which hands reading to another goroutine (a spare one
// when a handler detached before). Invoke never modifies the caller's
// command and does not keep it after returning.
//
// The first read error closes the connection: every pending and later
// call fails with ErrConnectionLost (wrapping the cause), and Done is
// closed. A write error stops writing, and pending and later calls fail
// at once, but reading goes on: what the other end sent before it went
// away (say the oneway offset commits of a consumer shutting down) is
// still read and handled, up to the end of the stream or for at most
// 5 s, and only then is the connection shut down. Every request read is
// handed to the handler; oneway requests get a context that the
// connection's end does not cancel. Close fails pending calls with
// ErrClosed, cancels the context passed to handlers, and waits for the
// reader, the writer and all handlers to return.
package peer
