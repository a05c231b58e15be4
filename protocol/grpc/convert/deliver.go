package convert

import (
	"bytes"
	"compress/zlib"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
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

// MaxInflatedBody bounds the body Deliver inflates from a compressed
// record; a body that would inflate to more is delivered as stored.
const MaxInflatedBody = 64 << 20

// Delivery is what one delivery adds to a stored record.
type Delivery struct {
	// Topic is the topic the consumer asked for. When the record's topic
	// is the same, the message carries this string (saving a copy).
	Topic string
	// Namespace goes into the message's topic resource.
	Namespace string
	// Handle is the receipt handle; "" for pulls, which have none.
	Handle string
	// Attempt is the delivery attempt (≥ 1). 0 takes it from the
	// record's reconsume times, plus one.
	Attempt int32
	// Invisible is how long the message stays invisible; 0 leaves the
	// field out.
	Invisible time.Duration
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

// Deliver returns the message a consumer receives for the stored record
// rec (see message.PeekStored):
//
//   - topic: the record's topic, or for a retry topic the topic the
//     message was first sent to (RETRY_TOPIC);
//   - user_properties: every property that is not a system property;
//   - system_properties: tag (TAGS), keys (KEYS split on spaces),
//     message_id (UNIQ_KEY, else the offset message id), body_digest
//     (MD5, uppercase hex, of the body sent), body_encoding IDENTITY,
//     message_type (TRAN_MSG → TRANSACTION; a delay level or timer
//     property → DELAY; __SHARDINGKEY → FIFO; else NORMAL), born and
//     store times and hosts, delivery_timestamp for timer messages,
//     message_group, trace_context, dead_letter_queue (DLQ_ORIGIN_TOPIC,
//     DLQ_ORIGIN_MESSAGE_ID), queue id and offset, and what d gives:
//     receipt_handle, invisible_duration, delivery_attempt.
//
// A compressed body (SYSFLAG bit 0, zlib) is inflated, since RocketMQ 5
// clients only understand gzip; a body that does not inflate, or that is
// compressed with another codec, is delivered as stored. The message's
// strings and body alias nothing in rec except the body of an
// uncompressed record, which the message shares: rec must not change
// while the message is in use.
//
// Errors wrap ErrCorrupt.
func Deliver(rec []byte, d Delivery) (*rmqpb.Message, error) {
	h, err := message.PeekStored(rec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	b := new(delivered)
	m, sp := &b.msg, &b.sys
	m.Topic, m.SystemProperties = &b.topic, sp

	topic := d.Topic
	if string(h.Topic) != topic {
		topic = strings.ToValidUTF8(string(h.Topic), "\uFFFD")
	}
	b.topic.ResourceNamespace = d.Namespace

	var (
		retryTopic, delayDue, timerSource string
		dlqTopic, dlqID, bornHost         string
		transaction, delay                bool
	)
	// One string holds every property; names and values are substrings
	// of it. Protocol strings must be UTF-8: invalid bytes (old clients
	// writing other encodings) become U+FFFD. The separators are ASCII,
	// so no piece of a valid string is invalid.
	props := string(h.Properties)
	if !utf8.ValidString(props) {
		props = strings.ToValidUTF8(props, "\uFFFD")
	}
	for rest := props; rest != ""; {
		var piece string
		piece, rest, _ = strings.Cut(rest, "\x02")
		k, v, ok := strings.Cut(piece, "\x01")
		if !ok || k == "" || strings.IndexByte(v, 1) >= 0 {
			continue // not a pair: skipped, as message.DecodeProperties does
		}
		switch k {
		case message.PropertyTags:
			b.tag = v
			sp.Tag = &b.tag
		case message.PropertyKeys:
			sp.Keys = sp.Keys[:0]
			for key := range strings.SplitSeq(v, message.KeySeparator) {
				if key != "" {
					sp.Keys = append(sp.Keys, key)
				}
			}
		case message.PropertyUniqKey:
			sp.MessageId = v
		case message.PropertyShardingKey:
			b.group = v
			sp.MessageGroup = &b.group
		case message.PropertyTransactionPrepared:
			transaction = strings.EqualFold(v, "true")
		case message.PropertyDelayLevel, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS:
			delay = true
		case message.PropertyTimerDeliverMS:
			delay, delayDue = true, v
		case propertyTimerSource:
			timerSource = v
		case message.PropertyBornHost:
			bornHost = v
		case message.PropertyTraceContext:
			b.trace = v
			sp.TraceContext = &b.trace
		case message.PropertyRetryTopic:
			retryTopic = v
		case message.PropertyDLQOriginTopic:
			dlqTopic = v
		case message.PropertyDLQOriginMessageID:
			dlqID = v
		default:
			if systemProperties[k] || strings.HasPrefix(k, message.PropertyTransientPrefix) {
				continue
			}
			if m.UserProperties == nil {
				m.UserProperties = make(map[string]string, 4)
			}
			m.UserProperties[k] = v
		}
	}

	if retryTopic != "" && strings.HasPrefix(topic, message.RetryTopicPrefix) {
		topic = retryTopic
	}
	b.topic.Name = topic

	body := h.Body
	if h.SysFlag&message.SysFlagCompressed != 0 {
		body = inflate(h.SysFlag, h.Body)
	}
	m.Body = body
	sum := md5.Sum(body)
	var hexSum [2 * md5.Size]byte
	for i, c := range sum {
		hexSum[2*i], hexSum[2*i+1] = hexUpper[c>>4], hexUpper[c&0x0F]
	}
	b.digest.Type = rmqpb.DigestType_MD5
	b.digest.Checksum = string(hexSum[:])
	sp.BodyDigest = &b.digest
	sp.BodyEncoding = rmqpb.Encoding_IDENTITY

	if sp.MessageId == "" {
		sp.MessageId = message.OffsetID(h.StoreHost, h.CommitLogOffset)
	}

	// A delivered timer message no longer carries its timer properties;
	// TIMER_SRC ("due,offset") names the timer entry it came from.
	if due, _, ok := strings.Cut(timerSource, ","); ok && delayDue == "" {
		delay, delayDue = true, due
	}
	switch {
	case transaction:
		sp.MessageType = rmqpb.MessageType_TRANSACTION
	case delay:
		sp.MessageType = rmqpb.MessageType_DELAY
	case sp.MessageGroup != nil:
		sp.MessageType = rmqpb.MessageType_FIFO
	default:
		sp.MessageType = rmqpb.MessageType_NORMAL
	}
	if ms, err := strconv.ParseInt(delayDue, 10, 64); err == nil && ms > 0 {
		setMillis(&b.due, ms)
		sp.DeliveryTimestamp = &b.due
	}

	setMillis(&b.born, h.BornTimestamp)
	sp.BornTimestamp = &b.born
	if bornHost == "" && h.BornHost.Addr().IsValid() {
		bornHost = h.BornHost.Addr().Unmap().String()
	}
	sp.BornHost = bornHost
	setMillis(&b.store, h.StoreTimestamp)
	sp.StoreTimestamp = &b.store
	if h.StoreHost.Addr().IsValid() {
		sp.StoreHost = h.StoreHost.String()
	}

	sp.QueueId = h.QueueID
	b.offset = h.QueueOffset
	sp.QueueOffset = &b.offset
	b.attempt = d.Attempt
	if b.attempt <= 0 {
		b.attempt = max(h.ReconsumeTimes, 0) + 1
	}
	sp.DeliveryAttempt = &b.attempt
	if d.Handle != "" {
		b.handle = d.Handle
		sp.ReceiptHandle = &b.handle
	}
	if d.Invisible > 0 {
		b.invisible.Seconds = int64(d.Invisible / time.Second)
		b.invisible.Nanos = int32(d.Invisible % time.Second)
		sp.InvisibleDuration = &b.invisible
	}
	if dlqTopic != "" || dlqID != "" {
		b.dlq.Topic, b.dlq.MessageId = dlqTopic, dlqID
		sp.DeadLetterQueue = &b.dlq
	}
	return m, nil
}

const hexUpper = "0123456789ABCDEF"

func setMillis(t *timestamppb.Timestamp, ms int64) {
	t.Seconds = ms / 1000
	t.Nanos = int32(ms%1000) * int32(time.Millisecond)
	if t.Nanos < 0 {
		t.Seconds--
		t.Nanos += int32(time.Second)
	}
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

// zlibReaders recycles zlib readers, which allocate tens of KiB each.
var zlibReaders sync.Pool

// inflate returns the uncompressed body of a compressed record, or body
// itself when it cannot: another codec than zlib, corrupt data, or more
// than MaxInflatedBody bytes.
func inflate(sysFlag int32, body []byte) []byte {
	switch sysFlag & message.SysFlagCompressionMask {
	case 0, message.SysFlagCompressionZlib:
	default:
		return body
	}
	src := bytes.NewReader(body)
	var zr io.ReadCloser
	if r, ok := zlibReaders.Get().(io.ReadCloser); ok {
		if err := r.(zlib.Resetter).Reset(src, nil); err != nil {
			zlibReaders.Put(r)
			return body
		}
		zr = r
	} else {
		r, err := zlib.NewReader(src)
		if err != nil {
			return body
		}
		zr = r
	}
	defer zlibReaders.Put(zr)
	out := bytes.NewBuffer(make([]byte, 0, min(4*len(body)+512, MaxInflatedBody+1)))
	n, err := io.Copy(out, io.LimitReader(zr, MaxInflatedBody+1))
	if err != nil || n > MaxInflatedBody {
		return body
	}
	return out.Bytes()
}
