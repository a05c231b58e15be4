// Package server accepts RocketMQ remoting connections and routes each
// request to the handler registered for its code.
//
// Every accepted connection becomes a Conn, which wraps a peer.Peer: the
// peer decodes frames, and the server bounds how many requests of each
// Kind run at once. Requests registered with Mux.HandleInline run on the
// goroutine that reads the connection, and their responses are written
// together once nothing more is waiting to be read; other requests (and
// inline ones that must wait for a worker slot, or call Detach) run on a
// goroutine of their own, reused by the connection. A request that
// finds its kind at capacity waits in a bounded queue; past that, or while
// Options.Busy reports the broker overloaded, it is answered SYSTEM_BUSY
// at once, which RocketMQ clients understand as flow control. Unknown codes
// get REQUEST_CODE_NOT_SUPPORTED, a panicking handler SYSTEM_ERROR, and the
// connection keeps serving.
//
// Options.MaxInflightBytes bounds the memory of the requests read and not
// yet handled across all connections (a peer.Budget shared by every
// Conn): a connection that finds it spent is read no further until there
// is room, so TCP slows its client down.
//
// Handlers can reach the client through the Conn they are given (for
// server-initiated requests such as CHECK_TRANSACTION_STATE). A connection
// that sends nothing for Options.IdleTimeout is closed (within an eighth
// of it more).
//
// A Server is safe for concurrent use. Handlers run concurrently, also for
// requests of one connection, except that inline requests of one
// connection run one after the other until one detaches.
package server
