// Package rocketmq is the load generator that drives a broker through the
// Apache RocketMQ Go client (github.com/apache/rocketmq-client-go/v2), the
// client real Go applications use, so the figures include its costs.
//
//	produce        SendSync from each producer, one at a time
//	produce_async  SendAsync, Inflight callbacks outstanding per producer
//	consume        one pull consumer per queue (PullFrom is not safe for
//	               concurrent use) reading it with PullFrom, Batch messages
//	               per request
//
// Every producer is its own client instance, so it has its own
// connection (Options.Connections > 0 shares that many instances
// instead). Topic creation and the queue offsets around the pre-load go
// through the remoting generator of package bench/remoting; the measured
// traffic goes through the Go client only.
//
// The client logs through its rlog package; New turns it down to errors.
//
// # Concurrency
//
// A Generator runs one phase at a time.
package rocketmq
