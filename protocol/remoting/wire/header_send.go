package wire

// SendMessageRequestHeader is the header of SEND_MESSAGE (10), and of
// SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and the reply sends
// (324, 325). DecodeFields accepts both the long V1 names
// ("producerGroup", "topic", ...) and the one-letter V2 names ("a" to
// "n"); EncodeFields writes the V1 names and SendMessageRequestHeaderV2
// the V2 names.
//
// Required, as in Java: producerGroup (a), topic (b), defaultTopic (c),
// defaultTopicQueueNums (d), queueId (e), sysFlag (f), bornTimestamp (g),
// flag (h).
type SendMessageRequestHeader struct {
	ProducerGroup         string // producerGroup, a
	Topic                 string // topic, b
	DefaultTopic          string // defaultTopic, c
	DefaultTopicQueueNums int32  // defaultTopicQueueNums, d
	QueueID               int32  // queueId, e
	SysFlag               int32  // sysFlag, f: message sysFlag bits
	BornTimestamp         int64  // bornTimestamp, g: ms since the epoch
	Flag                  int32  // flag, h: the user flag of the message
	Properties            string // properties, i: the properties string
	ReconsumeTimes        int32  // reconsumeTimes, j; 0 when absent
	UnitMode              bool   // unitMode, k
	// MaxReconsumeTimes (maxReconsumeTimes, l) is nil when absent; Java
	// then uses the group's configured maximum.
	MaxReconsumeTimes *int32
	Batch             bool   // batch, m
	BrokerName        string // bname, n: broker the client picked
}

// DecodeFields implements Header.
func (h *SendMessageRequestHeader) DecodeFields(ext map[string]string) error {
	return h.decode(newFieldReader("", ext))
}

func (h *SendMessageRequestHeader) decode(r *fieldReader) error {
	r.header = "SendMessageRequestHeader"
	h.ProducerGroup = r.name("producerGroup", "a")
	h.Topic = r.name("topic", "b")
	h.DefaultTopic = r.str(true, "defaultTopic", "c")
	h.DefaultTopicQueueNums = r.i32(true, 0, "defaultTopicQueueNums", "d")
	h.QueueID = r.i32(true, 0, "queueId", "e")
	h.SysFlag = r.i32(true, 0, "sysFlag", "f")
	h.BornTimestamp = r.i64(true, 0, "bornTimestamp", "g")
	h.Flag = r.i32(true, 0, "flag", "h")
	if r.appendProps {
		r.props = r.appendStr(r.props, "properties", "i")
	} else {
		h.Properties = r.str(false, "properties", "i")
	}
	h.ReconsumeTimes = r.i32(false, 0, "reconsumeTimes", "j")
	h.UnitMode = r.boolean(false, false, "unitMode", "k")
	h.MaxReconsumeTimes = r.optI32("maxReconsumeTimes", "l")
	h.Batch = r.boolean(false, false, "batch", "m")
	h.BrokerName = r.optName("bname", "n")
	return r.err
}

// EncodeFields implements Header with the V1 names, as SEND_MESSAGE uses.
func (h *SendMessageRequestHeader) EncodeFields(ext map[string]string) {
	h.encode(ext, &sendV1Names)
}

type sendNames struct {
	producerGroup, topic, defaultTopic, defaultTopicQueueNums, queueID, sysFlag,
	bornTimestamp, flag, properties, reconsumeTimes, unitMode, maxReconsumeTimes,
	batch, brokerName string
}

var (
	sendV1Names = sendNames{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums",
		"queueId", "sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes",
		"unitMode", "maxReconsumeTimes", "batch", "bname"}
	sendV2Names = sendNames{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}
)

func (h *SendMessageRequestHeader) encode(ext map[string]string, n *sendNames) {
	ext[n.producerGroup] = h.ProducerGroup
	ext[n.topic] = h.Topic
	ext[n.defaultTopic] = h.DefaultTopic
	putI32(ext, n.defaultTopicQueueNums, h.DefaultTopicQueueNums)
	putI32(ext, n.queueID, h.QueueID)
	putI32(ext, n.sysFlag, h.SysFlag)
	putI64(ext, n.bornTimestamp, h.BornTimestamp)
	putI32(ext, n.flag, h.Flag)
	ext[n.properties] = h.Properties
	putI32(ext, n.reconsumeTimes, h.ReconsumeTimes)
	putBool(ext, n.unitMode, h.UnitMode)
	putOptI32(ext, n.maxReconsumeTimes, h.MaxReconsumeTimes)
	putBool(ext, n.batch, h.Batch)
	putOpt(ext, n.brokerName, h.BrokerName)
}

