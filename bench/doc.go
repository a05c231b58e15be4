// Package bench measures messaging systems over their network protocols
// and prints the figures of several systems side by side: Karman through
// RocketMQ remoting, and a peer broker (NATS JetStream) doing the same
// work in the same run.
//
// A run is one Workload (message size and count, producers, requests in
// flight per producer, messages per pull) and one Mode. Each Target pairs
// a system with the Generator driving it; Run drives the targets one
// after the other and writes one Result per target and phase:
//
//	produce        Inflight 1: every producer waits for each acknowledgement
//	produce_async  Inflight K: K sends outstanding per producer
//	consume        pull Count pre-loaded messages, Batch per request
//
// The generators live in sub-packages: remoting (Karman's own remoting
// client), rocketmq (the Apache RocketMQ Go client) and jetstream (an
// embedded NATS server and the nats.go JetStream API). Latency is
// recorded per request into a latency.Histogram, which never allocates.
//
// # Concurrency
//
// A Generator runs one phase at a time; Run calls them sequentially so
// the systems never compete for the machine. An Observer attached with
// WithObserver (a profiler) is told when the measured part of a phase
// begins and ends.
package bench
