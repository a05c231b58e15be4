// Package pop holds the state of message-granularity consumption (RocketMQ
// 5 "pop"): which messages of a queue a consumer group has been handed,
// until when each stays invisible, how often each was delivered, and which
// are acknowledged; and the receipt handles that name one delivery.
//
// A Queue is the state of one (group, topic, queue). Offsets below
// AckedBelow are done (acknowledged or dead-lettered). Offsets in
// [AckedBelow, Cursor) are either in flight or done (listed in Done, as
// runs of consecutive offsets, so that a message held in flight while
// the ones after it are acknowledged costs a run, not an entry each).
// Offsets at or above Cursor have never been delivered. The engine keeps a
// Queue in memory, guarded by its own mutex, and persists its binary form.
//
// A receipt handle is text (printable as long as the topic name is, which
// RocketMQ's naming rules ensure) that names a delivery and carries a MAC
// over it and the group, so a forged or corrupted handle, or one issued to
// another group or by a broker with another key, is refused. Signer
// writes version 2:
//
//	"2 <topic> <tail>"
//
// where the tail is 43 characters of unpadded base64url (RFC 4648 section
// 5) of 32 bytes: queue (4), offset (8), nonce (4), deadline in ms (8),
// each big-endian and two's complement, then the MAC (8). The tail has a
// fixed length, so the topic is whatever lies between "2 " and the last
// 44 characters. The MAC is AES-128-CBC-MAC over the lengths of the group
// and the topic (8 bytes each), the group, the topic and the 24 bytes of
// fields, each zero-padded to whole blocks; the state after the names is
// cached per (group, topic), so a handle costs two block encryptions.
//
// Version 1, written before, stays accepted so that the handles a broker
// issued before an upgrade still acknowledge their messages:
//
//	"1 <topic> <queue> <offset> <nonce> <deadline ms> <mac hex>"
//
// with decimal fields and an AES-256-CBC-MAC (under another key derived
// from the same secret) over the lengths of the group and the text before
// the MAC, then both.
//
// A handle has one valid text per version: Decode refuses any other
// spelling of the same fields (non-canonical base64 or decimal, upper-case
// hex), and only the broker can produce either version's MAC.
//
// The nonce changes with every delivery and every change of invisible
// time, so a stale handle never acknowledges a later delivery.
package pop
