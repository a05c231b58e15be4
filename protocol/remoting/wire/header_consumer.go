package wire

// ConsumerSendMsgBackRequestHeader is the header of CONSUMER_SEND_MSG_BACK
// (36). Required: offset, group, delayLevel.
type ConsumerSendMsgBackRequestHeader struct {
	Offset      int64  // offset: commit-log offset of the original message
	Group       string // group
	DelayLevel  int32  // delayLevel: 0 broker's choice, >0 level, <0 DLQ
	OriginMsgID string // originMsgId, optional
	OriginTopic string // originTopic, optional
	UnitMode    bool   // unitMode
	// MaxReconsumeTimes (maxReconsumeTimes) is nil when absent; Java then
	// uses the group's retryMaxTimes.
	MaxReconsumeTimes *int32
	BrokerName        string // bname, optional
}

// DecodeFields implements Header.
func (h *ConsumerSendMsgBackRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("ConsumerSendMsgBackRequestHeader", ext)
	h.Offset = r.i64(true, 0, "offset")
	h.Group = r.nonEmpty("group")
	h.DelayLevel = r.i32(true, 0, "delayLevel")
	h.OriginMsgID = r.str(false, "originMsgId")
	h.OriginTopic = r.str(false, "originTopic")
	h.UnitMode = r.boolean(false, false, "unitMode")
	h.MaxReconsumeTimes = r.optI32("maxReconsumeTimes")
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *ConsumerSendMsgBackRequestHeader) EncodeFields(ext map[string]string) {
	putI64(ext, "offset", h.Offset)
	ext["group"] = h.Group
	putI32(ext, "delayLevel", h.DelayLevel)
	putOpt(ext, "originMsgId", h.OriginMsgID)
	putOpt(ext, "originTopic", h.OriginTopic)
	putBool(ext, "unitMode", h.UnitMode)
	putOptI32(ext, "maxReconsumeTimes", h.MaxReconsumeTimes)
	putOpt(ext, "bname", h.BrokerName)
}

// GetConsumerListByGroupRequestHeader is the header of
// GET_CONSUMER_LIST_BY_GROUP (38). Required: consumerGroup.
type GetConsumerListByGroupRequestHeader struct {
	ConsumerGroup string // consumerGroup
}

// DecodeFields implements Header.
func (h *GetConsumerListByGroupRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetConsumerListByGroupRequestHeader", ext)
	h.ConsumerGroup = r.nonEmpty("consumerGroup")
	return r.err
}

// EncodeFields implements Header.
func (h *GetConsumerListByGroupRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
}

// NotifyConsumerIdsChangedRequestHeader is the header of the
// server-to-client request NOTIFY_CONSUMER_IDS_CHANGED (40). Required:
// consumerGroup.
type NotifyConsumerIdsChangedRequestHeader struct {
	ConsumerGroup string // consumerGroup
}

// DecodeFields implements Header.
func (h *NotifyConsumerIdsChangedRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("NotifyConsumerIdsChangedRequestHeader", ext)
	h.ConsumerGroup = r.nonEmpty("consumerGroup")
	return r.err
}

// EncodeFields implements Header.
func (h *NotifyConsumerIdsChangedRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
}

// UnregisterClientRequestHeader is the header of UNREGISTER_CLIENT (35),
// which Java clients send on shutdown. Required: clientID.
type UnregisterClientRequestHeader struct {
	ClientID      string // clientID
	ProducerGroup string // producerGroup, optional
	ConsumerGroup string // consumerGroup, optional
}

// DecodeFields implements Header.
func (h *UnregisterClientRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("UnregisterClientRequestHeader", ext)
	h.ClientID = r.nonEmpty("clientID")
	h.ProducerGroup = r.str(false, "producerGroup")
	h.ConsumerGroup = r.str(false, "consumerGroup")
	return r.err
}

