package server

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// codec is the server's codec: protocol buffers, encoded and decoded by
// the code generated for each message (rmqpb's *_vtproto.pb.go) rather
// than by reflection, except that a message the server encoded itself
// (an *encoded, which receive sends to skip building and marshalling a
// message per record) passes through as it is. The transport must be
// built with it (TransportOptions).
//
// It decodes without copying: the request's strings and bytes point into
// the received message, which the transport gives memory of its own
// (transport.Options.RetainMessages).
type codec struct {
	proto encoding.CodecV2
}

// newAliasingCodec returns the codec for a transport whose received
// messages are never reused.
func newAliasingCodec() codec { return codec{proto: encoding.GetCodecV2(proto.Name)} }

// encoded is a message in its wire form. Marshal hands its buffer to
// gRPC, which frees it once written.
type encoded struct{ buf mem.Buffer }

// vtMessage is a message with generated encoding code.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
	UnmarshalVT([]byte) error
	UnmarshalVTUnsafe([]byte) error
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *encoded:
		buf := m.buf
		m.buf = nil
		return mem.BufferSlice{buf}, nil
	case vtMessage:
		pool := mem.DefaultBufferPool()
		b := pool.Get(m.SizeVT())
		if _, err := m.MarshalToSizedBufferVT(*b); err != nil {
			pool.Put(b)
			return nil, err
		}
		return mem.BufferSlice{mem.NewBuffer(b, pool)}, nil
	}
	return c.proto.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(vtMessage); ok {
		if len(data) == 1 {
			return m.UnmarshalVTUnsafe(data[0].ReadOnlyData())
		}
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		return m.UnmarshalVT(buf.ReadOnlyData())
	}
	return c.proto.Unmarshal(data, v)
}

func (c codec) Name() string { return proto.Name }
