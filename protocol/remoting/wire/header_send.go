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

// appendFields implements jsonFieldsAppender with the V1 names: the
// fields EncodeFields writes, in key order.
func (h *SendMessageRequestHeader) appendFields(w *fieldWriter) {
	w.bool("batch", h.Batch)
	w.opt("bname", h.BrokerName)
	w.int("bornTimestamp", h.BornTimestamp)
	w.str("defaultTopic", h.DefaultTopic)
	w.int("defaultTopicQueueNums", int64(h.DefaultTopicQueueNums))
	w.int("flag", int64(h.Flag))
	if h.MaxReconsumeTimes != nil {
		w.int("maxReconsumeTimes", int64(*h.MaxReconsumeTimes))
	}
	w.str("producerGroup", h.ProducerGroup)
	w.str("properties", h.Properties)
	w.int("queueId", int64(h.QueueID))
	w.int("reconsumeTimes", int64(h.ReconsumeTimes))
	w.int("sysFlag", int64(h.SysFlag))
	w.str("topic", h.Topic)
	w.bool("unitMode", h.UnitMode)
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

// appendFields implements jsonFieldsAppender with the V2 names.
func (h *SendMessageRequestHeaderV2) appendFields(w *fieldWriter) {
	w.str("a", h.ProducerGroup)
	w.str("b", h.Topic)
	w.str("c", h.DefaultTopic)
	w.int("d", int64(h.DefaultTopicQueueNums))
	w.int("e", int64(h.QueueID))
	w.int("f", int64(h.SysFlag))
	w.int("g", h.BornTimestamp)
	w.int("h", int64(h.Flag))
	w.str("i", h.Properties)
	w.int("j", int64(h.ReconsumeTimes))
	w.bool("k", h.UnitMode)
	if h.MaxReconsumeTimes != nil {
		w.int("l", int64(*h.MaxReconsumeTimes))
	}
	w.bool("m", h.Batch)
	w.opt("n", h.BrokerName)
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

// appendFields implements jsonFieldsAppender: the fields EncodeFields
// writes, in key order.
func (h *SendMessageResponseHeader) appendFields(w *fieldWriter) {
	w.opt("MSG_REGION", h.MsgRegion)
	w.opt("TRACE_ON", h.TraceOn)
	w.opt("batchUniqId", h.BatchUniqID)
	w.str("msgId", h.MsgID)
	w.int("queueId", int64(h.QueueID))
	w.int("queueOffset", h.QueueOffset)
	w.opt("transactionId", h.TransactionID)
}
