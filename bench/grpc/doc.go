// Package grpc is the load generator that speaks RocketMQ 5 gRPC
// (apache.rocketmq.v2.MessagingService) with Karman's generated stubs
// (protocol/grpc/rmqpb). It sends what a RocketMQ 5 client sends, one
// message per SendMessage and a ReceiveMessage stream per receive, without
// a client's bookkeeping, so the figures measure the server.
//
// Every connection first opens a Telemetry stream and declares its
// settings, as clients do, and waits for the server's answer.
//
// Produce asks for the topic's route (QueryRoute, which creates the topic
// on a server that auto-creates topics), then runs Producers × Inflight
// senders, each waiting for its own SendMessage answer; the senders of a
// producer share its connection.
//
// Consume pre-loads the messages (not measured), then runs one receiver
// per queue of the topic (or Consumers receivers): each asks for Batch
// messages at a time with ReceiveMessage and acknowledges what it got with
// one AckMessage, until Count messages have been received and
// acknowledged. As a push consumer does, a receiver asks for its next
// batch while the acknowledgement of the previous one is in flight (one
// at most), so an acknowledgement costs no round trip of its own.
//
// The requests of the measured phases are encoded by hand, and their
// answers read straight from the wire for what the generator needs (the
// status, and each received message's id and receipt handle), so that the
// generator costs about as little per message as the remoting one.
//
// # Concurrency
//
// A Generator is safe for concurrent use, but its phases are meant to run
// one at a time: they compete for the machine otherwise.
package grpc
