// Package enginebench measures the embedded engine: how fast messages are
// appended, and how fast they are read back with Pull.
//
// Run opens an engine in a data directory, creates one topic, sends Count
// messages of Size bytes from Producers goroutines (one Send per message,
// or one SendBatch per Batch messages), waits until everything is indexed,
// then pulls every queue from its first offset to its last, 32 messages per
// call, from Readers goroutines. Each phase prints one JSON line. Latency
// is measured per call (a Send, a SendBatch or a Pull) into a fixed-size
// histogram per goroutine, so the measuring loop allocates nothing.
//
// Throughput counts message body bytes; MB means 10^6 bytes.
//
// Concurrency: each producer and reader goroutine has its own histogram,
// merged after the phase; Run itself is not meant to run concurrently in
// one data directory.
package enginebench
