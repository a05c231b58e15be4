// Package commitlog is Karman's commit log: a single append-only log that
// holds every message of every topic, in the order the broker stored them.
// It is the source of truth of the engine; consume queues and key indexes
// are derived from it and can always be rebuilt by scanning it.
//
// The log stores opaque payloads. The engine puts an encoded stored message
// in each one; this package never looks inside.
//
// # Offsets and segments
//
// A position in the log is a global byte offset. The log is split into
// segments of Options.SegmentSize bytes (1 GiB by default). Each segment is a
// file named by the offset of its first byte, written as 20 zero-padded
// decimal digits, created at full size (sparse: the blocks ahead of the
// writer are reserved as it goes; see "Disk space") and mapped read/write:
//
//	00000000000000000000   offsets [0, S)
//	00000000001073741824   offsets [S, 2S)      (S = 1 GiB)
//	00000000002147483648   offsets [2S, 3S)
//
// Segments are contiguous: every base offset is a multiple of the segment
// size and no segment between the first and the last is missing. A segment
// is written once, front to back, and never rewritten; retention deletes
// whole segments from the front.
//
// # Record frames
//
// Every record is stored as one frame. Frames start at offsets that are
// multiples of 8, and all integers are little-endian:
//
//	 0         4         8         12                   12+n         size
//	 +---------+---------+---------+--------------------+------------+
//	 |  magic  |  CRC    | length  | payload (n bytes)  | zero pad   |
//	 +---------+---------+---------+--------------------+------------+
//	 |<------ header (12 bytes) -->|                    |<-- 0..7 -->|
//
//	magic   0x9e2bc35a for a record frame.
//	CRC     CRC-32C (Castagnoli) of the frame's offset as 8 little-endian
//	        bytes, followed by the length field and the payload: it covers
//	        everything that identifies the record, including where it is.
//	        A frame copied to another offset (or found inside another
//	        record's payload) therefore does not verify.
//	length  n, the payload length in bytes.
//	size    12+n rounded up to a multiple of 8 (see FrameSize).
//
// A batch passed to one Append is stored contiguously in one segment. When
// it does not fit in the rest of the current segment, the writer stores an
// end-of-segment marker and continues at the next segment's base:
//
//	 0         4         8         12
//	 +---------+---------+---------+- - - - - - - - - - - - - -+
//	 |  magic  |  CRC    | length  |  unused (zero) up to the   |
//	 |         |         |         |  end of the segment        |
//	 +---------+---------+---------+- - - - - - - - - - - - - -+
//
//	magic   0x71d4a8e6 for an end-of-segment marker.
//	CRC     CRC-32C of the marker's offset (8 bytes) and the length field.
//	length  the number of bytes from the marker to the end of the segment.
//
// Because frames are 8-aligned and segments are a multiple of 4096 bytes,
// the room left at the end of a segment is either zero, 8 bytes (too small
// for a header; readers move on to the next segment) or enough for a marker.
//
// The largest payload is SegmentSize-12 bytes; a batch must fit in one
// segment.
//
// # Checkpoint
//
// The file "checkpoint" records the flushed offset: every frame before it
// was made durable (msync) before the checkpoint was written. It is a single
// 32-byte block rewritten in place and synced:
//
//	 0         4         8                   16                  24        28        32
//	 +---------+---------+-------------------+-------------------+---------+---------+
//	 |  magic  | version |  flushed offset   |   segment size    |  flags  |  CRC    |
//	 +---------+---------+-------------------+-------------------+---------+---------+
//
//	magic   0x4b434b50, version 1.
//	flags   bit 0 (clean): written by Close, after everything was flushed;
//	        the flushed offset is the end of the log. Open clears it
//	        before the log is used.
//	CRC     CRC-32C of bytes [0, 28).
//
// A checkpoint that is missing, fails its CRC, names another segment size or
// points outside the segments present is ignored, and recovery scans from
// the first segment instead. The file "LOCK" holds an advisory lock so that
// only one process opens a directory at a time.
//
// # Recovery
//
// Open trusts the frames before the checkpoint and scans forward from it.
// When a frame does not verify (bad magic, length or CRC), Open looks for a
// later valid frame, in the rest of that segment and then in later ones:
//
//   - if there is one, the bytes in between are corruption in the middle of
//     the log: Open logs the region, reports it through Options.OnCorruption
//     and Corruptions, and carries on. Those bytes are never served; Read
//     returns ErrCorrupt for them and Scan skips and reports them.
//   - if there is none, the log ends there. Any non-zero bytes after that
//     point (a torn tail) are zeroed and synced and any later segments are
//     deleted, so stale bytes can never come back as records.
//
// After a clean shutdown nothing was ever written past the end, so Open
// stops at the first unwritten frame header at the checkpoint without
// looking further. Otherwise the search skips the holes of the segment
// files (SEEK_DATA), so it reads only what was written. Recovery never
// reads a hole through the mapping: a file system that backs mappings
// with memory (tmpfs) allocates a page for a hole that is read, and on a
// full one that read raises SIGBUS.
//
// Corruption before the checkpoint is not looked for at Open; Read and Scan
// verify every frame they return, so it is found when those bytes are read.
//
// # Flushing
//
// With FlushAsync (the default) Append returns once the records are in the
// mapping, so an acknowledged record survives a crash of the process; a
// background goroutine msyncs the written range every FlushInterval and then
// writes the checkpoint. With FlushSync Append returns only after an msync
// covering the batch has completed (group commit): appenders wait, one
// flusher goroutine syncs everything written so far and wakes every appender
// it covered, so concurrent appenders share a sync. Before a sync the
// flusher may wait a little for more appenders: for as many as the last
// sync covered plus those that arrived while it ran, at least as long as
// that sync took and longer when many are still missing (2 ms at most), so
// that appenders who come back from a sync a little apart, as producers
// with a round trip between two messages do, share the next one. With
// FlushSync, appends write their frames to the segment file with pwrite
// instead of copying them into the mapping, so that a sync never has to
// make mapped pages read-only again, and a background goroutine keeps the
// few MiB ahead of the writer written with zeros and synced, so that a
// sync never has to record newly written blocks in the file system's
// journal (see writethrough.go); readers read through the mapping either
// way. The checkpoint is then written at most once per FlushInterval;
// recovery simply scans a little further. A failed sync is permanent: it
// is returned to the waiting appenders and to every later Append.
//
// # Disk space
//
// A segment file holds no blocks when it is made. The blocks in front of
// the writer are reserved with fallocate (by writing zeros where that is
// not supported): a background goroutine keeps at least 2 MiB ahead
// reserved, and an append that reaches past the reserved blocks reserves
// them itself. Nothing is ever stored into a page whose blocks are not
// reserved, so a full disk cannot kill the process with SIGBUS through the
// mapping: the append fails with an error matching ErrNoSpace and
// syscall.ENOSPC, stores nothing, and the log stays usable. A fresh log
// thus takes what it holds plus a few MiB, not two segments.
//
// # Replication
//
// A replica's log is a byte copy of its master's. ReadFrames returns the
// master's record frames as stored, from an offset and within one
// segment; AppendFrames verifies them (magic, length, the checksum at
// their offset, zero padding: CheckFrames) and stores them at the same
// offset on the replica, which must be the replica's end or, where the
// master moved on to its next segment, that segment's base: the replica
// then ends its segment with the same marker the master wrote. Truncate
// cuts a log back to a record boundary (a returning old master drops
// what its successor does not have): it moves the checkpoint back,
// deletes the later segments, last first, and zeroes and syncs the rest
// of the cut segment, so a crash part way leaves a longer prefix, never
// a hole or stale records past the cut.
//
// # Concurrency
//
// All methods are safe for concurrent use. There is one writer at a time
// (appends are serialized); readers (Read, Scan) take no lock at all: they
// see only records before EndOffset, which the writer publishes atomically
// after a batch is completely written. Each segment is reference counted;
// readers hold a reference while they touch its mapping, and retention or
// Close unmaps a segment only after the last reference is released, so
// reads that race with deletion fail with ErrOffsetGone instead of faulting.
//
// Lock order (a goroutine holding one lock may only take locks below it):
//
//	Log.wmu      the writer: reserve space, roll segments, copy, publish end
//	Log.syncMu   one flush at a time: msync, publish flushed offset, checkpoint
//	Log.segMu    changes to the segment list (roll, retention)
//	Log.flushMu  flushed offset, flush error and the appenders waiting for them
//	Log.corrMu   the list of known corrupt regions
//
// Appenders never hold wmu while waiting for a flush. Scan calls its
// callback while holding a segment reference but no lock, so the callback
// may call any method of the Log except Close.
package commitlog
