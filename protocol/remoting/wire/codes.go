package wire

import (
	"math"
	"strconv"
)

// RequestCode identifies the kind of a request. The numbers are those of
// the Java RequestCode class; String returns the Java constant name.
type RequestCode int32

// Request codes.
const (
	SendMessage                          RequestCode = 10
	PullMessage                          RequestCode = 11
	QueryMessage                         RequestCode = 12
	QueryBrokerOffset                    RequestCode = 13
	QueryConsumerOffset                  RequestCode = 14
	UpdateConsumerOffset                 RequestCode = 15
	UpdateAndCreateTopic                 RequestCode = 17
	UpdateAndCreateTopicList             RequestCode = 18
	GetAllTopicConfig                    RequestCode = 21
	GetTopicConfigList                   RequestCode = 22
	GetTopicNameList                     RequestCode = 23
	UpdateBrokerConfig                   RequestCode = 25
	GetBrokerConfig                      RequestCode = 26
	TriggerDeleteFiles                   RequestCode = 27
	GetBrokerRuntimeInfo                 RequestCode = 28
	SearchOffsetByTimestamp              RequestCode = 29
	GetMaxOffset                         RequestCode = 30
	GetMinOffset                         RequestCode = 31
	GetEarliestMsgStoretime              RequestCode = 32
	ViewMessageByID                      RequestCode = 33
	HeartBeat                            RequestCode = 34
	UnregisterClient                     RequestCode = 35
	ConsumerSendMsgBack                  RequestCode = 36
	EndTransaction                       RequestCode = 37
	GetConsumerListByGroup               RequestCode = 38
	CheckTransactionState                RequestCode = 39
	NotifyConsumerIdsChanged             RequestCode = 40
	LockBatchMQ                          RequestCode = 41
	UnlockBatchMQ                        RequestCode = 42
	GetAllConsumerOffset                 RequestCode = 43
	GetAllDelayOffset                    RequestCode = 45
	CheckClientConfig                    RequestCode = 46
	GetClientConfig                      RequestCode = 47
	UpdateAndCreateACLConfig             RequestCode = 50
	DeleteACLConfig                      RequestCode = 51
	GetBrokerClusterACLInfo              RequestCode = 52
	UpdateGlobalWhiteAddrsConfig         RequestCode = 53
	GetBrokerClusterACLConfig            RequestCode = 54
	GetTimerCheckPoint                   RequestCode = 60
	GetTimerMetrics                      RequestCode = 61
	PutKVConfig                          RequestCode = 100
	GetKVConfig                          RequestCode = 101
	DeleteKVConfig                       RequestCode = 102
	RegisterBroker                       RequestCode = 103
	UnregisterBroker                     RequestCode = 104
	GetRouteInfoByTopic                  RequestCode = 105
	GetBrokerClusterInfo                 RequestCode = 106
	UpdateAndCreateSubscriptionGroup     RequestCode = 200
	GetAllSubscriptionGroupConfig        RequestCode = 201
	GetTopicStatsInfo                    RequestCode = 202
	GetConsumerConnectionList            RequestCode = 203
	GetProducerConnectionList            RequestCode = 204
	WipeWritePermOfBroker                RequestCode = 205
	GetAllTopicListFromNameServer        RequestCode = 206
	DeleteSubscriptionGroup              RequestCode = 207
	GetConsumeStats                      RequestCode = 208
	SuspendConsumer                      RequestCode = 209
	ResumeConsumer                       RequestCode = 210
	ResetConsumerOffsetInConsumer        RequestCode = 211
	ResetConsumerOffsetInBroker          RequestCode = 212
	AdjustConsumerThreadPool             RequestCode = 213
	WhoConsumeTheMessage                 RequestCode = 214
	DeleteTopicInBroker                  RequestCode = 215
	DeleteTopicInNamesrv                 RequestCode = 216
	RegisterTopicInNamesrv               RequestCode = 217
	GetKVListByNamespace                 RequestCode = 219
	ResetConsumerClientOffset            RequestCode = 220
	GetConsumerStatusFromClient          RequestCode = 221
	InvokeBrokerToResetOffset            RequestCode = 222
	InvokeBrokerToGetConsumerStatus      RequestCode = 223
	GetTopicsByCluster                   RequestCode = 224
	UpdateAndCreateSubscriptionGroupList RequestCode = 225
	QueryTopicConsumeByWho               RequestCode = 300
	RegisterFilterServer                 RequestCode = 301
	RegisterMessageFilterClass           RequestCode = 302
	QueryConsumeTimeSpan                 RequestCode = 303
	GetSystemTopicListFromNS             RequestCode = 304
	GetSystemTopicListFromBroker         RequestCode = 305
	CleanExpiredConsumeQueue             RequestCode = 306
	GetConsumerRunningInfo               RequestCode = 307
	QueryCorrectionOffset                RequestCode = 308
	ConsumeMessageDirectly               RequestCode = 309
	SendMessageV2                        RequestCode = 310
	GetUnitTopicList                     RequestCode = 311
	GetHasUnitSubTopicList               RequestCode = 312
	GetHasUnitSubUnunitTopicList         RequestCode = 313
	CloneGroupOffset                     RequestCode = 314
	ViewBrokerStatsData                  RequestCode = 315
	CleanUnusedTopic                     RequestCode = 316
	GetBrokerConsumeStats                RequestCode = 317
	UpdateNamesrvConfig                  RequestCode = 318
	GetNamesrvConfig                     RequestCode = 319
	SendBatchMessage                     RequestCode = 320
	QueryConsumeQueue                    RequestCode = 321
	QueryDataVersion                     RequestCode = 322
	ResumeCheckHalfMessage               RequestCode = 323
	SendReplyMessage                     RequestCode = 324
	SendReplyMessageV2                   RequestCode = 325
	PushReplyMessageToClient             RequestCode = 326
	AddWritePermOfBroker                 RequestCode = 327
	GetAllProducerInfo                   RequestCode = 328
	DeleteExpiredCommitlog               RequestCode = 329
	QueryTopicsByConsumer                RequestCode = 343
	QuerySubscriptionByConsumer          RequestCode = 345
	GetTopicConfig                       RequestCode = 351
	GetSubscriptionGroupConfig           RequestCode = 352
	UpdateAndGetGroupForbidden           RequestCode = 353
	LitePullMessage                      RequestCode = 361
	QueryAssignment                      RequestCode = 400
	SetMessageRequestMode                RequestCode = 401
	GetAllMessageRequestMode             RequestCode = 402
	UpdateAndCreateStaticTopic           RequestCode = 513
	GetBrokerMemberGroup                 RequestCode = 901
	AddBroker                            RequestCode = 902
	RemoveBroker                         RequestCode = 903
	BrokerHeartbeat                      RequestCode = 904
	NotifyMinBrokerIDChange              RequestCode = 905
	ExchangeBrokerHAInfo                 RequestCode = 906
	GetBrokerHAStatus                    RequestCode = 907
	ResetMasterFlushOffset               RequestCode = 908

	// ACL 2.0 administration (RocketMQ 5.3); see header_auth.go.
	AuthCreateUser RequestCode = 3001
	AuthUpdateUser RequestCode = 3002
	AuthDeleteUser RequestCode = 3003
	AuthGetUser    RequestCode = 3004
	AuthListUser   RequestCode = 3005
	AuthCreateACL  RequestCode = 3006
	AuthUpdateACL  RequestCode = 3007
	AuthDeleteACL  RequestCode = 3008
	AuthGetACL     RequestCode = 3009
	AuthListACL    RequestCode = 3010

	// POP family. Java 5.0 numbered these 200050 and up; see Canonical.
	PopMessage                 RequestCode = 3442
	AckMessage                 RequestCode = 3443
	PeekMessage                RequestCode = 3444
	ChangeMessageInvisibleTime RequestCode = 3445
	Notification               RequestCode = 3446
	PollingInfo                RequestCode = 3447
	BatchAckMessage            RequestCode = 3543
)

