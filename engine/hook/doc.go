// Package hook declares the engine's hook points: small interfaces a
// program (or the plugin host standing in for an out-of-process plugin)
// implements to see, change, reject or drop messages on their way into
// and out of the engine. The engine imports this package, not the other
// way round, so a plugin needs nothing heavier than it and package
// message.
//
// # Installing hooks
//
// Hooks are values in engine.Options.Hooks, an ordered []any. At Open the
// engine asks each value which of the interfaces below it implements (one
// value may implement several) and keeps one ordered slice per kind; a
// value that implements none is refused. Hooks of one kind run in the
// order they were listed, each seeing what the ones before it changed;
// the first error stops the call.
//
// # The hook points
//
// BeforeStore runs once per send call before anything is stored: a
// single send is a batch of one, a batch send is one call. It gets the
// batch's topic, the queue asked for, the caller (Client, from the
// context) and copies of the messages with their properties decoded. It
// may change properties, tags and keys (tags and keys are properties),
// which are stored and seen by every consumer; changes to any other field
// (topic, body, flags) and to the Messages slice itself are ignored. It
// may reject the whole batch by returning Reject(reason): nothing of the
// batch is stored and the sender gets an error matching ErrRejected (and
// engine.ErrRejected) with the reason. Any other error fails the send
// with engine.ErrHookFailed. Store hooks run before the topic is looked
// up or auto-created, so a rejected send creates nothing, and before the
// engine validates the messages, so what a hook adds is validated like
// the rest (a DELAY it sets is honoured, a property too long is refused).
// Sends of the engine itself (retries, dead letters, scheduled messages
// falling due, committed transactions) are not producer sends and do not
// run store hooks; a transactional half message does, when it is sent.
//
// BeforeDeliver runs once per pull, and once per queue a pop takes
// messages from, before messages are handed to a consumer group. It gets
// the topic (or light queue), the queue, the group, the caller and the
// messages decoded, in queue order, and may drop any of them with
// DeliverBatch.Drop. A dropped message is treated as a message the
// consumer's filter did not match: a pull's next offset moves past it,
// a pop acknowledges it. Returning Reject(reason) fails the whole pull or
// pop with ErrRejected; any other error with engine.ErrHookFailed; a pop
// that fails so hands its messages back, visible again at once, without
// counting the attempt. The group of a pull is the Client's Group (a pull
// names no group); the group of a pop is the pop's.
//
// Authenticator and Authorizer are not called by the engine but by the
// front-ends, on every request they serve, before they act on it: the
// engine sorts them into its Set (engine.Engine.Hooks) and front-ends
// take them from there, so installing one in Options.Hooks guards every
// protocol at once.
//
// Authenticate gets the credentials the request carries (Credentials:
// the access key, the signature, what it signs, a security token and the
// raw fields) and returns the Principal they prove, or an error matching
// ErrUnauthenticated (Unauthenticated(reason)). The front-end only
// extracts; the hook verifies (package rmqauth checks RocketMQ's
// HMAC-SHA1 signatures). Authenticators are asked in order and the first
// to accept wins; when all refuse, the first refusal is answered. A
// request without credentials is passed on too, with an empty AccessKey:
// an Authenticator may accept it as an anonymous principal. With no
// Authenticator installed every client is the zero (anonymous)
// Principal.
//
// Authorize gets the principal, an Action (Pub, Sub, or an
// administration action: Create, Update, Delete, Get, List) and the
// Resource it is on (a Topic, Group or Cluster, by name), once for each
// resource the request touches: a pull asks Sub on its topic and Sub on
// its group. Every Authorizer must allow; the first refusal (Deny(reason),
// matching ErrDenied) refuses the request. Front-ends answer a refusal of
// either kind with the protocol's status (remoting NO_PERMISSION, gRPC
// UNAUTHORIZED or FORBIDDEN) and the reason.
//
// Both run on the goroutine serving the request, possibly the one that
// reads the client's connection: they must be quick (a map look-up, an
// HMAC) and cache anything slower themselves. Remoting requests are
// authenticated one by one (each signs its own fields and body); gRPC
// calls each carry a signature of their date-time header.
//
// # Caller information
//
// Front-ends put a *Client into the context of the calls they make for a
// client (NewContext); the engine copies it into each batch so that a
// plugin that cannot see the context still has it. Programs that embed
// the engine may leave it out: the batch then carries a zero Client.
// The Client carries the Principal the Authenticators established, so a
// store or delivery hook knows who sent or consumes. Front-ends fill it
// only when the engine has hooks; with none it costs nothing.
//
// # Concurrency and cost
//
// Hooks are called from many goroutines at once (every send and pull runs
// them on the caller's goroutine) and must be safe for concurrent use. A
// batch and its messages belong to the call: a hook must not keep them,
// or anything they point to, after it returns. A delivery hook runs while
// the engine holds the pop state of the queue, so a slow hook slows that
// queue's consumers; it must not call back into the engine for the same
// group and queue.
//
// With no hook of a kind installed, its hook point costs one length check
// (front-ends check at start-up and route requests unwrapped)
// and the engine's paths are unchanged: a pull stays zero-copy. With one
// installed, a store hook costs a copy of each message header and a
// decode of its properties; a delivery hook a decode of each message
// delivered (body included). Out-of-process plugins are called per batch,
// never per message, for that reason.
package hook
