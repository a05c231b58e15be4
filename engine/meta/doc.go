// Package meta stores the broker's metadata: topic and consumer-group
// configurations and consumer offsets, in a pebble database of its own.
//
// Unlike the consume-queue index, metadata is not derived from the commit
// log, so every write goes through pebble's write-ahead log and is synced
// before it returns. Topics and groups are also cached in memory; offsets are
// read from pebble.
//
// Keys:
//
//	't' name                                  → JSON Topic
//	'g' name                                  → JSON Group
//	'o' len(group) group len(topic) topic qid → big-endian int64 offset
//	'p' len(group) group len(topic) topic qid → pop state (package pop)
//	's' name                                  → a broker secret
//	'u' name                                  → an access-control user with its
//	                                            policies (package acl, JSON)
//	'f' len(namespace) namespace key          → front-end state (State)
//
// A Store is safe for concurrent use.
package meta
