// Package convert translates messages between the RocketMQ 5 gRPC protocol
// (rmqpb) and the engine's stored form (engine/message). It has no network
// code and no state.
//
// Publish turns a message a producer sent into the message the engine
// stores, with the property names RocketMQ brokers use (UNIQ_KEY, TAGS,
// KEYS, __SHARDINGKEY, TIMER_DELIVER_MS, TRAN_MSG, ...), so that remoting
// consumers read it as they read messages from Java and Go producers.
// Messages are delivered in the opposite direction by the functions of
// deliver.go.
//
// Every function is safe for concurrent use.
package convert
