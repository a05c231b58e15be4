// Package admin is the administration client behind "karman admin": it
// manages topics, consumer groups, offsets, messages and dead letters of a
// RocketMQ cluster over the remoting protocol, the way RocketMQ's mqadmin
// does, so it works against Karman and Java brokers alike.
//
// A Client asks the name servers where things are (GET_BROKER_CLUSTER_INFO
// for the brokers, GET_ROUTEINFO_BY_TOPIC for a topic's brokers and
// queues) and then talks to each broker master directly. Every operation
// returns a plain result value whose JSON field names are stable, for
// scripts; rendering it for people is the caller's business.
//
// # Requests
//
//	cluster list        106 GET_BROKER_CLUSTER_INFO (name server), 28 GET_BROKER_RUNTIME_INFO per broker
//	cluster wipe-write  205 WIPE_WRITE_PERM_OF_BROKER per name server (add-write: 327 ADD_WRITE_PERM_OF_BROKER)
//	topic create/update 17 UPDATE_AND_CREATE_TOPIC on every master (+ 105 to wait for the route)
//	topic list          206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 21 GET_ALL_TOPIC_CONFIG per master
//	topic describe      105, 21, then 202 GET_TOPIC_STATS_INFO per broker
//	                    (falling back to 31 GET_MIN_OFFSET / 30 GET_MAX_OFFSET per queue)
//	topic delete        215 DELETE_TOPIC_IN_BROKER per master, 216 DELETE_TOPIC_IN_NAMESRV per name server
//	group create/update 200 UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (Java SubscriptionGroupConfig JSON)
//	group list          201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG per master
//	group describe      201, 203 GET_CONSUMER_CONNECTION_LIST (falling back to 38
//	                    GET_CONSUMER_LIST_BY_GROUP), 208 GET_CONSUME_STATS (falling back to
//	                    14 QUERY_CONSUMER_OFFSET + 30 GET_MAX_OFFSET per queue)
//	group status        203 per master, then 307 GET_CONSUMER_RUNNING_INFO for each online
//	                    consumer, on a broker it is connected to (the broker asks the consumer)
//	group delete        207 DELETE_SUBSCRIPTIONGROUP per master
//	offset reset        222 INVOKE_BROKER_TO_RESET_OFFSET per broker of the topic (falling
//	                    back, when the broker does not support it or no consumer is online,
//	                    to 29 SEARCH_OFFSET_BY_TIMESTAMP + 15 UPDATE_CONSUMER_OFFSET per queue)
//	message get         33 VIEW_MESSAGE_BY_ID for offset message ids, else 12 QUERY_MESSAGE
//	                    with _UNIQUE_KEY_QUERY=true
//	message query       12 QUERY_MESSAGE per broker of the topic
//	message send        105, then 10 SEND_MESSAGE to the first master with the topic writable
//	message browse      105, 31 GET_MIN_OFFSET, 30 GET_MAX_OFFSET, 11 PULL_MESSAGE as TOOLS_CONSUMER
//	broker config       26 GET_BROKER_CONFIG per master; set: 25 UPDATE_BROKER_CONFIG per master
//	stats               twice, an interval apart: topic list, 202 GET_TOPIC_STATS_INFO per topic
//	                    and master, 201 and 208 GET_CONSUME_STATS per group and master
//	message consume     as message get, then 309 CONSUME_MESSAGE_DIRECTLY on the message's
//	                    broker (the broker hands the message to the consumer)
//	dlq list            105 for %DLQ%<group>, then per queue 29 SEARCH_OFFSET_BY_TIMESTAMP,
//	                    30 GET_MAX_OFFSET and 11 PULL_MESSAGE as TOOLS_CONSUMER (nothing committed)
//	dlq resend          30000 KARMAN_RESEND_DEAD_LETTER (see wire.ResendDeadLetterRequestHeader),
//	                    falling back to reading the dead letter and sending it with 10 SEND_MESSAGE;
//	                    with --all, --begin or --end the dead letters dlq list finds, one by one
//
// Bodies keyed by message queue (consume stats, topic stats, reset
// offsets) are read in all three forms brokers write them: Java's fastjson
// maps with object keys, maps whose keys are strings holding the queue's
// JSON, and arrays of [queue, value] pairs.
//
// # Errors
//
// A name server or broker that cannot be reached gives an error saying so
// ("cannot reach name server 10.0.0.1:9876: ..."); a response with a code
// other than SUCCESS a *ResponseError carrying the request, the code and
// the remark. Missing topics, groups and messages match ErrTopicNotFound,
// ErrGroupNotFound and ErrMessageNotFound.
//
// # Concurrency
//
// A Client keeps one connection per address and may be used by several
// goroutines at once; its operations run their requests one after another.
// Close closes every connection.
package admin
