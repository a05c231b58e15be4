package wire

// GetConsumerConnectionListRequestHeader is the header of
// GET_CONSUMER_CONNECTION_LIST (203). Required: consumerGroup.
type GetConsumerConnectionListRequestHeader struct {
	ConsumerGroup string // consumerGroup
}

// DecodeFields implements Header.
func (h *GetConsumerConnectionListRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetConsumerConnectionListRequestHeader", ext)
	h.ConsumerGroup = r.nonEmpty("consumerGroup")
	return r.err
}

// EncodeFields implements Header.
func (h *GetConsumerConnectionListRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
}

// GetProducerConnectionListRequestHeader is the header of
// GET_PRODUCER_CONNECTION_LIST (204). Required: producerGroup.
type GetProducerConnectionListRequestHeader struct {
	ProducerGroup string // producerGroup
}

// DecodeFields implements Header.
func (h *GetProducerConnectionListRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetProducerConnectionListRequestHeader", ext)
	h.ProducerGroup = r.nonEmpty("producerGroup")
	return r.err
}

// EncodeFields implements Header.
func (h *GetProducerConnectionListRequestHeader) EncodeFields(ext map[string]string) {
	ext["producerGroup"] = h.ProducerGroup
}

// GetConsumeStatsRequestHeader is the header of GET_CONSUME_STATS (208).
// Required: consumerGroup. An empty topic asks for every topic the group
// consumes.
type GetConsumeStatsRequestHeader struct {
	ConsumerGroup string // consumerGroup
	Topic         string // topic, optional
}

// DecodeFields implements Header.
func (h *GetConsumeStatsRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetConsumeStatsRequestHeader", ext)
	h.ConsumerGroup = r.nonEmpty("consumerGroup")
	h.Topic = r.str(false, "topic")
	return r.err
}

// EncodeFields implements Header.
func (h *GetConsumeStatsRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	putOpt(ext, "topic", h.Topic)
}

// GetTopicStatsInfoRequestHeader is the header of GET_TOPIC_STATS_INFO
// (202). Required: topic.
type GetTopicStatsInfoRequestHeader struct {
	Topic string // topic
}

// DecodeFields implements Header.
func (h *GetTopicStatsInfoRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetTopicStatsInfoRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	return r.err
}

// EncodeFields implements Header.
func (h *GetTopicStatsInfoRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
}

// QueryTopicConsumeByWhoRequestHeader is the header of
// QUERY_TOPIC_CONSUME_BY_WHO (300). Required: topic.
type QueryTopicConsumeByWhoRequestHeader struct {
	Topic string // topic
}

// DecodeFields implements Header.
func (h *QueryTopicConsumeByWhoRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("QueryTopicConsumeByWhoRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	return r.err
}

// EncodeFields implements Header.
func (h *QueryTopicConsumeByWhoRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
}

// QueryTopicsByConsumerRequestHeader is the header of
// QUERY_TOPICS_BY_CONSUMER (343). Required: group.
type QueryTopicsByConsumerRequestHeader struct {
	Group string // group
}

// DecodeFields implements Header.
func (h *QueryTopicsByConsumerRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("QueryTopicsByConsumerRequestHeader", ext)
	h.Group = r.nonEmpty("group")
	return r.err
}

// EncodeFields implements Header.
func (h *QueryTopicsByConsumerRequestHeader) EncodeFields(ext map[string]string) {
	ext["group"] = h.Group
}
