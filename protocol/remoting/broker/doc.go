// Package broker is the RocketMQ remoting broker: it serves the requests
// of remoting producers, consumers and administration tools from an
// engine. Like every front-end it only translates: it decodes a request,
// calls the engine, and encodes the engine's answer (or error) the way
// RocketMQ clients expect. Topics, queues, messages, offsets, groups,
// clients and queue locks all live in the engine, shared with the other
// front-ends.
//
// # Requests
//
// One file per request kind:
//
//	send.go                 SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE(_V2)
//	transaction.go          END_TRANSACTION; CHECK_TRANSACTION_STATE to producers
//	pull.go                 PULL_MESSAGE and LITE_PULL_MESSAGE with long polling
//	client_config.go        CHECK_CLIENT_CONFIG (can the broker filter by this subscription?)
//	heartbeat.go            HEART_BEAT, UNREGISTER_CLIENT
//	consumer_list.go        GET_CONSUMER_LIST_BY_GROUP
//	consumer_offset.go      QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET
//	queue_offset.go         GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME
//	lock.go                 LOCK_BATCH_MQ, UNLOCK_BATCH_MQ
//	send_back.go            CONSUMER_SEND_MSG_BACK
//	query_message.go        QUERY_MESSAGE
//	view_message.go         VIEW_MESSAGE_BY_ID
//	topic_admin.go          UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG, GET_TOPIC_CONFIG
//	group_admin.go          UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
//	                        GET_SUBSCRIPTIONGROUP_CONFIG, DELETE_SUBSCRIPTIONGROUP
//	consumer_connection.go  GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST
//	consume_stats.go        GET_CONSUME_STATS
//	topic_stats.go          GET_TOPIC_STATS_INFO
//	consumed_by.go          QUERY_TOPIC_CONSUME_BY_WHO, QUERY_TOPICS_BY_CONSUMER
//	runtime_info.go         GET_BROKER_RUNTIME_INFO
//	broker_config.go        GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG (suspendMaxTimeMills only)
//	notify.go               NOTIFY_CONSUMER_IDS_CHANGED and RESET_CONSUMER_CLIENT_OFFSET to consumers
//	consumer_relay.go       GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY, passed on to one consumer
//
// errors.go holds the one table that maps engine errors to response
// codes; body.go the JSON bodies of the administration requests. Codes the
// broker does not register are answered REQUEST_CODE_NOT_SUPPORTED by the
// server.
//
// # Wiring
//
// A Broker is mounted on a server.Mux with Register; the server it runs in
// should call Broker.OnClose when a connection closes (so its clients are
// forgotten) and ask Broker.Busy before each request (flow control).
// Start creates the auto-create template topic TBW102 (when
// Options.AutoCreateTopics is on) and starts the background work; Close
// stops it. The name servers are told about topics
// by whoever registers the broker with them: TopicConfigs lists the
// topics, and TopicsChanged fires when the broker created or deleted one.
//
// # Concurrency
//
// A Broker is safe for concurrent use: handlers run concurrently, also for
// requests of one connection. Its own state is a few atomics and a
// sync.Map of known topic names; everything else is the engine's, which is
// safe for concurrent use. Background goroutines (change notifications,
// engine events, flow-control sampling) end with Close.
package broker
