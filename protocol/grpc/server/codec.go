package server

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// codec is the server's codec: protocol buffers, except that a message
// the server encoded itself (an *encoded, which receive sends to skip
// building and marshalling a message per record) passes through as it
// is. The server must be built with it (see ServerOptions).
type codec struct{ proto encoding.CodecV2 }

func newCodec() codec { return codec{encoding.GetCodecV2(proto.Name)} }

// encoded is a message in its wire form. Marshal hands its buffer to
// gRPC, which frees it once written.
type encoded struct{ buf mem.Buffer }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(*encoded); ok {
		buf := e.buf
		e.buf = nil
		return mem.BufferSlice{buf}, nil
	}
	return c.proto.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

func (c codec) Name() string { return proto.Name }