// Canonical maps a code that does not fit in 16 bits onto the value a
// binary header carries for it (Java's (short) cast), and returns other
// codes unchanged. The POP codes Java 5.0 sent as 200050 and up in JSON
// headers become PopMessage and friends.
func (c RequestCode) Canonical() RequestCode {
	if c > math.MaxInt16 || c < math.MinInt16 {
		return RequestCode(int16(c))
	}
	return c
}

var requestCodeNames = map[RequestCode]string{
	SendMessage:                          "SEND_MESSAGE",
	PullMessage:                          "PULL_MESSAGE",
	QueryMessage:                         "QUERY_MESSAGE",
	QueryBrokerOffset:                    "QUERY_BROKER_OFFSET",
	QueryConsumerOffset:                  "QUERY_CONSUMER_OFFSET",
	UpdateConsumerOffset:                 "UPDATE_CONSUMER_OFFSET",
	UpdateAndCreateTopic:                 "UPDATE_AND_CREATE_TOPIC",
	UpdateAndCreateTopicList:             "UPDATE_AND_CREATE_TOPIC_LIST",
	GetAllTopicConfig:                    "GET_ALL_TOPIC_CONFIG",
	GetTopicConfigList:                   "GET_TOPIC_CONFIG_LIST",
	GetTopicNameList:                     "GET_TOPIC_NAME_LIST",
	UpdateBrokerConfig:                   "UPDATE_BROKER_CONFIG",
	GetBrokerConfig:                      "GET_BROKER_CONFIG",
	TriggerDeleteFiles:                   "TRIGGER_DELETE_FILES",
	GetBrokerRuntimeInfo:                 "GET_BROKER_RUNTIME_INFO",
	SearchOffsetByTimestamp:              "SEARCH_OFFSET_BY_TIMESTAMP",
	GetMaxOffset:                         "GET_MAX_OFFSET",
	GetMinOffset:                         "GET_MIN_OFFSET",
	GetEarliestMsgStoretime:              "GET_EARLIEST_MSG_STORETIME",
	ViewMessageByID:                      "VIEW_MESSAGE_BY_ID",
	HeartBeat:                            "HEART_BEAT",
	UnregisterClient:                     "UNREGISTER_CLIENT",
	ConsumerSendMsgBack:                  "CONSUMER_SEND_MSG_BACK",
	EndTransaction:                       "END_TRANSACTION",
	GetConsumerListByGroup:               "GET_CONSUMER_LIST_BY_GROUP",
	CheckTransactionState:                "CHECK_TRANSACTION_STATE",
	NotifyConsumerIdsChanged:             "NOTIFY_CONSUMER_IDS_CHANGED",
	LockBatchMQ:                          "LOCK_BATCH_MQ",
	UnlockBatchMQ:                        "UNLOCK_BATCH_MQ",
	GetAllConsumerOffset:                 "GET_ALL_CONSUMER_OFFSET",
	GetAllDelayOffset:                    "GET_ALL_DELAY_OFFSET",
	CheckClientConfig:                    "CHECK_CLIENT_CONFIG",
	GetClientConfig:                      "GET_CLIENT_CONFIG",
	UpdateAndCreateACLConfig:             "UPDATE_AND_CREATE_ACL_CONFIG",
	DeleteACLConfig:                      "DELETE_ACL_CONFIG",
	GetBrokerClusterACLInfo:              "GET_BROKER_CLUSTER_ACL_INFO",
	UpdateGlobalWhiteAddrsConfig:         "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
	GetBrokerClusterACLConfig:            "GET_BROKER_CLUSTER_ACL_CONFIG",
	GetTimerCheckPoint:                   "GET_TIMER_CHECK_POINT",
	GetTimerMetrics:                      "GET_TIMER_METRICS",
	PutKVConfig:                          "PUT_KV_CONFIG",
	GetKVConfig:                          "GET_KV_CONFIG",
	DeleteKVConfig:                       "DELETE_KV_CONFIG",
	RegisterBroker:                       "REGISTER_BROKER",
	UnregisterBroker:                     "UNREGISTER_BROKER",
	GetRouteInfoByTopic:                  "GET_ROUTEINFO_BY_TOPIC",
	GetBrokerClusterInfo:                 "GET_BROKER_CLUSTER_INFO",
	UpdateAndCreateSubscriptionGroup:     "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	GetAllSubscriptionGroupConfig:        "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	GetTopicStatsInfo:                    "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList:            "GET_CONSUMER_CONNECTION_LIST",
	GetProducerConnectionList:            "GET_PRODUCER_CONNECTION_LIST",
	WipeWritePermOfBroker:                "WIPE_WRITE_PERM_OF_BROKER",
	GetAllTopicListFromNameServer:        "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	DeleteSubscriptionGroup:              "DELETE_SUBSCRIPTIONGROUP",
	GetConsumeStats:                      "GET_CONSUME_STATS",
	SuspendConsumer:                      "SUSPEND_CONSUMER",
	ResumeConsumer:                       "RESUME_CONSUMER",
	ResetConsumerOffsetInConsumer:        "RESET_CONSUMER_OFFSET_IN_CONSUMER",
	ResetConsumerOffsetInBroker:          "RESET_CONSUMER_OFFSET_IN_BROKER",
	AdjustConsumerThreadPool:             "ADJUST_CONSUMER_THREAD_POOL",
	WhoConsumeTheMessage:                 "WHO_CONSUME_THE_MESSAGE",
	DeleteTopicInBroker:                  "DELETE_TOPIC_IN_BROKER",
	DeleteTopicInNamesrv:                 "DELETE_TOPIC_IN_NAMESRV",
	RegisterTopicInNamesrv:               "REGISTER_TOPIC_IN_NAMESRV",
	GetKVListByNamespace:                 "GET_KVLIST_BY_NAMESPACE",
	ResetConsumerClientOffset:            "RESET_CONSUMER_CLIENT_OFFSET",
	GetConsumerStatusFromClient:          "GET_CONSUMER_STATUS_FROM_CLIENT",
	InvokeBrokerToResetOffset:            "INVOKE_BROKER_TO_RESET_OFFSET",
	InvokeBrokerToGetConsumerStatus:      "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	GetTopicsByCluster:                   "GET_TOPICS_BY_CLUSTER",
	UpdateAndCreateSubscriptionGroupList: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST",
	QueryTopicConsumeByWho:               "QUERY_TOPIC_CONSUME_BY_WHO",
	RegisterFilterServer:                 "REGISTER_FILTER_SERVER",
	RegisterMessageFilterClass:           "REGISTER_MESSAGE_FILTER_CLASS",
	QueryConsumeTimeSpan:                 "QUERY_CONSUME_TIME_SPAN",
	GetSystemTopicListFromNS:             "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	GetSystemTopicListFromBroker:         "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
	CleanExpiredConsumeQueue:             "CLEAN_EXPIRED_CONSUMEQUEUE",
	GetConsumerRunningInfo:               "GET_CONSUMER_RUNNING_INFO",
	QueryCorrectionOffset:                "QUERY_CORRECTION_OFFSET",
	ConsumeMessageDirectly:               "CONSUME_MESSAGE_DIRECTLY",
	SendMessageV2:                        "SEND_MESSAGE_V2",
	GetUnitTopicList:                     "GET_UNIT_TOPIC_LIST",
	GetHasUnitSubTopicList:               "GET_HAS_UNIT_SUB_TOPIC_LIST",
	GetHasUnitSubUnunitTopicList:         "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
	CloneGroupOffset:                     "CLONE_GROUP_OFFSET",
	ViewBrokerStatsData:                  "VIEW_BROKER_STATS_DATA",
	CleanUnusedTopic:                     "CLEAN_UNUSED_TOPIC",
	GetBrokerConsumeStats:                "GET_BROKER_CONSUME_STATS",
	UpdateNamesrvConfig:                  "UPDATE_NAMESRV_CONFIG",
	GetNamesrvConfig:                     "GET_NAMESRV_CONFIG",
	SendBatchMessage:                     "SEND_BATCH_MESSAGE",
	QueryConsumeQueue:                    "QUERY_CONSUME_QUEUE",
	QueryDataVersion:                     "QUERY_DATA_VERSION",
	ResumeCheckHalfMessage:               "RESUME_CHECK_HALF_MESSAGE",
	SendReplyMessage:                     "SEND_REPLY_MESSAGE",
	SendReplyMessageV2:                   "SEND_REPLY_MESSAGE_V2",
	PushReplyMessageToClient:             "PUSH_REPLY_MESSAGE_TO_CLIENT",
	AddWritePermOfBroker:                 "ADD_WRITE_PERM_OF_BROKER",
	GetAllProducerInfo:                   "GET_ALL_PRODUCER_INFO",
	DeleteExpiredCommitlog:               "DELETE_EXPIRED_COMMITLOG",
	QueryTopicsByConsumer:                "QUERY_TOPICS_BY_CONSUMER",
	QuerySubscriptionByConsumer:          "QUERY_SUBSCRIPTION_BY_CONSUMER",
	GetTopicConfig:                       "GET_TOPIC_CONFIG",
	GetSubscriptionGroupConfig:           "GET_SUBSCRIPTIONGROUP_CONFIG",
	UpdateAndGetGroupForbidden:           "UPDATE_AND_GET_GROUP_FORBIDDEN",
	LitePullMessage:                      "LITE_PULL_MESSAGE",
	QueryAssignment:                      "QUERY_ASSIGNMENT",
	SetMessageRequestMode:                "SET_MESSAGE_REQUEST_MODE",
	GetAllMessageRequestMode:             "GET_ALL_MESSAGE_REQUEST_MODE",
	UpdateAndCreateStaticTopic:           "UPDATE_AND_CREATE_STATIC_TOPIC",
	GetBrokerMemberGroup:                 "GET_BROKER_MEMBER_GROUP",
	AddBroker:                            "ADD_BROKER",
	RemoveBroker:                         "REMOVE_BROKER",
	BrokerHeartbeat:                      "BROKER_HEARTBEAT",
	NotifyMinBrokerIDChange:              "NOTIFY_MIN_BROKER_ID_CHANGE",
	ExchangeBrokerHAInfo:                 "EXCHANGE_BROKER_HA_INFO",
	GetBrokerHAStatus:                    "GET_BROKER_HA_STATUS",
	ResetMasterFlushOffset:               "RESET_MASTER_FLUSH_OFFSET",
	AuthCreateUser:                       "AUTH_CREATE_USER",
	AuthUpdateUser:                       "AUTH_UPDATE_USER",
	AuthDeleteUser:                       "AUTH_DELETE_USER",
	AuthGetUser:                          "AUTH_GET_USER",
	AuthListUser:                         "AUTH_LIST_USER",
	AuthCreateACL:                        "AUTH_CREATE_ACL",
	AuthUpdateACL:                        "AUTH_UPDATE_ACL",
	AuthDeleteACL:                        "AUTH_DELETE_ACL",
	AuthGetACL:                           "AUTH_GET_ACL",
	AuthListACL:                          "AUTH_LIST_ACL",
	PopMessage:                           "POP_MESSAGE",
	AckMessage:                           "ACK_MESSAGE",
	PeekMessage:                          "PEEK_MESSAGE",
	ChangeMessageInvisibleTime:           "CHANGE_MESSAGE_INVISIBLETIME",
	Notification:                         "NOTIFICATION",
	PollingInfo:                          "POLLING_INFO",
	BatchAckMessage:                      "BATCH_ACK_MESSAGE",
}

