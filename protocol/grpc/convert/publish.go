package convert

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"unicode"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// Errors of Publish. Each error Publish returns wraps exactly one of them,
// which says what the producer got wrong; the server turns each into its
// own status code.
var (
	ErrMissingField       = errors.New("convert: missing field")
	ErrIllegalTopic       = errors.New("convert: illegal topic")
	ErrIllegalMessageID   = errors.New("convert: illegal message id")
	ErrIllegalTag         = errors.New("convert: illegal message tag")
	ErrIllegalKey         = errors.New("convert: illegal message key")
	ErrIllegalGroup       = errors.New("convert: illegal message group")
	ErrIllegalPropertyKey = errors.New("convert: illegal message property key")
	ErrIllegalProperty    = errors.New("convert: illegal message property")
	ErrIllegalDelivery    = errors.New("convert: illegal delivery time")
	ErrEmptyBody          = errors.New("convert: empty message body")
	ErrBodyTooLarge       = errors.New("convert: message body too large")
	ErrCorruptedBody      = errors.New("convert: corrupted message body")
	ErrPropertiesTooLarge = errors.New("convert: message properties too large")
	ErrTypeConflict       = errors.New("convert: message type conflicts with its properties")
	ErrUnsupportedType    = errors.New("convert: unsupported message type")
)

// Limits Publish applies besides PublishOptions.MaxBodySize.
const (
	// MaxMessageIDLength is the longest message id accepted. Clients
	// generate 32 (Go) or 34 (Java, Node.js) characters.
	MaxMessageIDLength = 128
	// MaxMessageGroupLength is the longest message group accepted, as in
	// RocketMQ's proxy (maxMessageGroupSize).
	MaxMessageGroupLength = 64
)

// PublishOptions is what Publish needs besides the message.
type PublishOptions struct {
	// MaxBodySize is the largest body accepted, in bytes, after a GZIP
	// body is inflated. Zero or negative means no limit beyond the
	// engine's.
	MaxBodySize int
	// BornHost is the producer's address, stored as the message's born
	// host (and as __BORNHOST when the message names none).
	BornHost netip.AddrPort
}

// IsSystemProperty reports whether name is reserved for brokers and the
// engine (the names of systemProperties, in deliver.go, and transient
// properties): producers may not set it as a user property (a user
// property DELAY or TIMER_DELIVER_MS would schedule the message, TRAN_MSG
// would hold it back), and it is not a user property when a message is
// delivered.
func IsSystemProperty(name string) bool {
	return systemProperties[name] || strings.HasPrefix(name, message.PropertyTransientPrefix)
}

