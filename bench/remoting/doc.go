// Package remoting is the load generator that speaks RocketMQ remoting
// with Karman's own client (protocol/remoting/peer): it sends exactly what
// the RocketMQ Go client sends, without the client's bookkeeping, so the
// figures measure the server.
//
// Produce resolves the topic's route from the name server
// (GET_ROUTEINFO_BY_TOPIC), creating the topic on every master broker
// when it has none (UPDATE_AND_CREATE_TOPIC), then runs the producers.
// Each producer sends SEND_MESSAGE with a JSON header carrying the V1
// field names, version 317 and language GO, cycling over the topic's
// writable queues. The command and its extFields map are built once per
// in-flight slot; per message only the UNIQ_KEY property, the born time
// and the queue change. With Inflight above 1 a producer runs that many
// slots on its connection, each waiting for its own response, so the
// connection is pipelined. SYSTEM_BUSY and flow-control answers are
// retried after a short pause and counted.
//
// Consume pre-loads the messages (not measured), waits until the broker
// has indexed them all (GET_MAX_OFFSET), then pulls every queue from
// where the pre-load began to where it ended with PULL_MESSAGE, Batch
// messages per request, as the Go push consumer does (subscription "*",
// commit-offset and suspend flags). Messages are counted by walking the
// TOTALSIZE fields of the response body; nothing else is decoded.
//
// # Connections
//
// By default every producer (and every puller) owns its connection to
// each broker. Options.Connections > 0 makes them share that many
// connections per broker instead.
//
// # Concurrency
//
// A Generator is safe for concurrent use, but its phases are meant to
// run one at a time: they compete for the machine otherwise.
package remoting
