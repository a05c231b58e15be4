// Package route routes stored messages to MQTT subscriptions: it is the
// engine.Router of the MQTT front-end.
//
// Every distinct topic filter that some session subscribes to (shared
// subscriptions included, by their filter) has one light queue, named
// QueueName(filter): "%LMQ%mqtt_" and 32 hex digits of the filter's
// SHA-256. When the engine indexes a record of a user topic, Route names
// the queues of the filters that match its MQTT name (package mapping:
// originMqttTopic, else topic/tag, else topic), so a message published
// once, over MQTT or by a RocketMQ client, is referenced by every
// matching filter's queue and copied nowhere. Sessions keep an offset
// per filter queue, as consumer groups do per queue.
//
// The set of filters is engine state (namespace "mqtt", keys "r/"+filter)
// so that records replayed after a crash reach the filters in force;
// counts of subscribers are in memory: the server adds its persistent
// sessions' filters at start and then Sweeps those nobody holds.
//
// A Router is safe for concurrent use; Route runs on the engine's one
// dispatcher goroutine and matches with a topic.Tree under its read lock.
package route
