// Package jetstream is the peer side of the protocol benchmark: an
// embedded NATS server with JetStream (file storage) and a load generator
// using the nats.go JetStream API, doing the same work as the Karman
// generators so both print side by side.
//
//	produce        js.Publish from each producer, one at a time
//	produce_async  js.PublishAsync with Inflight acks outstanding per producer
//	consume        a durable pull consumer (AckNone, the closest match to
//	               pulling by offset) read with Fetch(Batch) by Consumers
//	               goroutines
//
// Every producer and every puller has its own connection. Each phase
// starts from a new, empty stream that captures the workload's topic as
// its subject. Latency is per request: publish to acknowledgement, or
// Fetch to the last message of the batch.
//
// Server starts nats-server in this process on a loopback port chosen at
// run time, storing in a temporary directory. Its sync interval is the
// server's default (2 minutes), or every write (sync_interval: always)
// with ServerOptions.SyncAlways.
//
// # Concurrency
//
// A Generator runs one phase at a time.
package jetstream
