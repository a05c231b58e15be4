package convert

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ErrCorrupt reports a stored record that cannot be delivered because it
// does not decode.
var ErrCorrupt = errors.New("convert: corrupt stored record")

// Delivery is what one delivery adds to a stored record.
type Delivery struct {
	// Topic is the topic the consumer asked for, as stored (with its
	// namespace). When the record's topic is the same, the message carries
	// this string (saving a copy).
	Topic string
	// Namespace is the consumer's: it goes into the message's topic
	// resource, and the topic's name is given without it (see
	// WithoutNamespace).
	Namespace string
	// Handle is the receipt handle; "" for pulls, which have none.
	Handle string
	// Attempt is the delivery attempt (≥ 1). 0 takes it from the
	// record's reconsume times, plus one.
	Attempt int32
	// Invisible is how long the message stays invisible; 0 leaves the
	// field out.
	Invisible time.Duration
	// Digest is the body digest to send (see DigestFor). Default MD5.
	Digest Digest
}

// Deliver returns the message a consumer receives for the stored record
// rec (see message.PeekStored):
//
//   - topic: the record's topic, or for a retry topic the topic the
//     message was first sent to (RETRY_TOPIC);
//   - user_properties: every property that is not a system property;
//   - system_properties: tag (TAGS), keys (KEYS split on spaces),
//     message_id (UNIQ_KEY, else the offset message id), body_digest
//     (of the body sent, as d.Digest says), body_encoding IDENTITY,
//     message_type (TRAN_MSG → TRANSACTION; a delay level or timer
//     property → DELAY; __SHARDINGKEY → FIFO; else NORMAL), born and
//     store times and hosts, delivery_timestamp for timer messages,
//     message_group, trace_context, dead_letter_queue (DLQ_ORIGIN_TOPIC,
//     DLQ_ORIGIN_MESSAGE_ID), queue id and offset, and what d gives:
//     receipt_handle, invisible_duration, delivery_attempt.
//
// A compressed body (SYSFLAG bit 0, with zlib, LZ4 or zstd as its
// compression type says) is inflated, since RocketMQ 5 clients only
// understand gzip; a body that does not inflate is delivered as stored. Protocol strings
// are UTF-8: invalid bytes in properties become U+FFFD. The message's
// strings alias nothing in rec, but an uncompressed body is rec's: rec
// must not change while the message is in use.
//
// AppendMessage writes the same message in its wire form. Errors wrap
// ErrCorrupt.
func Deliver(rec []byte, d Delivery) (*rmqpb.Message, error) {
	sc, err := scanRecord(rec)
	if err != nil {
		return nil, err
	}
	b := new(delivered)
	m, sp := &b.msg, &b.sys
	m.Topic, m.SystemProperties = &b.topic, sp

	// One string holds every property; names and values are substrings
	// of it.
	props := string(sc.props)
	str := func(s span) string { return props[s.start:s.end] }
	b.topic.ResourceNamespace = d.Namespace
	switch {
	case sc.retryTopic.len() > 0 && sc.isRetry:
		b.topic.Name = str(sc.retryTopic)
	case string(sc.topic) == d.Topic:
		b.topic.Name = d.Topic
	default:
		b.topic.Name = string(sc.topic)
	}
	b.topic.Name = WithoutNamespace(d.Namespace, b.topic.Name)

	for off := 0; off < len(sc.props); {
		k, v, next, ok := nextPair(sc.props, off)
		off = next
		if !ok || isSystemName(sc.props[k.start:k.end]) {
			continue
		}
		if m.UserProperties == nil {
			m.UserProperties = make(map[string]string, 4)
		}
		m.UserProperties[str(k)] = str(v)
	}

	if sc.tag.ok {
		b.tag = str(sc.tag)
		sp.Tag = &b.tag
	}
	for key := range strings.SplitSeq(str(sc.keys), message.KeySeparator) {
		if key != "" {
			sp.Keys = append(sp.Keys, key)
		}
	}
	if sc.msgID.len() > 0 {
		sp.MessageId = str(sc.msgID)
	} else {
		sp.MessageId = message.OffsetID(sc.h.StoreHost, sc.h.CommitLogOffset)
	}
	body := sc.body()
	m.Body = body
	b.digest.Type = d.Digest.Type()
	var sum [maxChecksum]byte
	b.digest.Checksum = string(appendChecksum(sum[:0], body, d.Digest))
	sp.BodyDigest = &b.digest
	sp.BodyEncoding = rmqpb.Encoding_IDENTITY
	sp.MessageType = sc.messageType()
	setMillis(&b.born, sc.h.BornTimestamp)
	sp.BornTimestamp = &b.born
	if sc.bornHost.len() > 0 {
		sp.BornHost = str(sc.bornHost)
	} else if a := sc.h.BornHost.Addr(); a.IsValid() {
		sp.BornHost = a.Unmap().String()
	}
	setMillis(&b.store, sc.h.StoreTimestamp)
	sp.StoreTimestamp = &b.store
	if sc.h.StoreHost.Addr().IsValid() {
		sp.StoreHost = sc.h.StoreHost.String()
	}
	if due := sc.dueMillis(); due > 0 {
		setMillis(&b.due, due)
		sp.DeliveryTimestamp = &b.due
	}
	if d.Handle != "" {
		b.handle = d.Handle
		sp.ReceiptHandle = &b.handle
	}
	sp.QueueId = sc.h.QueueID
	b.offset = sc.h.QueueOffset
	sp.QueueOffset = &b.offset
	if d.Invisible > 0 {
		p := durationParts(d.Invisible)
		b.invisible.Seconds, b.invisible.Nanos = p.secs, p.nanos
		sp.InvisibleDuration = &b.invisible
	}
	b.attempt = sc.attempt(d)
	sp.DeliveryAttempt = &b.attempt
	if sc.group.ok {
		b.group = str(sc.group)
		sp.MessageGroup = &b.group
	}
	if sc.trace.ok {
		b.trace = str(sc.trace)
		sp.TraceContext = &b.trace
	}
	if sc.dlqTopic.len() > 0 || sc.dlqID.len() > 0 {
		b.dlq.Topic, b.dlq.MessageId = str(sc.dlqTopic), str(sc.dlqID)
		sp.DeadLetterQueue = &b.dlq
	}
	return m, nil
}

