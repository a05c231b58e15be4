// Package transport serves gRPC services over HTTP/2 (cleartext, prior
// knowledge, as gRPC clients dial), doing per call only what the gRPC
// protocol asks for.
//
// It is a drop-in for the parts of grpc.Server the MessagingService uses:
// services register through the generated Register functions (Server is a
// grpc.ServiceRegistrar), handlers run through the generated method and
// stream handlers with the same interceptors, codec, metadata, peer and
// status errors, so a service runs unchanged on either server.
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
// than gzip, and keepalive enforcement (client pings are answered).
//
// Flow control: each stream is given Options.WindowSize and the connection
// Options.ConnWindowSize for what clients send. The connection window is
// credited as data arrives; a stream's window as its messages are
// consumed, so a handler that stops reading stops its client, and a
// message larger than the window is credited as it is assembled. What the
// server sends respects the windows the client grants; a sender blocks
// until the client credits more, the stream ends or the connection closes.
//
// Locks: conn.mu guards the stream table and the connection's state;
// conn.wmu guards everything written (the buffer, the HPACK encoder, the
// send windows and each stream's send state); stream.mu guards a stream's
// received messages. Where two are held, conn.mu is taken before conn.wmu,
// and stream.mu is never held with either.
package transport