// Publish returns the message the engine is to store for m, a message a
// producer sent: the body (inflated when GZIP-encoded), the user
// properties, and the system properties under RocketMQ's names:
//
//	message_id                  UNIQ_KEY (required)
//	tag                         TAGS
//	keys                        KEYS, joined by spaces
//	message_group               __SHARDINGKEY (FIFO)
//	delivery_timestamp          TIMER_DELIVER_MS (DELAY)
//	message_type TRANSACTION    TRAN_MSG=true, PGROUP=<topic>, sysFlag prepared
//	orphaned_transaction_...    CHECK_IMMUNITY_TIME_IN_SECONDS
//	born_host                   __BORNHOST (else the producer's address)
//	born_timestamp              BORN_TIMESTAMP and the born time
//	trace_context               TRACE_CONTEXT
//
// Transactional messages name their topic as their producer group, as
// RocketMQ's proxy does: that is how a transaction check finds a producer.
// The queue id the producer chose is ignored. The message's type must
// agree with what it carries (a FIFO message has a group, a DELAY message
// a delivery time, the others neither); LITE and PRIORITY messages are not
// supported. Publish never modifies m; errors wrap one of the errors
// above.
func Publish(m *rmqpb.Message, o PublishOptions) (*message.Message, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: no message", ErrMissingField)
	}
	topic := ResourceName(m.GetTopic())
	if topic == "" {
		return nil, fmt.Errorf("%w: message without a topic", ErrIllegalTopic)
	}
	if err := message.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIllegalTopic, err)
	}
	sp := m.GetSystemProperties()
	if sp == nil {
		return nil, fmt.Errorf("%w: message without system properties (message_id is required)", ErrIllegalMessageID)
	}
	if err := checkMessageID(sp.GetMessageId()); err != nil {
		return nil, err
	}
	kind, err := messageType(sp)
	if err != nil {
		return nil, err
	}
	body, err := publishBody(m.GetBody(), sp.GetBodyEncoding(), o.MaxBodySize)
	if err != nil {
		return nil, err
	}

	p := make(map[string]string, len(m.GetUserProperties())+8)
	for k, v := range m.GetUserProperties() {
		if err := checkUserProperty(k, v); err != nil {
			return nil, err
		}
		p[k] = v
	}
	p[message.PropertyUniqKey] = sp.GetMessageId()
	if sp.Tag != nil {
		if err := checkTag(*sp.Tag); err != nil {
			return nil, err
		}
		p[message.PropertyTags] = *sp.Tag
	}
	if len(sp.GetKeys()) > 0 {
		for _, k := range sp.GetKeys() {
			if err := checkKey(k); err != nil {
				return nil, err
			}
		}
		p[message.PropertyKeys] = strings.Join(sp.GetKeys(), message.KeySeparator)
	}
	if sp.MessageGroup != nil {
		if err := checkGroup(*sp.MessageGroup); err != nil {
			return nil, err
		}
		p[message.PropertyShardingKey] = *sp.MessageGroup
	}
	if sp.DeliveryTimestamp != nil {
		ts := sp.GetDeliveryTimestamp()
		if err := ts.CheckValid(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrIllegalDelivery, err)
		}
		ms := ts.AsTime().UnixMilli()
		if ms < 0 {
			return nil, fmt.Errorf("%w: delivery time %s is before 1970", ErrIllegalDelivery, ts.AsTime())
		}
		p[message.PropertyTimerDeliverMS] = strconv.FormatInt(ms, 10)
	}
	var sysFlag int32
	if kind == rmqpb.MessageType_TRANSACTION {
		p[message.PropertyTransactionPrepared] = "true"
		p[message.PropertyProducerGroup] = topic
		sysFlag = message.WithTransactionType(sysFlag, message.SysFlagTransactionPrepared)
		if d := sp.OrphanedTransactionRecoveryDuration; d != nil {
			if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
				return nil, fmt.Errorf("%w: orphaned_transaction_recovery_duration %v is not a positive duration", ErrIllegalProperty, d.AsDuration())
			}
			// Whole seconds, rounded up: the first check never comes early.
			if secs := (d.AsDuration().Milliseconds() + 999) / 1000; secs > 0 {
				p[message.PropertyCheckImmunitySeconds] = strconv.FormatInt(secs, 10)
			}
		}
	}
	if tc := sp.GetTraceContext(); tc != "" {
		p[message.PropertyTraceContext] = tc
	}
	switch {
	case sp.GetBornHost() != "":
		p[message.PropertyBornHost] = sp.GetBornHost()
	case o.BornHost.IsValid():
		p[message.PropertyBornHost] = o.BornHost.String()
	}
	var born int64
	if ts := sp.GetBornTimestamp(); ts != nil && ts.CheckValid() == nil && ts.AsTime().UnixMilli() > 0 {
		born = ts.AsTime().UnixMilli()
		p[message.PropertyBornTimestamp] = strconv.FormatInt(born, 10)
	}
	if err := message.ValidateProperties(p); err != nil {
		if errors.Is(err, message.ErrPropertiesTooLarge) {
			return nil, fmt.Errorf("%w: %w", ErrPropertiesTooLarge, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrIllegalProperty, err)
	}
	return &message.Message{
		Topic:         topic,
		Body:          body,
		SysFlag:       sysFlag,
		Properties:    p,
		BornTimestamp: born,
		BornHost:      o.BornHost,
	}, nil
}

// messageType checks that sp's declared type agrees with the fields it
// carries and returns it; an unspecified type is inferred from them.
func messageType(sp *rmqpb.SystemProperties) (rmqpb.MessageType, error) {
	group := sp.MessageGroup != nil
	delay := sp.DeliveryTimestamp != nil
	kind := sp.GetMessageType()
	switch kind {
	case rmqpb.MessageType_LITE, rmqpb.MessageType_PRIORITY:
		return 0, fmt.Errorf("%w: %s messages are not supported", ErrUnsupportedType, kind)
	case rmqpb.MessageType_MESSAGE_TYPE_UNSPECIFIED, rmqpb.MessageType_NORMAL, rmqpb.MessageType_FIFO,
		rmqpb.MessageType_DELAY, rmqpb.MessageType_TRANSACTION:
	default:
		return 0, fmt.Errorf("%w: unknown message type %d", ErrUnsupportedType, int32(kind))
	}
	// The Node.js client sends an empty lite_topic and a zero priority on
	// messages that have neither.
	if sp.GetLiteTopic() != "" {
		return 0, fmt.Errorf("%w: lite topics are not supported (lite_topic %q)", ErrUnsupportedType, sp.GetLiteTopic())
	}
	if sp.GetPriority() != 0 {
		return 0, fmt.Errorf("%w: message priorities are not supported (priority %d)", ErrUnsupportedType, sp.GetPriority())
	}
	conflict := func(why string) (rmqpb.MessageType, error) {
		return 0, fmt.Errorf("%w: %s message %s", ErrTypeConflict, kind, why)
	}
	switch kind {
	case rmqpb.MessageType_MESSAGE_TYPE_UNSPECIFIED:
		switch {
		case group && delay:
			return conflict("has both a message group and a delivery time")
		case group:
			return rmqpb.MessageType_FIFO, nil
		case delay:
			return rmqpb.MessageType_DELAY, nil
		}
		return rmqpb.MessageType_NORMAL, nil
	case rmqpb.MessageType_NORMAL, rmqpb.MessageType_TRANSACTION:
		if group {
			return conflict("has a message group")
		}
		if delay {
			return conflict("has a delivery time")
		}
	case rmqpb.MessageType_FIFO:
		if !group {
			return conflict("has no message group")
		}
		if delay {
			return conflict("has a delivery time")
		}
	case rmqpb.MessageType_DELAY:
		if !delay {
			return conflict("has no delivery time")
		}
		if group {
			return conflict("has a message group")
		}
	}
	return kind, nil
}

