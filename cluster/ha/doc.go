// Package ha is the replication stream of a broker group: the master
// streams its commit log to its replicas over TCP (--ha-addr, by default
// :10912), each replica stores the records at the master's offsets
// (engine.Replicate) and acknowledges how far it holds the log; the
// master counts the acknowledgements for sync replication
// (engine.Replicator).
//
// # Session
//
//	replica                                   master
//	   | hello: version, broker name, id,        |
//	   |        segment size, log end  --------> |  refuse: another group,
//	   |                                         |  segment size, version
//	   | <-------- welcome: segment size,        |
//	   |           log end, epochs               |
//	   | cut back to the consistent point        |
//	   | (epoch.ConsistentPoint); refuse a       |
//	   | master of an older epoch, or one        |
//	   | sharing no epoch                        |
//	   | ack: where to start  ----------------->  |  refuse: gone (retention)
//	   |                                         |  or past the master's end
//	   | <-------- transfer: epoch, epoch start, |
//	   |           offset, master end, frames    |
//	   | Replicate, then                         |
//	   | ack: the replica's end  -------------->  |  an ack past the master's
//	   |              ...                        |  end closes the link
//
// A transfer carries whole record frames exactly as the master's log
// stores them (commitlog.ReadFrames), from one segment and one epoch;
// the replica verifies every frame's checksum at its offset before it
// stores anything. An idle master sends an empty transfer every
// Heartbeat; either side closes a link silent for Timeout. Backpressure
// is TCP's: the master writes a transfer, and the next, as the replica
// reads them.
//
// # Messages
//
// Every message is a big-endian u32 length (of what follows), a type
// byte and its fields; strings are a u16 length and bytes, offsets i64
// (never negative), epochs u32:
//
//	1 hello     u16 version | name | id | i64 segment size | i64 end
//	2 welcome   i64 segment size | i64 end | u32 n | n × (u32 epoch, i64 start)
//	3 refuse    reason
//	4 ack       i64 offset
//	5 transfer  u32 epoch | i64 epoch start | i64 offset | i64 master end | frames
//	6 metadata  engine.Metadata as JSON (topics, groups, consumer offsets,
//	            pop states, the receipt-handle key)
//
// A message longer than MaxMessage, of an unknown type, with bytes left
// over or with fields out of range (epochs out of order, frames past the
// master's end) is a protocol error and ends the link.
//
// # Metadata
//
// Topics, consumer groups, committed consumer offsets and the pop
// consumers' states (with the key receipt handles are signed with) are
// not in the log: the master sends a snapshot of them (engine.Metadata)
// at the start of each session and then every MetadataInterval (1 s) when
// it changed, and the replica applies it (engine.ApplyMetadata). A
// replica promoted after a failover therefore knows every topic and
// group, resumes consumers from offsets at most that interval old
// (RocketMQ's replicas pull them every 10 s), redelivers to pop consumers
// only what they were handed or acknowledged in that interval, and
// accepts the receipt handles its master issued. The timers' progress is
// not sent: timers, half messages and retries are in the log.
//
// # Sync replication
//
// With MasterOptions.Sync, the engine asks the Master before each send
// (CheckWrite: at least MinInSync members, the master included, in sync;
// else engine.ErrInSyncReplicasNotEnough and nothing is stored) and
// after it (WaitReplicated: MinInSync members hold the log past the
// send's records; else engine.ErrReplicaTimeout after AckTimeout, the
// message stored but not confirmed). A replica is in sync while it holds
// everything, or held everything within MaxLag. An acknowledgement means
// the replica stored the records in its mapped log (it survives the
// replica process's crash), not that it synced them to disk. A replica
// acknowledges once for the transfers it already holds whole in its
// read buffer, and an acknowledgement wakes only the sends it confirms.
// While a replica has not acknowledged its last transfer, the master
// holds back the next one (unless it fills BatchBytes) until the
// acknowledgement comes or MasterOptions.HoldBack passes, so the appends
// of that time go in one transfer: under load a replica stores,
// acknowledges and wakes once per round trip, not once per append.
// A master without sync replication is an engine.Waiter that never
// waits, so front-ends answer its sends as a single broker's.
//
// # Concurrency
//
// A Master serves any number of links, one goroutine pair each; its
// methods are safe for concurrent use. A Replica runs one session at a
// time; Lag may be called concurrently.
package ha