// String returns the Java constant name, or "RequestCode(N)".
func (c RequestCode) String() string {
	if s, ok := requestCodeNames[c]; ok {
		return s
	}
	return "RequestCode(" + strconv.Itoa(int(c)) + ")"
}

// ResponseCode is the outcome carried in a response's code. The numbers
// are those of Java's RemotingSysResponseCode and ResponseCode.
type ResponseCode int32

// Response codes.
const (
	Success                    ResponseCode = 0
	SystemError                ResponseCode = 1
	SystemBusy                 ResponseCode = 2
	RequestCodeNotSupported    ResponseCode = 3
	TransactionFailed          ResponseCode = 4
	FlushDiskTimeout           ResponseCode = 10
	SlaveNotAvailable          ResponseCode = 11
	FlushSlaveTimeout          ResponseCode = 12
	MessageIllegal             ResponseCode = 13
	ServiceNotAvailable        ResponseCode = 14
	VersionNotSupported        ResponseCode = 15
	NoPermission               ResponseCode = 16
	TopicNotExist              ResponseCode = 17
	TopicExistAlready          ResponseCode = 18
	PullNotFound               ResponseCode = 19
	PullRetryImmediately       ResponseCode = 20
	PullOffsetMoved            ResponseCode = 21
	QueryNotFound              ResponseCode = 22
	SubscriptionParseFailed    ResponseCode = 23
	SubscriptionNotExist       ResponseCode = 24
	SubscriptionNotLatest      ResponseCode = 25
	SubscriptionGroupNotExist  ResponseCode = 26
	FilterDataNotExist         ResponseCode = 27
	FilterDataNotLatest        ResponseCode = 28
	InvalidParameter           ResponseCode = 29
	TransactionShouldCommit    ResponseCode = 200
	TransactionShouldRollback  ResponseCode = 201
	TransactionStateUnknow     ResponseCode = 202
	TransactionStateGroupWrong ResponseCode = 203
	NoBuyerID                  ResponseCode = 204
	NotInCurrentUnit           ResponseCode = 205
	ConsumerNotOnline          ResponseCode = 206
	ConsumeMsgTimeout          ResponseCode = 207
	NoMessage                  ResponseCode = 208
	PollingFull                ResponseCode = 209
	PollingTimeout             ResponseCode = 210
	BrokerNotExist             ResponseCode = 211
	BrokerDispatchNotComplete  ResponseCode = 212
	BroadcastConsumption       ResponseCode = 213
	FlowControl                ResponseCode = 215
	NotLeaderForQueue          ResponseCode = 501
	IllegalOperation           ResponseCode = 604
	GoAway                     ResponseCode = 1500
)

