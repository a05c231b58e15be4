package convert

import (
	"bytes"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the messages AppendMessage writes (see the .proto
// files).
const (
	fieldMessageTopic      protowire.Number = 1
	fieldMessageUserProps  protowire.Number = 2
	fieldMessageSysProps   protowire.Number = 3
	fieldMessageBody       protowire.Number = 4
	fieldResourceNamespace protowire.Number = 1
	fieldResourceName      protowire.Number = 2
	fieldMapKey            protowire.Number = 1
	fieldMapValue          protowire.Number = 2
	fieldDigestType        protowire.Number = 1
	fieldDigestChecksum    protowire.Number = 2
	fieldTimeSeconds       protowire.Number = 1 // Timestamp and Duration
	fieldTimeNanos         protowire.Number = 2
	fieldDLQTopic          protowire.Number = 1
	fieldDLQMessageID      protowire.Number = 2

	fieldSysTag               protowire.Number = 1
	fieldSysKeys              protowire.Number = 2
	fieldSysMessageID         protowire.Number = 3
	fieldSysBodyDigest        protowire.Number = 4
	fieldSysBodyEncoding      protowire.Number = 5
	fieldSysMessageType       protowire.Number = 6
	fieldSysBornTimestamp     protowire.Number = 7
	fieldSysBornHost          protowire.Number = 8
	fieldSysStoreTimestamp    protowire.Number = 9
	fieldSysStoreHost         protowire.Number = 10
	fieldSysDeliveryTimestamp protowire.Number = 11
	fieldSysReceiptHandle     protowire.Number = 12
	fieldSysQueueID           protowire.Number = 13
	fieldSysQueueOffset       protowire.Number = 14
	fieldSysInvisible         protowire.Number = 15
	fieldSysDeliveryAttempt   protowire.Number = 16
	fieldSysMessageGroup      protowire.Number = 17
	fieldSysTraceContext      protowire.Number = 18
	fieldSysDeadLetterQueue   protowire.Number = 20
)

// nestedReserve is the room left for the length of a nested message
// whose size is known only once it is written: three varint bytes, up to
// 2 MiB, which the system properties of a record (at most 32 KiB of
// properties) never reach.
const nestedReserve = 3

// AppendMessage appends to dst the protocol buffers encoding of the
// message Deliver returns for rec and d, without building it: the
// receive path sends it as it is. Decoding what it appends gives a
// message equal to Deliver's; on error dst is returned unchanged. Errors
// wrap ErrCorrupt.
func AppendMessage(dst, rec []byte, d Delivery) ([]byte, error) {
	sc, err := scanRecord(rec)
	if err != nil {
		return dst, err
	}
	h := &sc.h
	b := dst

	// topic
	topic := sc.topic
	if sc.retryTopic.len() > 0 && sc.isRetry {
		topic = sc.bytes(sc.retryTopic)
	}
	topic = WithoutNamespace(d.Namespace, topic)
	size := 0
	if d.Namespace != "" {
		size += protowire.SizeTag(fieldResourceNamespace) + protowire.SizeBytes(len(d.Namespace))
	}
	if len(topic) > 0 {
		size += protowire.SizeTag(fieldResourceName) + protowire.SizeBytes(len(topic))
	}
	b = protowire.AppendTag(b, fieldMessageTopic, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if d.Namespace != "" {
		b = appendStringField(b, fieldResourceNamespace, d.Namespace)
	}
	if len(topic) > 0 {
		b = appendBytesField(b, fieldResourceName, topic)
	}

	// user_properties
	for off := 0; off < len(sc.props); {
		k, v, next, ok := nextPair(sc.props, off)
		off = next
		if !ok || isSystemName(sc.bytes(k)) {
			continue
		}
		size := protowire.SizeTag(fieldMapKey) + protowire.SizeBytes(k.len()) +
			protowire.SizeTag(fieldMapValue) + protowire.SizeBytes(v.len())
		b = protowire.AppendTag(b, fieldMessageUserProps, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		b = appendBytesField(b, fieldMapKey, sc.bytes(k))
		b = appendBytesField(b, fieldMapValue, sc.bytes(v))
	}

	// system_properties
	b = protowire.AppendTag(b, fieldMessageSysProps, protowire.BytesType)
	b = append(b, make([]byte, nestedReserve)...)
	start := len(b)
	if sc.tag.ok {
		b = appendBytesField(b, fieldSysTag, sc.bytes(sc.tag))
	}
	keys := sc.bytes(sc.keys)
	for len(keys) > 0 {
		i := bytes.IndexByte(keys, message.KeySeparator[0])
		if i < 0 {
			i = len(keys)
		}
		if i > 0 {
			b = appendBytesField(b, fieldSysKeys, keys[:i])
		}
		keys = keys[min(i+1, len(keys)):]
	}
	if sc.msgID.len() > 0 {
		b = appendBytesField(b, fieldSysMessageID, sc.bytes(sc.msgID))
	} else {
		var id [64]byte
		b = appendBytesField(b, fieldSysMessageID, message.AppendOffsetID(id[:0], h.StoreHost, h.CommitLogOffset))
	}
	body := sc.body()
	var sum [maxChecksum]byte
	check := appendChecksum(sum[:0], body, d.Digest)
	dt := uint64(d.Digest.Type())
	b = protowire.AppendTag(b, fieldSysBodyDigest, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(protowire.SizeTag(fieldDigestType)+protowire.SizeVarint(dt)+
		protowire.SizeTag(fieldDigestChecksum)+protowire.SizeBytes(len(check))))
	b = appendVarintField(b, fieldDigestType, dt)
	b = appendBytesField(b, fieldDigestChecksum, check)
	b = appendVarintField(b, fieldSysBodyEncoding, uint64(rmqpb.Encoding_IDENTITY))
	b = appendVarintField(b, fieldSysMessageType, uint64(sc.messageType()))
	b = appendTime(b, fieldSysBornTimestamp, millisParts(h.BornTimestamp))
	var host [64]byte
	if sc.bornHost.len() > 0 {
		b = appendBytesField(b, fieldSysBornHost, sc.bytes(sc.bornHost))
	} else if a := h.BornHost.Addr(); a.IsValid() {
		b = appendBytesField(b, fieldSysBornHost, a.Unmap().AppendTo(host[:0]))
	}
	b = appendTime(b, fieldSysStoreTimestamp, millisParts(h.StoreTimestamp))
	if h.StoreHost.Addr().IsValid() {
		b = appendBytesField(b, fieldSysStoreHost, h.StoreHost.AppendTo(host[:0]))
	}
	if due := sc.dueMillis(); due > 0 {
		b = appendTime(b, fieldSysDeliveryTimestamp, millisParts(due))
	}
	if d.Handle != "" {
		b = appendStringField(b, fieldSysReceiptHandle, d.Handle)
	}
	if h.QueueID != 0 {
		b = appendVarintField(b, fieldSysQueueID, uint64(int64(h.QueueID)))
	}
	b = appendVarintField(b, fieldSysQueueOffset, uint64(h.QueueOffset))
	if d.Invisible > 0 {
		b = appendTime(b, fieldSysInvisible, durationParts(d.Invisible))
	}
	b = appendVarintField(b, fieldSysDeliveryAttempt, uint64(int64(sc.attempt(d))))
	if sc.group.ok {
		b = appendBytesField(b, fieldSysMessageGroup, sc.bytes(sc.group))
	}
	if sc.trace.ok {
		b = appendBytesField(b, fieldSysTraceContext, sc.bytes(sc.trace))
	}
	if sc.dlqTopic.len() > 0 || sc.dlqID.len() > 0 {
		size := 0
		if sc.dlqTopic.len() > 0 {
			size += protowire.SizeTag(fieldDLQTopic) + protowire.SizeBytes(sc.dlqTopic.len())
		}
		if sc.dlqID.len() > 0 {
			size += protowire.SizeTag(fieldDLQMessageID) + protowire.SizeBytes(sc.dlqID.len())
		}
		b = protowire.AppendTag(b, fieldSysDeadLetterQueue, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		if sc.dlqTopic.len() > 0 {
			b = appendBytesField(b, fieldDLQTopic, sc.bytes(sc.dlqTopic))
		}
		if sc.dlqID.len() > 0 {
			b = appendBytesField(b, fieldDLQMessageID, sc.bytes(sc.dlqID))
		}
	}
	b = endNested(b, start)

	// body
	if len(body) > 0 {
		b = appendBytesField(b, fieldMessageBody, body)
	}
	return b, nil
}

// endNested writes the length of the nested message that starts at start,
// after nestedReserve bytes left for it, moving the message up when its
// length takes fewer bytes.
func endNested(b []byte, start int) []byte {
	n := len(b) - start
	l := protowire.SizeVarint(uint64(n))
	at := start - nestedReserve
	switch {
	case l < nestedReserve:
		copy(b[at+l:], b[start:])
		b = b[:len(b)-(nestedReserve-l)]
	case l > nestedReserve:
		b = append(b, make([]byte, l-nestedReserve)...)
		copy(b[at+l:], b[start:start+n])
	}
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendStringField(b []byte, num protowire.Number, v string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendTime appends a Timestamp or Duration field: seconds and nanos,
// each left out when zero.
func appendTime(b []byte, num protowire.Number, t timeParts) []byte {
	secs, nanos := t.secs, t.nanos
	size := 0
	if secs != 0 {
		size += protowire.SizeTag(fieldTimeSeconds) + protowire.SizeVarint(uint64(secs))
	}
	if nanos != 0 {
		size += protowire.SizeTag(fieldTimeNanos) + protowire.SizeVarint(uint64(int64(nanos)))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if secs != 0 {
		b = appendVarintField(b, fieldTimeSeconds, uint64(secs))
	}
	if nanos != 0 {
		b = appendVarintField(b, fieldTimeNanos, uint64(int64(nanos)))
	}
	return b
}
