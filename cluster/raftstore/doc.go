// Package raftstore is a durable log and stable store for
// github.com/hashicorp/raft (v1.7.2) on pebble, the storage engine the
// broker's engine already uses: the controller quorum keeps its raft log
// and its term and vote in one pebble database per node.
//
// # Keys and values
//
//	'l' | index (u64, big-endian)   one raft.Log, encoded as below
//	's' | key                       a StableStore value
//
// A log entry is encoded big-endian:
//
//	0        8        16   17            25        29          29+n      33+n        33+n+m
//	+--------+--------+----+-------------+---------+-----------+---------+-----------+
//	| index  | term   |type| appended at | n (u32) | data      | m (u32) | extensions|
//	+--------+--------+----+-------------+---------+-----------+---------+-----------+
//
// (appended at: Unix nanoseconds, or 0 for the zero time). Every write is
// synced (pebble.Sync) before it returns: raft relies on its log and vote
// surviving a crash.
//
// Get of a missing stable key returns ErrKeyNotFound, whose text is the
// "not found" raft looks for; GetUint64 of a missing key returns 0, as
// raft's own stores do.
//
// # Concurrency
//
// A Store is safe for concurrent use (pebble's own guarantees).
package raftstore
