package wire

// Pull sysFlag bits (Java PullSysFlag).
const (
	// PullFlagCommitOffset: commitOffset is valid and should be stored.
	PullFlagCommitOffset int32 = 1 << 0
	// PullFlagSuspend: the broker may hold the request (long polling).
	PullFlagSuspend int32 = 1 << 1
	// PullFlagSubscription: subscription and expressionType are set and
	// replace the subscription registered by heartbeat.
	PullFlagSubscription int32 = 1 << 2
	// PullFlagClassFilter: class filter mode (unused).
	PullFlagClassFilter int32 = 1 << 3
	// PullFlagLitePull: Java lite pull consumer.
	PullFlagLitePull int32 = 1 << 4
)

// PullMessageRequestHeader is the header of PULL_MESSAGE (11) and
// LITE_PULL_MESSAGE (361). Required, as in Java: consumerGroup, topic,
// queueId, queueOffset, maxMsgNums, sysFlag, commitOffset,
// suspendTimeoutMillis, subVersion.
type PullMessageRequestHeader struct {
	ConsumerGroup        string // consumerGroup
	Topic                string // topic
	QueueID              int32  // queueId
	QueueOffset          int64  // queueOffset: next offset to read
	MaxMsgNums           int32  // maxMsgNums
	SysFlag              int32  // sysFlag: PullFlag* bits
	CommitOffset         int64  // commitOffset
	SuspendTimeoutMillis int64  // suspendTimeoutMillis: long-poll limit
	Subscription         string // subscription, optional
	SubVersion           int64  // subVersion
	ExpressionType       string // expressionType, optional: "TAG" or "SQL92"
	MaxMsgBytes          *int32 // maxMsgBytes, optional (Java 5)
	BrokerName           string // bname, optional
}

// DecodeFields implements Header.
func (h *PullMessageRequestHeader) DecodeFields(ext map[string]string) error {
	return h.decode(newFieldReader("", ext))
}

func (h *PullMessageRequestHeader) decode(r *fieldReader) error {
	r.header = "PullMessageRequestHeader"
	h.ConsumerGroup = r.name("consumerGroup")
	h.Topic = r.name("topic")
	h.QueueID = r.i32(true, 0, "queueId")
	h.QueueOffset = r.i64(true, 0, "queueOffset")
	h.MaxMsgNums = r.i32(true, 0, "maxMsgNums")
	h.SysFlag = r.i32(true, 0, "sysFlag")
	h.CommitOffset = r.i64(true, 0, "commitOffset")
	h.SuspendTimeoutMillis = r.i64(true, 0, "suspendTimeoutMillis")
	h.Subscription = r.optName("subscription")
	h.SubVersion = r.i64(true, 0, "subVersion")
	h.ExpressionType = r.str(false, "expressionType")
	h.MaxMsgBytes = r.optI32("maxMsgBytes")
	h.BrokerName = r.optName("bname")
	return r.err
}

// EncodeFields implements Header.
func (h *PullMessageRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	putI32(ext, "queueId", h.QueueID)
	putI64(ext, "queueOffset", h.QueueOffset)
	putI32(ext, "maxMsgNums", h.MaxMsgNums)
	putI32(ext, "sysFlag", h.SysFlag)
	putI64(ext, "commitOffset", h.CommitOffset)
	putI64(ext, "suspendTimeoutMillis", h.SuspendTimeoutMillis)
	ext["subscription"] = h.Subscription
	putI64(ext, "subVersion", h.SubVersion)
	putOpt(ext, "expressionType", h.ExpressionType)
	putOptI32(ext, "maxMsgBytes", h.MaxMsgBytes)
	putOpt(ext, "bname", h.BrokerName)
}

// PullMessageResponseHeader is the header of every pull response (found,
// not found, retry, offset moved). All four fields are required and the
// Go client reads them whatever the code.
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64 // suggestWhichBrokerId: 0 = master
	NextBeginOffset      int64 // nextBeginOffset
	MinOffset            int64 // minOffset
	MaxOffset            int64 // maxOffset: next offset to be written
}

// DecodeFields implements Header.
func (h *PullMessageResponseHeader) DecodeFields(ext map[string]string) error {
	return h.decode(newFieldReader("", ext))
}

func (h *PullMessageResponseHeader) decode(r *fieldReader) error {
	r.header = "PullMessageResponseHeader"
	h.SuggestWhichBrokerID = r.i64(true, 0, "suggestWhichBrokerId")
	h.NextBeginOffset = r.i64(true, 0, "nextBeginOffset")
	h.MinOffset = r.i64(true, 0, "minOffset")
	h.MaxOffset = r.i64(true, 0, "maxOffset")
	return r.err
}

// EncodeFields implements Header.
func (h *PullMessageResponseHeader) EncodeFields(ext map[string]string) {
	putI64(ext, "suggestWhichBrokerId", h.SuggestWhichBrokerID)
	putI64(ext, "nextBeginOffset", h.NextBeginOffset)
	putI64(ext, "minOffset", h.MinOffset)
	putI64(ext, "maxOffset", h.MaxOffset)
}

// appendFields implements jsonFieldsAppender: the fields EncodeFields
// writes, in key order.
func (h *PullMessageResponseHeader) appendFields(w *fieldWriter) {
	w.int("maxOffset", h.MaxOffset)
	w.int("minOffset", h.MinOffset)
	w.int("nextBeginOffset", h.NextBeginOffset)
	w.int("suggestWhichBrokerId", h.SuggestWhichBrokerID)
}
