// Package registry is the broker's live view of its clients, shared by
// every front-end (RocketMQ remoting, gRPC, MQTT) and by embedding
// programs: which clients are connected, the producer and consumer groups
// they belong to, what each consumer group subscribes, and which client
// holds which queue lock for orderly consumption. Nothing here is
// persisted; after a restart clients re-register with their next
// heartbeat.
//
// # Clients and groups
//
// A client is identified by its ClientID and registers with Heartbeat, a
// full statement of its producer and consumer groups: groups it no longer
// lists are left. The front-end passes an opaque Conn with it, handed back
// by Client, Consumers, Producers and ProducerConn so the front-end can
// reach the client again (NOTIFY_CONSUMER_IDS_CHANGED, transaction checks).
// A client disappears when it unregisters, when its connection closes
// (Disconnect), or when it has been silent longer than Options.Expiry
// (Expire, which the engine calls periodically). Clients never unregister
// reliably, so the last two are what normally remove them.
//
// Each consumer group has one effective subscription per topic, as in
// RocketMQ: among the group's clients subscribing a topic, the highest
// subscription Version (the latest subscribe) wins. Heartbeat, Unregister,
// Disconnect and Expire return the consumer groups whose membership or
// effective subscriptions changed, the groups whose clients should
// rebalance; Watch streams the same changes one by one.
//
// # Queue locks
//
// Lock, Unlock and LockedBy implement LOCK_BATCH_MQ and UNLOCK_BATCH_MQ: a
// lock on (group, queue) belongs to one client until unlocked, until it
// goes Options.LockExpiry without renewal, or until its holder leaves the
// group, unregisters or expires. A client whose connection closes keeps its
// locks until they expire (as Java brokers do): it may still be consuming
// messages it fetched under them, and another consumer taking the queue at
// once would break the order. A client that reconnects renews them.
//
// # Allocation
//
// AllocateAveragely and AllocateAveragelyByCircle reproduce the RocketMQ
// clients' queue allocation exactly, for servers that assign queues
// themselves.
//
// # Concurrency
//
// Every method of Registry is safe for concurrent use. Membership state is
// guarded by one RWMutex (queries share it, updates hold it exclusively);
// queue locks by a separate mutex, so Lock does not wait for heartbeats.
// Lock order: registry mutex, then lock-table mutex, then a watcher's
// mutex. The registry never calls a Conn, and reads Options.Now before it
// takes any mutex.
//
// Watchers never block the registry: each has a backlog of its own drained
// by its own goroutine, and a watcher that falls Options.WatchBacklog
// changes behind receives one Resync per affected group instead of the
// individual changes. The goroutine ends, and the channel is closed, when
// the watch's context is done.
//
// Conn values are compared with == and used as map keys, so their dynamic
// types must be comparable (pointer types are). Results are copies that the
// caller owns; Heartbeat copies what it keeps from its argument.
package registry