// appendJSONFields implements jsonFieldsAppender with the V1 names: the
// fields EncodeFields writes, in key order.
func (h *SendMessageRequestHeader) appendJSONFields(dst []byte) []byte {
	n := len(dst)
	dst = appendBoolField(dst, n, "batch", h.Batch)
	dst = appendOptField(dst, n, "bname", h.BrokerName)
	dst = appendIntField(dst, n, "bornTimestamp", h.BornTimestamp)
	dst = appendField(dst, n, "defaultTopic", h.DefaultTopic)
	dst = appendIntField(dst, n, "defaultTopicQueueNums", int64(h.DefaultTopicQueueNums))
	dst = appendIntField(dst, n, "flag", int64(h.Flag))
	if h.MaxReconsumeTimes != nil {
		dst = appendIntField(dst, n, "maxReconsumeTimes", int64(*h.MaxReconsumeTimes))
	}
	dst = appendField(dst, n, "producerGroup", h.ProducerGroup)
	dst = appendField(dst, n, "properties", h.Properties)
	dst = appendIntField(dst, n, "queueId", int64(h.QueueID))
	dst = appendIntField(dst, n, "reconsumeTimes", int64(h.ReconsumeTimes))
	dst = appendIntField(dst, n, "sysFlag", int64(h.SysFlag))
	dst = appendField(dst, n, "topic", h.Topic)
	return appendBoolField(dst, n, "unitMode", h.UnitMode)
}

// SendMessageRequestHeaderV2 encodes a SendMessageRequestHeader with the
// one-letter names of SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE. Decoding
// accepts either naming.
type SendMessageRequestHeaderV2 struct {
	SendMessageRequestHeader
}

// EncodeFields implements Header with the V2 names "a" to "n".
func (h *SendMessageRequestHeaderV2) EncodeFields(ext map[string]string) {
	h.encode(ext, &sendV2Names)
}

// appendJSONFields implements jsonFieldsAppender with the V2 names.
func (h *SendMessageRequestHeaderV2) appendJSONFields(dst []byte) []byte {
	n := len(dst)
	dst = appendField(dst, n, "a", h.ProducerGroup)
	dst = appendField(dst, n, "b", h.Topic)
	dst = appendField(dst, n, "c", h.DefaultTopic)
	dst = appendIntField(dst, n, "d", int64(h.DefaultTopicQueueNums))
	dst = appendIntField(dst, n, "e", int64(h.QueueID))
	dst = appendIntField(dst, n, "f", int64(h.SysFlag))
	dst = appendIntField(dst, n, "g", h.BornTimestamp)
	dst = appendIntField(dst, n, "h", int64(h.Flag))
	dst = appendField(dst, n, "i", h.Properties)
	dst = appendIntField(dst, n, "j", int64(h.ReconsumeTimes))
	dst = appendBoolField(dst, n, "k", h.UnitMode)
	if h.MaxReconsumeTimes != nil {
		dst = appendIntField(dst, n, "l", int64(*h.MaxReconsumeTimes))
	}
	dst = appendBoolField(dst, n, "m", h.Batch)
	return appendOptField(dst, n, "n", h.BrokerName)
}

// SendMessageResponseHeader is the header of a successful send response.
// Required: msgId, queueId, queueOffset.
type SendMessageResponseHeader struct {
	// MsgID is the offset message id (32 or 56 hex characters; a
	// comma-separated list for batches). The Go client's transaction path
	// crashes on a malformed one.
	MsgID         string // msgId
	QueueID       int32  // queueId
	QueueOffset   int64  // queueOffset: offset of the (first) message
	TransactionID string // transactionId, optional
	BatchUniqID   string // batchUniqId, optional
	MsgRegion     string // MSG_REGION, optional
	TraceOn       string // TRACE_ON, optional: "true" or "false"
}

// DecodeFields implements Header.
func (h *SendMessageResponseHeader) DecodeFields(ext map[string]string) error {
	return h.decode(newFieldReader("", ext))
}

func (h *SendMessageResponseHeader) decode(r *fieldReader) error {
	r.header = "SendMessageResponseHeader"
	h.MsgID = r.str(true, "msgId")
	h.QueueID = r.i32(true, 0, "queueId")
	h.QueueOffset = r.i64(true, 0, "queueOffset")
	h.TransactionID = r.str(false, "transactionId")
	h.BatchUniqID = r.str(false, "batchUniqId")
	h.MsgRegion = r.str(false, "MSG_REGION")
	h.TraceOn = r.str(false, "TRACE_ON")
	return r.err
}

// EncodeFields implements Header. Empty optional fields are left out.
func (h *SendMessageResponseHeader) EncodeFields(ext map[string]string) {
	ext["msgId"] = h.MsgID
	putI32(ext, "queueId", h.QueueID)
	putI64(ext, "queueOffset", h.QueueOffset)
	putOpt(ext, "transactionId", h.TransactionID)
	putOpt(ext, "batchUniqId", h.BatchUniqID)
	putOpt(ext, "MSG_REGION", h.MsgRegion)
	putOpt(ext, "TRACE_ON", h.TraceOn)
}

// appendJSONFields implements jsonFieldsAppender: the fields EncodeFields
// writes, in key order.
func (h *SendMessageResponseHeader) appendJSONFields(dst []byte) []byte {
	n := len(dst)
	dst = appendOptField(dst, n, "MSG_REGION", h.MsgRegion)
	dst = appendOptField(dst, n, "TRACE_ON", h.TraceOn)
	dst = appendOptField(dst, n, "batchUniqId", h.BatchUniqID)
	dst = appendField(dst, n, "msgId", h.MsgID)
	dst = appendIntField(dst, n, "queueId", int64(h.QueueID))
	dst = appendIntField(dst, n, "queueOffset", h.QueueOffset)
	return appendOptField(dst, n, "transactionId", h.TransactionID)
}
