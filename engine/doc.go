// Package engine is the broker core of Karman: the store and the messaging
// semantics every front-end (RocketMQ remoting, gRPC, MQTT) and every
// embedding program share. It opens no sockets.
//
// An Engine keeps one data directory:
//
//	commitlog/  every message of every topic, appended in arrival order (package commitlog)
//	index/      consume queues, light queues and the key index, derived from the log (packages queue, index)
//	meta/       topics, consumer groups and consumer offsets (package meta)
//
// A send validates the message, encodes it as a RocketMQ stored record and
// appends it to the commit log, which assigns its queue offset and
// commit-log offset under one lock. A dispatcher goroutine follows the log
// and indexes each record into its queue (and any light queues it names)
// and into the key index, taking the appends of Options.DispatchDelay
// together in one index batch (a replica's of at least 2ms; a master
// that waits for replicas indexes what they confirmed, woken by
// ReplicasAcked); a pull reads the queue index and then the records
// from the log, verifying each record's checksum. After a crash, Open
// truncates a torn tail of the log and replays the log past the index's
// checkpoint, so every acknowledged message becomes pullable again.
//
// Hooks (Options.Hooks, package hook) see every producer batch before it
// is stored and every batch a pull or pop is about to deliver; with none
// installed a hook point is a length check. Follow reads the commit log
// itself in order from an offset, waiting for appends: what connectors
// and replication build on.
//
// Delivery history: per consumer group, the engine keeps in memory its
// latest deliveries (a pull's range, each pop) with the consumer that got
// them, and what became of them (commits, acks, invisibility changes,
// retries, dead letters); Deliveries answers what it holds of a message.
// Recording one costs a copy under the group's mutex on the pull and pop
// paths. The history is saved to the file "deliveries" of the engine's
// directory when it closes and every 30 seconds while it changes (written
// whole and renamed, with a CRC), and read back at open: a restart keeps
// it, a crash loses at most its last 30 seconds.
//
// Replication: an engine is a master or a replica (Options.Replica,
// Promote, Demote). A replica refuses sends with ErrNotMaster and stores
// its master's frames at the master's offsets (ReadFrames on the master,
// Replicate on the replica), dispatching them itself; epochs (package
// epoch) and Truncate let a returning master cut back what its successor
// does not have. Options.Replicator makes sends wait for replicas.
//
// Concurrency: every exported method of Engine is safe for concurrent use.
// Lock order: commit-log append lock → (nothing); a queue's waiter mutex and
// the dispatcher's mutex are leaves. Send never waits for the dispatcher.
package engine
