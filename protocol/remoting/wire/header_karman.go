package wire

import "strconv"

// RocketMQ has no request that puts a dead letter back on its topic (its
// tools consume the message directly through a live consumer). Karman
// adds one. Request codes 30000 to 30999 are kept for Karman's own
// requests: they fit the 16-bit code of binary headers and stay clear of
// every code Java defines.

// KarmanResendDeadLetter is KARMAN_RESEND_DEAD_LETTER: put a dead letter of
// a consumer group back on the topic it came from, as a new message with
// the same client message id, keys and properties and a fresh attempt
// count (the broker calls engine.ResendDeadLetter).
//
// Request header (ResendDeadLetterRequestHeader), no body:
//
//	group   required  the consumer group; the dead letter is in %DLQ%<group>
//	msgId   required  the dead letter's client message id (UNIQ_KEY) or offset message id
//
// Response SUCCESS, no body, header (ResendDeadLetterResponseHeader):
//
//	topic        the topic the message went back to
//	msgId        the new message's client message id (the dead letter's UNIQ_KEY)
//	offsetMsgId  the new message's offset message id
//	queueId      the queue it was stored in
//	queueOffset  its offset in that queue
//
// Other answers: QUERY_NOT_FOUND (22) when the broker holds no such dead
// letter of the group, TOPIC_NOT_EXIST (17) when its topic is gone,
// INVALID_PARAMETER (29) for a missing field, REQUEST_CODE_NOT_SUPPORTED
// (3) from brokers without the request.
const KarmanResendDeadLetter RequestCode = 30000

// ResendDeadLetterRequestHeader is the header of KARMAN_RESEND_DEAD_LETTER.
type ResendDeadLetterRequestHeader struct {
	Group string // group
	MsgID string // msgId
}

// DecodeFields implements Header.
func (h *ResendDeadLetterRequestHeader) DecodeFields(ext map[string]string) error {
	h.Group, h.MsgID = ext["group"], ext["msgId"]
	for _, f := range []struct{ key, v string }{{"group", h.Group}, {"msgId", h.MsgID}} {
		if f.v == "" {
			return &FieldError{Header: "ResendDeadLetterRequestHeader", Field: f.key, Err: ErrMissingField}
		}
	}
	return nil
}

// EncodeFields implements Header.
func (h *ResendDeadLetterRequestHeader) EncodeFields(ext map[string]string) {
	ext["group"] = h.Group
	ext["msgId"] = h.MsgID
}

// ResendDeadLetterResponseHeader is the header of a successful
// KARMAN_RESEND_DEAD_LETTER response. Every field is required.
type ResendDeadLetterResponseHeader struct {
	Topic       string // topic
	MsgID       string // msgId
	OffsetMsgID string // offsetMsgId
	QueueID     int32  // queueId
	QueueOffset int64  // queueOffset
}

// DecodeFields implements Header.
func (h *ResendDeadLetterResponseHeader) DecodeFields(ext map[string]string) error {
	const name = "ResendDeadLetterResponseHeader"
	for _, k := range []string{"topic", "msgId", "offsetMsgId", "queueId", "queueOffset"} {
		if _, ok := ext[k]; !ok {
			return &FieldError{Header: name, Field: k, Err: ErrMissingField}
		}
	}
	q, err := strconv.ParseInt(ext["queueId"], 10, 32)
	if err != nil {
		return &FieldError{Header: name, Field: "queueId", Value: ext["queueId"], Err: ErrInvalidField, Reason: "want int32"}
	}
	off, err := strconv.ParseInt(ext["queueOffset"], 10, 64)
	if err != nil {
		return &FieldError{Header: name, Field: "queueOffset", Value: ext["queueOffset"], Err: ErrInvalidField, Reason: "want int64"}
	}
	h.Topic, h.MsgID, h.OffsetMsgID = ext["topic"], ext["msgId"], ext["offsetMsgId"]
	h.QueueID, h.QueueOffset = int32(q), off
	return nil
}

// EncodeFields implements Header.
func (h *ResendDeadLetterResponseHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["msgId"] = h.MsgID
	ext["offsetMsgId"] = h.OffsetMsgID
	ext["queueId"] = strconv.FormatInt(int64(h.QueueID), 10)
	ext["queueOffset"] = strconv.FormatInt(h.QueueOffset, 10)
}