// EncodeFields implements Header.
func (h *UnregisterClientRequestHeader) EncodeFields(ext map[string]string) {
	ext["clientID"] = h.ClientID
	putOpt(ext, "producerGroup", h.ProducerGroup)
	putOpt(ext, "consumerGroup", h.ConsumerGroup)
}

// GetConsumerRunningInfoRequestHeader is the header of the
// server-to-client request GET_CONSUMER_RUNNING_INFO (307). Required:
// consumerGroup, clientId.
type GetConsumerRunningInfoRequestHeader struct {
	ConsumerGroup string // consumerGroup
	ClientID      string // clientId
	JstackEnable  bool   // jstackEnable, optional
}

// DecodeFields implements Header.
func (h *GetConsumerRunningInfoRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetConsumerRunningInfoRequestHeader", ext)
	h.ConsumerGroup = r.nonEmpty("consumerGroup")
	h.ClientID = r.nonEmpty("clientId")
	h.JstackEnable = r.boolean(false, false, "jstackEnable")
	return r.err
}

// EncodeFields implements Header.
func (h *GetConsumerRunningInfoRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["clientId"] = h.ClientID
	putBool(ext, "jstackEnable", h.JstackEnable)
}

// ConsumeMessageDirectlyRequestHeader is the header of
// CONSUME_MESSAGE_DIRECTLY (309), which an administration tool sends to a
// broker and the broker passes on to the consumer with the stored message
// as its body. Required: consumerGroup, clientId, msgId (an offset
// message id).
type ConsumeMessageDirectlyRequestHeader struct {
	ConsumerGroup string // consumerGroup
	ClientID      string // clientId
	MsgID         string // msgId
	BrokerName    string // brokerName, optional; the broker sets its own
	Topic         string // topic, optional
}

// DecodeFields implements Header.
func (h *ConsumeMessageDirectlyRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("ConsumeMessageDirectlyRequestHeader", ext)
	h.ConsumerGroup = r.nonEmpty("consumerGroup")
	h.ClientID = r.nonEmpty("clientId")
	h.MsgID = r.nonEmpty("msgId")
	h.BrokerName = r.str(false, "brokerName")
	h.Topic = r.str(false, "topic")
	return r.err
}

// EncodeFields implements Header.
func (h *ConsumeMessageDirectlyRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["clientId"] = h.ClientID
	ext["msgId"] = h.MsgID
	putOpt(ext, "brokerName", h.BrokerName)
	putOpt(ext, "topic", h.Topic)
}

// ResetOffsetRequestHeader is the header of RESET_CONSUMER_CLIENT_OFFSET
// (220, server to client) and INVOKE_BROKER_TO_RESET_OFFSET (222, admin to
// broker). Required: topic, group, timestamp.
type ResetOffsetRequestHeader struct {
	Topic     string // topic
	Group     string // group
	Timestamp int64  // timestamp, ms
	IsForce   bool   // isForce, optional
	// QueueID (queueId, Java 5) is nil when absent: all queues.
	QueueID *int32
	// Offset (offset, Java 5) is nil when absent: reset by Timestamp.
	Offset *int64
}

// DecodeFields implements Header.
func (h *ResetOffsetRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("ResetOffsetRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.Group = r.nonEmpty("group")
	h.Timestamp = r.i64(true, 0, "timestamp")
	h.IsForce = r.boolean(false, false, "isForce")
	h.QueueID = r.optI32("queueId")
	h.Offset = nil
	if n, ok := r.int(false, 0, 64, []string{"offset"}); ok {
		h.Offset = &n
	}
	return r.err
}

// EncodeFields implements Header.
func (h *ResetOffsetRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["group"] = h.Group
	putI64(ext, "timestamp", h.Timestamp)
	putBool(ext, "isForce", h.IsForce)
	putOptI32(ext, "queueId", h.QueueID)
	if h.Offset != nil {
		putI64(ext, "offset", *h.Offset)
	}
}
