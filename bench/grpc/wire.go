package grpc

import (
	"errors"
	"fmt"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	protobuf "google.golang.org/protobuf/proto"
)

// The generator encodes the requests of its measured phases and reads
// their responses itself, straight from the wire, as the remoting
// generator does: a send patches a request built once, a receive keeps
// only the message id and receipt handle of each message (copied into
// the acknowledgement it builds), and an answer only its status. Anything
// else goes through protocol buffers as usual.

// codec is the generator's codec: protocol buffers, except that an
// *encoded request is sent as it is and a response into a scanner is
// scanned instead of decoded.
type codec struct{ proto encoding.CodecV2 }

func newCodec() codec { return codec{encoding.GetCodecV2(proto.Name)} }

// encoded is a request in its wire form, the concatenation of its parts.
// gRPC holds on to them until the request is written: they may change
// only once the call has been answered.
type encoded struct{ parts [][]byte }

// encode returns m in its wire form, for a request sent many times.
func encode(m protobuf.Message) (*encoded, error) {
	b, err := protobuf.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("grpc bench: %w", err)
	}
	return &encoded{parts: [][]byte{b}}, nil
}

// scanner is a response read from its wire form.
type scanner interface {
	scan(b []byte) error
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(*encoded); ok {
		out := make(mem.BufferSlice, len(e.parts))
		for i, p := range e.parts {
			out[i] = mem.SliceBuffer(p)
		}
		return out, nil
	}
	return c.proto.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	s, ok := v.(scanner)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	if len(data) == 1 {
		return s.scan(data[0].ReadOnlyData())
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return s.scan(buf.ReadOnlyData())
}

func (c codec) Name() string { return proto.Name }

// errMalformed reports a response that does not parse.
var errMalformed = errors.New("grpc bench: malformed response")

// nextField parses the field at the start of b: its number and type, and
// its contents (length-delimited) or value (varint). n is the bytes it
// takes, negative when b does not parse.
func nextField(b []byte) (num protowire.Number, typ protowire.Type, val []byte, x uint64, n int) {
	num, typ, tn := protowire.ConsumeTag(b)
	if tn < 0 {
		return 0, 0, nil, 0, tn
	}
	var vn int
	switch typ {
	case protowire.BytesType:
		val, vn = protowire.ConsumeBytes(b[tn:])
	case protowire.VarintType:
		x, vn = protowire.ConsumeVarint(b[tn:])
	default:
		vn = protowire.ConsumeFieldValue(num, typ, b[tn:])
	}
	if vn < 0 {
		return 0, 0, nil, 0, vn
	}
	return num, typ, val, x, tn + vn
}

// Field numbers of the messages the generator reads and writes (see the
// .proto files of protocol/grpc).
const (
	fieldStatusCode    protowire.Number = 1 // Status
	fieldStatusMessage protowire.Number = 2

	fieldReceiveStatus  protowire.Number = 1 // ReceiveMessageResponse
	fieldReceiveMessage protowire.Number = 2

	fieldMessageTopic   protowire.Number = 1 // Message
	fieldMessageSysProp protowire.Number = 3
	fieldMessageBody    protowire.Number = 4

	fieldSysMessageID     protowire.Number = 3 // SystemProperties
	fieldSysBodyEncoding  protowire.Number = 5
	fieldSysMessageType   protowire.Number = 6
	fieldSysBornTimestamp protowire.Number = 7
	fieldSysBornHost      protowire.Number = 8
	fieldSysReceipt       protowire.Number = 12

	fieldResourceName protowire.Number = 2 // Resource

	fieldTimeSeconds protowire.Number = 1 // Timestamp
	fieldTimeNanos   protowire.Number = 2

	fieldAckGroup   protowire.Number = 1 // AckMessageRequest
	fieldAckTopic   protowire.Number = 2
	fieldAckEntries protowire.Number = 3
	fieldEntryID    protowire.Number = 1 // AckMessageEntry
	fieldEntryHdl   protowire.Number = 2

	fieldSendMessages protowire.Number = 1 // SendMessageRequest

	fieldReplyStatus     protowire.Number = 1 // SendMessageResponse, AckMessageResponse
	fieldReplyEntries    protowire.Number = 2
	fieldSendEntryStatus protowire.Number = 1 // SendResultEntry
	fieldAckEntryStatus  protowire.Number = 3 // AckMessageResultEntry
)

// status is a Status read from the wire.
type status struct {
	code rmqpb.Code
	msg  []byte // aliases the response: valid during scan only
}

func scanStatus(b []byte) (status, error) {
	var st status
	for len(b) > 0 {
		num, typ, val, x, n := nextField(b)
		if n < 0 {
			return st, errMalformed
		}
		switch {
		case num == fieldStatusCode && typ == protowire.VarintType:
			st.code = rmqpb.Code(int32(x))
		case num == fieldStatusMessage && typ == protowire.BytesType:
			st.msg = val
		}
		b = b[n:]
	}
	return st, nil
}

// reply reads the status of a SendMessageResponse or AckMessageResponse:
// the first entry's status that is not OK, else the response's.
type reply struct {
	entryStatus protowire.Number // field of the status in an entry
	code        rmqpb.Code
	msg         string
}

func (r *reply) scan(b []byte) error {
	var top, failed status
	var haveFailed bool
	for len(b) > 0 {
		num, typ, val, _, n := nextField(b)
		if n < 0 || (typ != protowire.BytesType && (num == fieldReplyStatus || num == fieldReplyEntries)) {
			return errMalformed
		}
		var err error
		switch num {
		case fieldReplyStatus:
			top, err = scanStatus(val)
		case fieldReplyEntries:
			if !haveFailed {
				var st status
				if st, err = r.entry(val); st.code != rmqpb.Code_OK {
					failed, haveFailed = st, true
				}
			}
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	st := top
	if haveFailed {
		st = failed
	}
	r.code, r.msg = st.code, ""
	if st.code != rmqpb.Code_OK {
		r.msg = string(st.msg)
	}
	return nil
}

// entry returns the status of an entry.
func (r *reply) entry(b []byte) (status, error) {
	for len(b) > 0 {
		num, typ, val, _, n := nextField(b)
		if n < 0 {
			return status{}, errMalformed
		}
		if num == r.entryStatus && typ == protowire.BytesType {
			return scanStatus(val)
		}
		b = b[n:]
	}
	return status{}, nil
}

// err returns the reply's failure, nil when it is OK.
func (r *reply) err(what string) error {
	if r.code == rmqpb.Code_OK {
		return nil
	}
	return fmt.Errorf("grpc bench: %s: %s %s", what, r.code, r.msg)
}

// ackBuilder is an AckMessageRequest under construction: the group and
// topic, encoded once, then an entry per message received. As a scanner
// it reads one ReceiveMessageResponse: a status is kept, a message's id
// and receipt handle become an entry.
type ackBuilder struct {
	head    int // length of the group and topic
	buf     []byte
	entries int
	code    rmqpb.Code // of the last status scanned
	msg     string
}

func newAckBuilder(group, topic string) *ackBuilder {
	a := &ackBuilder{}
	a.buf = appendResource(a.buf, fieldAckGroup, group)
	a.buf = appendResource(a.buf, fieldAckTopic, topic)
	a.head = len(a.buf)
	return a
}

// reset forgets the entries and the status.
func (a *ackBuilder) reset() {
	a.buf = a.buf[:a.head]
	a.entries = 0
	a.code, a.msg = rmqpb.Code_OK, ""
}

// request returns the acknowledgement of every message scanned since the
// last reset.
func (a *ackBuilder) request() *encoded { return &encoded{parts: [][]byte{a.buf}} }

func (a *ackBuilder) scan(b []byte) error {
	for len(b) > 0 {
		num, typ, val, _, n := nextField(b)
		if n < 0 {
			return errMalformed
		}
		if typ == protowire.BytesType {
			switch num {
			case fieldReceiveStatus:
				st, err := scanStatus(val)
				if err != nil {
					return err
				}
				a.code, a.msg = st.code, string(st.msg)
			case fieldReceiveMessage:
				if err := a.message(val); err != nil {
					return err
				}
			}
		}
		b = b[n:]
	}
	return nil
}

// message adds the entry of one received message.
func (a *ackBuilder) message(b []byte) error {
	for len(b) > 0 {
		num, typ, val, _, n := nextField(b)
		if n < 0 {
			return errMalformed
		}
		if num == fieldMessageSysProp && typ == protowire.BytesType {
			var id, handle []byte
			for sp := val; len(sp) > 0; {
				num, typ, v, _, n := nextField(sp)
				if n < 0 {
					return errMalformed
				}
				if typ == protowire.BytesType {
					switch num {
					case fieldSysMessageID:
						id = v
					case fieldSysReceipt:
						handle = v
					}
				}
				sp = sp[n:]
			}
			if len(handle) == 0 {
				return errors.New("grpc bench: a received message has no receipt handle")
			}
			size := protowire.SizeTag(fieldEntryID) + protowire.SizeBytes(len(id)) +
				protowire.SizeTag(fieldEntryHdl) + protowire.SizeBytes(len(handle))
			a.buf = protowire.AppendTag(a.buf, fieldAckEntries, protowire.BytesType)
			a.buf = protowire.AppendVarint(a.buf, uint64(size))
			a.buf = appendBytes(a.buf, fieldEntryID, id)
			a.buf = appendBytes(a.buf, fieldEntryHdl, handle)
			a.entries++
			return nil
		}
		b = b[n:]
	}
	return errors.New("grpc bench: a received message has no system properties")
}

// sendRequest is the SendMessageRequest of one message whose topic, body
// and born host never change: per message only the id and the born time
// are written again. Its parts are the head (the request's and the
// message's tags and lengths, the topic and the system properties) and the
// body's field, encoded once.
type sendRequest struct {
	topic []byte // the topic field
	body  []byte // the body field
	host  string
	head  []byte
	sys   []byte
	req   encoded
}

func newSendRequest(topic, host string, body []byte) *sendRequest {
	s := &sendRequest{host: host}
	s.topic = appendResource(nil, fieldMessageTopic, topic)
	s.body = appendBytes(nil, fieldMessageBody, body)
	return s
}

// encode writes the request for message id born at born (to the
// millisecond, as clients send it) and returns it.
func (s *sendRequest) encode(id []byte, born time.Time) *encoded {
	sys := s.sys[:0]
	sys = appendBytes(sys, fieldSysMessageID, id)
	sys = protowire.AppendTag(sys, fieldSysBodyEncoding, protowire.VarintType)
	sys = protowire.AppendVarint(sys, uint64(rmqpb.Encoding_IDENTITY))
	sys = protowire.AppendTag(sys, fieldSysMessageType, protowire.VarintType)
	sys = protowire.AppendVarint(sys, uint64(rmqpb.MessageType_NORMAL))
	ms := born.UnixMilli()
	secs, nanos := uint64(ms/1000), uint64(ms%1000*int64(time.Millisecond))
	ts := protowire.SizeTag(fieldTimeSeconds) + protowire.SizeVarint(secs)
	if nanos != 0 {
		ts += protowire.SizeTag(fieldTimeNanos) + protowire.SizeVarint(nanos)
	}
	sys = protowire.AppendTag(sys, fieldSysBornTimestamp, protowire.BytesType)
	sys = protowire.AppendVarint(sys, uint64(ts))
	sys = protowire.AppendTag(sys, fieldTimeSeconds, protowire.VarintType)
	sys = protowire.AppendVarint(sys, secs)
	if nanos != 0 {
		sys = protowire.AppendTag(sys, fieldTimeNanos, protowire.VarintType)
		sys = protowire.AppendVarint(sys, nanos)
	}
	if s.host != "" {
		sys = protowire.AppendTag(sys, fieldSysBornHost, protowire.BytesType)
		sys = protowire.AppendString(sys, s.host)
	}
	s.sys = sys

	msg := len(s.topic) + protowire.SizeTag(fieldMessageSysProp) + protowire.SizeBytes(len(sys)) + len(s.body)
	h := s.head[:0]
	h = protowire.AppendTag(h, fieldSendMessages, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(msg))
	h = append(h, s.topic...)
	h = protowire.AppendTag(h, fieldMessageSysProp, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(len(sys)))
	h = append(h, sys...)
	s.head = h
	s.req.parts = append(s.req.parts[:0], h, s.body)
	return &s.req
}

func appendResource(b []byte, num protowire.Number, name string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(protowire.SizeTag(fieldResourceName)+protowire.SizeBytes(len(name))))
	b = protowire.AppendTag(b, fieldResourceName, protowire.BytesType)
	return protowire.AppendString(b, name)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}