// publishBody returns the body to store: inflated when GZIP-encoded, so
// that consumers of every protocol read it as sent.
func publishBody(body []byte, enc rmqpb.Encoding, limit int) ([]byte, error) {
	if len(body) == 0 {
		return nil, ErrEmptyBody
	}
	switch enc {
	case rmqpb.Encoding_ENCODING_UNSPECIFIED, rmqpb.Encoding_IDENTITY:
	case rmqpb.Encoding_GZIP:
		var err error
		if body, err = gunzip(body, limit); err != nil {
			return nil, err
		}
		if len(body) == 0 {
			return nil, fmt.Errorf("%w: the GZIP body inflates to nothing", ErrEmptyBody)
		}
	default:
		return nil, fmt.Errorf("%w: unknown body encoding %d", ErrCorruptedBody, int32(enc))
	}
	if limit > 0 && len(body) > limit {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrBodyTooLarge, len(body), limit)
	}
	return body, nil
}

// gunzip inflates a GZIP body, reading at most limit+1 bytes of output (no
// limit when limit <= 0) so that a small body cannot inflate without bound.
func gunzip(body []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: GZIP: %w", ErrCorruptedBody, err)
	}
	var r io.Reader = zr
	if limit > 0 {
		r = io.LimitReader(zr, int64(limit)+1)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: GZIP: %w", ErrCorruptedBody, err)
	}
	if limit > 0 && len(out) > limit {
		return nil, fmt.Errorf("%w: the GZIP body inflates to more than %d bytes", ErrBodyTooLarge, limit)
	}
	return out, nil
}

func checkMessageID(id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return fmt.Errorf("%w: message_id is required", ErrIllegalMessageID)
	case len(id) > MaxMessageIDLength:
		return fmt.Errorf("%w: message_id of %d bytes, the limit is %d", ErrIllegalMessageID, len(id), MaxMessageIDLength)
	case hasControl(id):
		return fmt.Errorf("%w: message_id %q contains a control character", ErrIllegalMessageID, id)
	}
	return nil
}

func checkTag(tag string) error {
	switch {
	case strings.TrimSpace(tag) == "":
		return fmt.Errorf("%w: tag %q is empty", ErrIllegalTag, tag)
	case strings.Contains(tag, "|"):
		return fmt.Errorf("%w: tag %q contains '|'", ErrIllegalTag, tag)
	case hasControl(tag):
		return fmt.Errorf("%w: tag %q contains a control character", ErrIllegalTag, tag)
	}
	return nil
}

func checkKey(key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return fmt.Errorf("%w: key %q is empty", ErrIllegalKey, key)
	case hasControl(key):
		return fmt.Errorf("%w: key %q contains a control character", ErrIllegalKey, key)
	}
	return nil
}

func checkGroup(group string) error {
	switch {
	case strings.TrimSpace(group) == "":
		return fmt.Errorf("%w: message group %q is empty", ErrIllegalGroup, group)
	case len(group) > MaxMessageGroupLength:
		return fmt.Errorf("%w: message group of %d bytes, the limit is %d", ErrIllegalGroup, len(group), MaxMessageGroupLength)
	case hasControl(group):
		return fmt.Errorf("%w: message group %q contains a control character", ErrIllegalGroup, group)
	}
	return nil
}

func checkUserProperty(k, v string) error {
	switch {
	case strings.TrimSpace(k) == "":
		return fmt.Errorf("%w: user property with an empty key", ErrIllegalPropertyKey)
	case hasControl(k):
		return fmt.Errorf("%w: user property key %q contains a control character", ErrIllegalPropertyKey, k)
	case IsSystemProperty(k):
		return fmt.Errorf("%w: %q is a system property", ErrIllegalPropertyKey, k)
	case strings.ContainsAny(v, "\x01\x02"):
		return fmt.Errorf("%w: the value of user property %q contains byte 0x01 or 0x02", ErrIllegalProperty, k)
	}
	return nil
}

// hasControl reports whether s holds a control character (C0, DEL or C1),
// which RocketMQ refuses in tags, keys and message groups.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}
