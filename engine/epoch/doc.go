// Package epoch keeps the epochs of a replicated commit log: each time a
// broker becomes master of its group it starts a new epoch, numbered by
// the controller, at its log's end offset. Every member of the group
// records the (epoch, start offset) pairs of the log it holds; a member
// that returns after a failover compares its pairs with the master's
// (ConsistentPoint) to find where the two logs stop agreeing, and
// truncates its log there before it copies the master's.
//
// # File
//
// A File is one small file rewritten whole for every change: written to
// a temporary file, synced, renamed over the old one and the directory
// synced, so a crash leaves the old list or the new one. Integers are
// big-endian:
//
//	 0         4         8         12                      12+12n   16+12n
//	 +---------+---------+---------+------------------------+---------+
//	 |  magic  | version |  count  | entries (12 bytes each) |  CRC    |
//	 +---------+---------+---------+------------------------+---------+
//
//	magic    0x4b45504f, version 1.
//	entry    epoch (u32), start offset (u64).
//	CRC      CRC-32C of everything before it.
//
// Entries are in increasing order of epoch and of start offset; no two
// share a start offset (an epoch that never held a record is replaced,
// not followed). A missing file is an empty list; a damaged one is an
// error, never an empty list: losing the epochs would let a member keep
// records its master does not have.
//
// # Concurrency
//
// A File is safe for concurrent use; its methods take one mutex.
package epoch
