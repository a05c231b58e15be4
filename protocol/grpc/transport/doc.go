// Package transport serves gRPC services over HTTP/2 (cleartext, prior
// knowledge, as gRPC clients dial), doing per call only what the gRPC
// protocol asks for.
//
// It serves the parts of gRPC the MessagingService uses: services
// register through the generated Register functions (Server is a
// grpc.ServiceRegistrar), and handlers run through the generated method
// and stream handlers with grpc-go's interceptors, codecs, metadata,
// peer and status errors. Karman serves its gRPC endpoint with this
// server alone; grpc-go's server is the reference its HTTP/2 conformance
// test (h2spec) compares it with.
//
// Why not grpc.Server: a unary call there costs a goroutine hand-off to
// the connection's writer, which yields the processor before each flush,
// per-call stream bookkeeping sized for every gRPC feature, and a write
// system call per response under light load. Here a connection has one
// reader, which decodes frames and runs calls (on itself for the calls
// Options.Inline names, else on a pool of workers), and one writer,
// which sends everything queued since its last write in one system call:
// the answers of calls that finished together, the messages of a server
// stream, window updates. The reader also writes itself once it has read
// everything that arrived, so an inline call's answer needs no hand-off. Frames are decoded and HPACK is
// handled by golang.org/x/net/http2; what this package adds is the
// connection and stream state machine of RFC 9113 that a gRPC server
// needs, and gRPC's message framing, status trailers, timeouts and
// metadata (the gRPC over HTTP/2 protocol document).
//
// With Options.TLSConfig, connections that open with a TLS handshake are
// served over TLS on the same listener as plaintext ones.
//
// What it does not do: HTTP/1.1 upgrade, server push, compression other
// than gzip, and keepalive enforcement (client pings are answered, up to
// the allowance below). A request that is no gRPC call (another method or
// content type) is answered with an HTTP status and no body.
//
// Conformance: malformed requests (RFC 9113, section 8.1.1: upper-case or
// connection-specific header names, unknown, repeated or missing
// pseudo-headers, TE other than "trailers", a content-length the body
// does not match) are reset with PROTOCOL_ERROR; frames on idle and
// closed streams, self-dependent priorities and settings out of range get
// the stream or connection errors RFC 9113 names. TestH2Spec runs the
// h2spec suite against this server and grpc-go's side by side.
//
// Floods: a client has an allowance of frames that cost the server work
// without moving a call forward (PING, SETTINGS, RST_STREAM, calls
// refused, DATA on closed streams): 2,000, refilled at 1,000 a second;
// beyond it the connection ends with GOAWAY ENHANCE_YOUR_CALM. The
// handlers of calls a client reset count against MaxConcurrentStreams
// until they return; a new call that waits a second for one to end ends
// the connection the same way (rapid reset, CVE-2023-44487). A header
// block may not outgrow twice MaxHeaderListSize plus 16 KiB nor span
// more frames than a block of 4 KiB fragments would (CONTINUATION
// floods). Answers a client leaves unread are bounded: 1,024 control
// frames, and 1 MiB of queued messages beyond the one being written,
// after which senders wait; a call that waits StallTimeout for the
// client's window is reset with CANCEL, and a connection whose socket
// takes nothing for StallTimeout is closed.
//
// Flow control: each stream is given Options.WindowSize and the connection
// Options.ConnWindowSize for what clients send. A stream's window is
// credited as its messages are consumed, so a handler that stops reading
// stops its client, and a message larger than the window is credited as
// it is assembled. The connection window is credited as data arrives
// while the server's connections together hold less than
// Options.RecvBudget of received messages (assembling or waiting for
// their handlers), or the connection itself holds less than its window;
// otherwise once handlers consume what they hold. What all connections
// hold stays under RecvBudget plus about twice ConnWindowSize per
// connection. What the server sends respects the windows the client
// grants; a sender blocks until the client credits more, the stream ends,
// the connection closes or StallTimeout passes.
//
// Locks: conn.mu guards the stream table and the connection's state;
// conn.wmu guards everything written (the buffer, the HPACK encoder, the
// send windows and each stream's send state); conn.fmu the connection's
// receive window; stream.mu guards a stream's received messages; the
// budget's mutex its waiting connections. Where two are held, conn.mu is
// taken before conn.wmu; conn.fmu, the budget's mutex and stream.mu are
// never held with another.
package transport