var responseCodeNames = map[ResponseCode]string{
	Success:                    "SUCCESS",
	SystemError:                "SYSTEM_ERROR",
	SystemBusy:                 "SYSTEM_BUSY",
	RequestCodeNotSupported:    "REQUEST_CODE_NOT_SUPPORTED",
	TransactionFailed:          "TRANSACTION_FAILED",
	FlushDiskTimeout:           "FLUSH_DISK_TIMEOUT",
	SlaveNotAvailable:          "SLAVE_NOT_AVAILABLE",
	FlushSlaveTimeout:          "FLUSH_SLAVE_TIMEOUT",
	MessageIllegal:             "MESSAGE_ILLEGAL",
	ServiceNotAvailable:        "SERVICE_NOT_AVAILABLE",
	VersionNotSupported:        "VERSION_NOT_SUPPORTED",
	NoPermission:               "NO_PERMISSION",
	TopicNotExist:              "TOPIC_NOT_EXIST",
	TopicExistAlready:          "TOPIC_EXIST_ALREADY",
	PullNotFound:               "PULL_NOT_FOUND",
	PullRetryImmediately:       "PULL_RETRY_IMMEDIATELY",
	PullOffsetMoved:            "PULL_OFFSET_MOVED",
	QueryNotFound:              "QUERY_NOT_FOUND",
	SubscriptionParseFailed:    "SUBSCRIPTION_PARSE_FAILED",
	SubscriptionNotExist:       "SUBSCRIPTION_NOT_EXIST",
	SubscriptionNotLatest:      "SUBSCRIPTION_NOT_LATEST",
	SubscriptionGroupNotExist:  "SUBSCRIPTION_GROUP_NOT_EXIST",
	FilterDataNotExist:         "FILTER_DATA_NOT_EXIST",
	FilterDataNotLatest:        "FILTER_DATA_NOT_LATEST",
	InvalidParameter:           "INVALID_PARAMETER",
	TransactionShouldCommit:    "TRANSACTION_SHOULD_COMMIT",
	TransactionShouldRollback:  "TRANSACTION_SHOULD_ROLLBACK",
	TransactionStateUnknow:     "TRANSACTION_STATE_UNKNOW",
	TransactionStateGroupWrong: "TRANSACTION_STATE_GROUP_WRONG",
	NoBuyerID:                  "NO_BUYER_ID",
	NotInCurrentUnit:           "NOT_IN_CURRENT_UNIT",
	ConsumerNotOnline:          "CONSUMER_NOT_ONLINE",
	ConsumeMsgTimeout:          "CONSUME_MSG_TIMEOUT",
	NoMessage:                  "NO_MESSAGE",
	PollingFull:                "POLLING_FULL",
	PollingTimeout:             "POLLING_TIMEOUT",
	BrokerNotExist:             "BROKER_NOT_EXIST",
	BrokerDispatchNotComplete:  "BROKER_DISPATCH_NOT_COMPLETE",
	BroadcastConsumption:       "BROADCAST_CONSUMPTION",
	FlowControl:                "FLOW_CONTROL",
	NotLeaderForQueue:          "NOT_LEADER_FOR_QUEUE",
	IllegalOperation:           "ILLEGAL_OPERATION",
	GoAway:                     "GO_AWAY",
}

// String returns the Java constant name, or "ResponseCode(N)".
func (c ResponseCode) String() string {
	if s, ok := responseCodeNames[c]; ok {
		return s
	}
	return "ResponseCode(" + strconv.Itoa(int(c)) + ")"
}
