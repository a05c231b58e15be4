package wire

import "strings"

// QueryConsumerOffsetRequestHeader is the header of QUERY_CONSUMER_OFFSET
// (14). Required: consumerGroup, topic, queueId.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup string // consumerGroup
	Topic         string // topic
	QueueID       int32  // queueId
	// SetZeroIfNotFound (setZeroIfNotFound) is true when absent. When
	// false, Java answers QUERY_NOT_FOUND instead of offset 0 for a group
	// that never committed on a queue that was never truncated. Encoded
	// only when false.
	SetZeroIfNotFound bool
	BrokerName        string // bname, optional
}

// DecodeFields implements Header.
func (h *QueryConsumerOffsetRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("QueryConsumerOffsetRequestHeader", ext)
	h.ConsumerGroup = r.nonEmpty("consumerGroup")
	h.Topic = r.nonEmpty("topic")
	h.QueueID = r.i32(true, 0, "queueId")
	h.SetZeroIfNotFound = r.boolean(false, true, "setZeroIfNotFound")
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *QueryConsumerOffsetRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	putI32(ext, "queueId", h.QueueID)
	if !h.SetZeroIfNotFound {
		ext["setZeroIfNotFound"] = "false"
	}
	putOpt(ext, "bname", h.BrokerName)
}

// UpdateConsumerOffsetRequestHeader is the header of
// UPDATE_CONSUMER_OFFSET (15). Required: consumerGroup, topic, queueId,
// commitOffset.
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string // consumerGroup
	Topic         string // topic
	QueueID       int32  // queueId
	CommitOffset  int64  // commitOffset: next offset to consume
	BrokerName    string // bname, optional
}

// DecodeFields implements Header.
func (h *UpdateConsumerOffsetRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("UpdateConsumerOffsetRequestHeader", ext)
	h.ConsumerGroup = r.nonEmpty("consumerGroup")
	h.Topic = r.nonEmpty("topic")
	h.QueueID = r.i32(true, 0, "queueId")
	h.CommitOffset = r.i64(true, 0, "commitOffset")
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *UpdateConsumerOffsetRequestHeader) EncodeFields(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	putI32(ext, "queueId", h.QueueID)
	putI64(ext, "commitOffset", h.CommitOffset)
	putOpt(ext, "bname", h.BrokerName)
}

// GetMaxOffsetRequestHeader is the header of GET_MAX_OFFSET (30).
// Required: topic, queueId.
type GetMaxOffsetRequestHeader struct {
	Topic   string // topic
	QueueID int32  // queueId
	// Committed (committed, Java 5) is true when absent; encoded only when
	// false.
	Committed  bool
	BrokerName string // bname, optional
}

// DecodeFields implements Header.
func (h *GetMaxOffsetRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetMaxOffsetRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.QueueID = r.i32(true, 0, "queueId")
	h.Committed = r.boolean(false, true, "committed")
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *GetMaxOffsetRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	putI32(ext, "queueId", h.QueueID)
	if !h.Committed {
		ext["committed"] = "false"
	}
	putOpt(ext, "bname", h.BrokerName)
}

// GetMinOffsetRequestHeader is the header of GET_MIN_OFFSET (31).
// Required: topic, queueId.
type GetMinOffsetRequestHeader struct {
	Topic      string // topic
	QueueID    int32  // queueId
	BrokerName string // bname, optional
}

// DecodeFields implements Header.
func (h *GetMinOffsetRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetMinOffsetRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.QueueID = r.i32(true, 0, "queueId")
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *GetMinOffsetRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	putI32(ext, "queueId", h.QueueID)
	putOpt(ext, "bname", h.BrokerName)
}

// GetEarliestMsgStoretimeRequestHeader is the header of
// GET_EARLIEST_MSG_STORETIME (32). Required: topic, queueId.
type GetEarliestMsgStoretimeRequestHeader struct {
	Topic      string // topic
	QueueID    int32  // queueId
	BrokerName string // bname, optional
}

// DecodeFields implements Header.
func (h *GetEarliestMsgStoretimeRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetEarliestMsgStoretimeRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.QueueID = r.i32(true, 0, "queueId")
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *GetEarliestMsgStoretimeRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	putI32(ext, "queueId", h.QueueID)
	putOpt(ext, "bname", h.BrokerName)
}

// GetEarliestMsgStoretimeResponseHeader is the response header of
// GET_EARLIEST_MSG_STORETIME: the store time (ms) of the queue's first
// message, -1 when it holds none.
type GetEarliestMsgStoretimeResponseHeader struct {
	Timestamp int64 // timestamp
}

// DecodeFields implements Header.
func (h *GetEarliestMsgStoretimeResponseHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("GetEarliestMsgStoretimeResponseHeader", ext)
	h.Timestamp = r.i64(true, 0, "timestamp")
	return r.err
}

// EncodeFields implements Header.
func (h *GetEarliestMsgStoretimeResponseHeader) EncodeFields(ext map[string]string) {
	putI64(ext, "timestamp", h.Timestamp)
}

// Boundary types of SearchOffsetRequestHeader.
const (
	BoundaryLower = "LOWER"
	BoundaryUpper = "UPPER"
)

// SearchOffsetRequestHeader is the header of SEARCH_OFFSET_BY_TIMESTAMP
// (29). Required: topic, queueId, timestamp.
type SearchOffsetRequestHeader struct {
	Topic     string // topic
	QueueID   int32  // queueId
	Timestamp int64  // timestamp, ms
	// BoundaryType (boundaryType, Java 5) chooses the first (BoundaryLower,
	// the default) or last (BoundaryUpper) message stored at the time. The
	// decoder accepts either case and normalises to upper case.
	BoundaryType string
	BrokerName   string // bname, optional
}

// DecodeFields implements Header.
func (h *SearchOffsetRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("SearchOffsetRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.QueueID = r.i32(true, 0, "queueId")
	h.Timestamp = r.i64(true, 0, "timestamp")
	h.BoundaryType = BoundaryLower
	if v := r.str(false, "boundaryType"); v != "" {
		switch {
		case strings.EqualFold(v, BoundaryLower):
		case strings.EqualFold(v, BoundaryUpper):
			h.BoundaryType = BoundaryUpper
		default:
			r.invalid([]string{"boundaryType"}, v, "want LOWER or UPPER")
		}
	}
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *SearchOffsetRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	putI32(ext, "queueId", h.QueueID)
	putI64(ext, "timestamp", h.Timestamp)
	putOpt(ext, "boundaryType", h.BoundaryType)
	putOpt(ext, "bname", h.BrokerName)
}

// OffsetResponseHeader is the response header of QUERY_CONSUMER_OFFSET,
// GET_MAX_OFFSET, GET_MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP, which
// all carry one required field, offset. The Go client reads it without
// checking the response code, so always send it.
type OffsetResponseHeader struct {
	Offset int64 // offset
}

// DecodeFields implements Header.
func (h *OffsetResponseHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("OffsetResponseHeader", ext)
	h.Offset = r.i64(true, 0, "offset")
	return r.err
}

// EncodeFields implements Header.
func (h *OffsetResponseHeader) EncodeFields(ext map[string]string) {
	putI64(ext, "offset", h.Offset)
}
