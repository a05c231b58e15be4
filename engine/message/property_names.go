package message

// Property names used by RocketMQ clients and brokers. Names are
// case-sensitive.
const (
	// Set by producers.
	PropertyTags        = "TAGS"          // tag of the message (a single tag)
	PropertyKeys        = "KEYS"          // business keys, separated by KeySeparator
	PropertyUniqKey     = "UNIQ_KEY"      // client message id
	PropertyWait        = "WAIT"          // "true": reply after the message is stored
	PropertyShardingKey = "__SHARDINGKEY" // FIFO message group (gRPC and Java clients)
	// PropertyGoShardingKey is the name the Go remoting client uses for its
	// sharding key. It is not the message group of PropertyShardingKey.
	PropertyGoShardingKey = "SHARDING_KEY"

	// Delayed and timer messages.
	PropertyDelayLevel       = "DELAY"              // delay level, 1..18
	PropertyTimerDeliverMS   = "TIMER_DELIVER_MS"   // absolute delivery time, ms since the epoch
	PropertyTimerDelaySec    = "TIMER_DELAY_SEC"    // delay relative to the send, seconds
	PropertyTimerDelayMS     = "TIMER_DELAY_MS"     // delay relative to the send, ms
	PropertyTimerOutMS       = "TIMER_OUT_MS"       // broker timer bookkeeping
	PropertyTimerEnqueueMS   = "TIMER_ENQUEUE_MS"   // broker timer bookkeeping
	PropertyTimerDequeueMS   = "TIMER_DEQUEUE_MS"   // broker timer bookkeeping
	PropertyTimerRollTimes   = "TIMER_ROLL_TIMES"   // broker timer bookkeeping
	PropertyTimerDelUniqKey  = "TIMER_DEL_UNIQKEY"  // broker timer bookkeeping
	PropertyStartDeliverTime = "__STARTDELIVERTIME" // legacy absolute delivery time, ms

	// Transactions.
	PropertyTransactionPrepared            = "TRAN_MSG" // "true": half message
	PropertyProducerGroup                  = "PGROUP"
	PropertyTransactionID                  = "__transactionId__"
	PropertyTransactionPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET"
	PropertyTransactionCheckTimes          = "TRANSACTION_CHECK_TIMES"
	PropertyCheckImmunitySeconds           = "CHECK_IMMUNITY_TIME_IN_SECONDS"

	// Where a rerouted (scheduled, half, timer, retry) message belongs.
	PropertyRealTopic          = "REAL_TOPIC"
	PropertyRealQueueID        = "REAL_QID"
	PropertyRetryTopic         = "RETRY_TOPIC"
	PropertyOriginMessageID    = "ORIGIN_MESSAGE_ID"
	PropertyReconsumeTime      = "RECONSUME_TIME"
	PropertyMaxReconsumeTimes  = "MAX_RECONSUME_TIMES"
	PropertyDLQOriginTopic     = "DLQ_ORIGIN_TOPIC"
	PropertyDLQOriginMessageID = "DLQ_ORIGIN_MESSAGE_ID"

	// Set by consumers on messages they received.
	PropertyMinOffset        = "MIN_OFFSET"
	PropertyMaxOffset        = "MAX_OFFSET"
	PropertyConsumeStartTime = "CONSUME_START_TIME"

	// Request/reply.
	PropertyCluster       = "CLUSTER"
	PropertyCorrelationID = "CORRELATION_ID"
	PropertyReplyToClient = "REPLY_TO_CLIENT"
	PropertyTTL           = "TTL"
	PropertyArriveTime    = "ARRIVE_TIME"
	PropertyPushReplyTime = "PUSH_REPLY_TIME"
	PropertyMessageType   = "MSG_TYPE" // "reply" for reply messages

	// Light message queues: PropertyInnerMultiDispatch lists, separated by
	// MultiDispatchSeparator, the extra queues the message is also indexed
	// into; PropertyInnerMultiQueueOffset lists its offsets in them, in the
	// same order.
	PropertyInnerMultiDispatch    = "INNER_MULTI_DISPATCH"
	PropertyInnerMultiQueueOffset = "INNER_MULTI_QUEUE_OFFSET"

	// POP consumption.
	PropertyPopCK        = "POP_CK"
	PropertyPopCKOffset  = "POP_CK_OFFSET"
	PropertyFirstPopTime = "1ST_POP_TIME"

	// Miscellaneous.
	PropertyBornHost       = "__BORNHOST"
	PropertyBornTimestamp  = "BORN_TIMESTAMP"
	PropertyTraceContext   = "TRACE_CONTEXT"
	PropertyTraceSwitch    = "TRACE_ON"
	PropertyMsgRegion      = "MSG_REGION"
	PropertyBuyerID        = "BUYER_ID"
	PropertyTransferFlag   = "TRANSFER_FLAG"
	PropertyCorrectionFlag = "CORRECTION_FLAG"
	PropertyMQ2Flag        = "MQ2_FLAG"
	PropertyInstanceID     = "INSTANCE_ID"
	PropertyExtendUniqInfo = "EXTEND_UNIQ_INFO"
	PropertyInnerNum       = "INNER_NUM"
	PropertyInnerBase      = "INNER_BASE"
	PropertyDupInfo        = "DUP_INFO"

	// PropertyTransientPrefix starts the names of properties that clients
	// attach locally and that are never stored.
	PropertyTransientPrefix = "__RMQ.TRANSIENT."
)

// Separators inside property values.
const (
	KeySeparator           = " " // between the keys in PropertyKeys
	MultiDispatchSeparator = "," // between the queues in PropertyInnerMultiDispatch
)