// delivered holds a message and the parts it points to, so that one
// allocation builds all of them.
type delivered struct {
	msg       rmqpb.Message
	sys       rmqpb.SystemProperties
	topic     rmqpb.Resource
	digest    rmqpb.Digest
	born      timestamppb.Timestamp
	store     timestamppb.Timestamp
	due       timestamppb.Timestamp
	invisible durationpb.Duration
	dlq       rmqpb.DeadLetterQueue

	tag, handle, group, trace string
	offset                    int64
	attempt                   int32
}

// span is a range of a properties string; ok says the property is there.
type span struct {
	start, end int
	ok         bool
}

func (s span) len() int { return s.end - s.start }

// scanned is a stored record read for delivery: its header, and where its
// system properties are in its (UTF-8) properties string.
type scanned struct {
	h       message.Header
	props   []byte
	topic   []byte // the record's topic, UTF-8
	isRetry bool   // the topic is a retry topic

	tag, keys, msgID, group, trace, bornHost span
	retryTopic, dlqTopic, dlqID, due         span
	transaction, delay                       bool
}

// scanRecord reads rec's header and properties in place.
func scanRecord(rec []byte) (scanned, error) {
	var sc scanned
	h, err := message.PeekStored(rec)
	if err != nil {
		return sc, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	sc.h = h
	sc.props, sc.topic = h.Properties, h.Topic
	// Old clients may write properties in other encodings. The
	// separators are ASCII, so no piece of a valid string is invalid.
	if !utf8.Valid(sc.props) {
		sc.props = []byte(strings.ToValidUTF8(string(sc.props), "\uFFFD"))
	}
	if !utf8.Valid(sc.topic) {
		sc.topic = []byte(strings.ToValidUTF8(string(sc.topic), "\uFFFD"))
	}
	sc.isRetry = bytes.HasPrefix(sc.topic, []byte(message.RetryTopicPrefix))
	var timerSource span
	for off := 0; off < len(sc.props); {
		k, v, next, ok := nextPair(sc.props, off)
		off = next
		if !ok {
			continue
		}
		// Later occurrences win, as message.DecodeProperties reads them.
		switch string(sc.props[k.start:k.end]) {
		case message.PropertyTags:
			sc.tag = v
		case message.PropertyKeys:
			sc.keys = v
		case message.PropertyUniqKey:
			sc.msgID = v
		case message.PropertyShardingKey:
			sc.group = v
		case message.PropertyTransactionPrepared:
			sc.transaction = bytes.EqualFold(sc.props[v.start:v.end], []byte("true"))
		case message.PropertyDelayLevel, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS:
			sc.delay = true
		case message.PropertyTimerDeliverMS:
			sc.delay, sc.due = true, v
		case propertyTimerSource:
			timerSource = v
		case message.PropertyBornHost:
			sc.bornHost = v
		case message.PropertyTraceContext:
			sc.trace = v
		case message.PropertyRetryTopic:
			sc.retryTopic = v
		case message.PropertyDLQOriginTopic:
			sc.dlqTopic = v
		case message.PropertyDLQOriginMessageID:
			sc.dlqID = v
		}
	}
	// A delivered timer message no longer carries its timer properties;
	// TIMER_SRC ("due,offset") names the timer entry it came from.
	if !sc.due.ok && timerSource.ok {
		if i := bytes.IndexByte(sc.props[timerSource.start:timerSource.end], ','); i >= 0 {
			sc.delay = true
			sc.due = span{timerSource.start, timerSource.start + i, true}
		}
	}
	return sc, nil
}

// nextPair returns the name and value of the piece of props starting at
// off, and where the next piece starts. ok is false for a piece that is
// not a pair (skipped, as message.DecodeProperties skips it).
func nextPair(props []byte, off int) (k, v span, next int, ok bool) {
	name, value, rest, ok := message.NextProperty(props[off:])
	next = len(props) - len(rest)
	if !ok {
		return k, v, next, false
	}
	vStart := off + len(name) + 1
	return span{off, off + len(name), true}, span{vStart, vStart + len(value), true}, next, true
}

// isSystemName reports whether a property is a system property, which is
// not delivered as a user property.
func isSystemName(k []byte) bool {
	return systemProperties[string(k)] || bytes.HasPrefix(k, []byte(message.PropertyTransientPrefix))
}

func (sc *scanned) bytes(s span) []byte { return sc.props[s.start:s.end] }

// body returns the body to deliver: inflated when compressed.
func (sc *scanned) body() []byte {
	if sc.h.SysFlag&message.SysFlagCompressed != 0 {
		return inflate(sc.h.SysFlag, sc.h.Body)
	}
	return sc.h.Body
}

func (sc *scanned) messageType() rmqpb.MessageType {
	switch {
	case sc.transaction:
		return rmqpb.MessageType_TRANSACTION
	case sc.delay:
		return rmqpb.MessageType_DELAY
	case sc.group.ok:
		return rmqpb.MessageType_FIFO
	}
	return rmqpb.MessageType_NORMAL
}

// dueMillis returns the delivery time of a timer message, 0 when it has
// none.
func (sc *scanned) dueMillis() int64 {
	if !sc.due.ok {
		return 0
	}
	ms, err := strconv.ParseInt(string(sc.bytes(sc.due)), 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	return ms
}

func (sc *scanned) attempt(d Delivery) int32 {
	if d.Attempt > 0 {
		return d.Attempt
	}
	return max(sc.h.ReconsumeTimes, 0) + 1
}

const hexUpper = "0123456789ABCDEF"

func setMillis(t *timestamppb.Timestamp, ms int64) {
	p := millisParts(ms)
	t.Seconds, t.Nanos = p.secs, p.nanos
}

// timeParts are the fields of a Timestamp or a Duration.
type timeParts struct {
	secs  int64
	nanos int32
}

// millisParts splits ms since the epoch into a Timestamp's seconds and
// non-negative nanoseconds.
func millisParts(ms int64) timeParts {
	s, n := ms/1000, int32(ms%1000)*int32(time.Millisecond)
	if n < 0 {
		s--
		n += int32(time.Second)
	}
	return timeParts{s, n}
}

func durationParts(d time.Duration) timeParts {
	return timeParts{int64(d / time.Second), int32(d % time.Second)}
}

// propertyTimerSource is the property the engine puts on a timer message
// it delivers: "due,offset" of the timer entry.
const propertyTimerSource = "TIMER_SRC"

// systemProperties are the property names a message carries for the
// broker and clients' own use; they are not user properties. They are
// RocketMQ's (Java's MessageConst) and the engine's own.
var systemProperties = func() map[string]bool {
	names := []string{
		message.PropertyTags, message.PropertyKeys, message.PropertyUniqKey, message.PropertyWait,
		message.PropertyShardingKey,
		message.PropertyDelayLevel, message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec,
		message.PropertyTimerDelayMS, message.PropertyTimerOutMS, message.PropertyTimerEnqueueMS,
		message.PropertyTimerDequeueMS, message.PropertyTimerRollTimes, message.PropertyTimerDelUniqKey,
		message.PropertyStartDeliverTime, propertyTimerSource, "TIMER_DELAY_LEVEL",
		message.PropertyTransactionPrepared, message.PropertyProducerGroup, message.PropertyTransactionID,
		message.PropertyTransactionPreparedQueueOffset, message.PropertyTransactionCheckTimes,
		message.PropertyCheckImmunitySeconds, "TRAN_SRC",
		message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyRetryTopic,
		message.PropertyOriginMessageID, message.PropertyReconsumeTime, message.PropertyMaxReconsumeTimes,
		message.PropertyDLQOriginTopic, message.PropertyDLQOriginMessageID,
		message.PropertyMinOffset, message.PropertyMaxOffset, message.PropertyConsumeStartTime,
		message.PropertyCluster, message.PropertyCorrelationID, message.PropertyReplyToClient,
		message.PropertyTTL, message.PropertyArriveTime, message.PropertyPushReplyTime,
		message.PropertyMessageType,
		message.PropertyInnerMultiDispatch, message.PropertyInnerMultiQueueOffset,
		message.PropertyPopCK, message.PropertyPopCKOffset, message.PropertyFirstPopTime,
		message.PropertyBornHost, message.PropertyBornTimestamp, message.PropertyTraceContext,
		message.PropertyTraceSwitch, message.PropertyMsgRegion, message.PropertyBuyerID,
		message.PropertyTransferFlag, message.PropertyCorrectionFlag, message.PropertyMQ2Flag,
		message.PropertyInstanceID, message.PropertyExtendUniqInfo, message.PropertyInnerNum,
		message.PropertyInnerBase, message.PropertyDupInfo,
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}()
