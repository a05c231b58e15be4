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

// TopicRequestHeader is the header of the requests that name one topic
// and nothing else: QUERY_TOPIC_CONSUME_BY_WHO (300) and GET_TOPIC_CONFIG
// (351). Required: topic.
type TopicRequestHeader struct {
	Topic string // topic
}

// DecodeFields implements Header.
func (h *TopicRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("TopicRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	return r.err
}

// EncodeFields implements Header.
func (h *TopicRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
}

// GroupRequestHeader is the header of the requests that name one consumer
// group and nothing else: QUERY_TOPICS_BY_CONSUMER (343) and
// GET_SUBSCRIPTIONGROUP_CONFIG (352). Required: group.
type GroupRequestHeader struct {
	Group string // group
}

// DecodeFields implements Header.
func (h *GroupRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GroupRequestHeader", ext)
	h.Group = r.nonEmpty("group")
	return r.err
}

// EncodeFields implements Header.
func (h *GroupRequestHeader) EncodeFields(ext map[string]string) {
	ext["group"] = h.Group
}
