// Package pop holds the state of message-granularity consumption (RocketMQ
// 5 "pop"): which messages of a queue a consumer group has been handed,
// until when each stays invisible, how often each was delivered, and which
// are acknowledged; and the receipt handles that name one delivery.
//
// A Queue is the state of one (group, topic, queue). Offsets below
// AckedBelow are done (acknowledged or dead-lettered). Offsets in
// [AckedBelow, Cursor) are either in flight or done (listed in Done).
// Offsets at or above Cursor have never been delivered. The engine keeps a
// Queue in memory, guarded by its own mutex, and persists its binary form.
//
// A receipt handle is printable text: the fields of a Handle separated by
// spaces, ending with a MAC over them and the group, so a forged or
// corrupted handle is refused:
//
//	"1 <topic> <queue> <offset> <nonce> <deadline ms> <mac hex>"
//
// The nonce changes with every delivery and every change of invisible
// time, so a stale handle never acknowledges a later delivery.
package pop
