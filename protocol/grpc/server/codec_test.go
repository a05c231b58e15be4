package server

import (
	"strings"
	"testing"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// FuzzCodecAgreesWithReflection checks that the generated decoding the
// codec uses reads requests as protocol buffers' reflection does, and
// that what it encodes decodes back the same.
func FuzzCodecAgreesWithReflection(f *testing.F) {
	seed := func(m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(&rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{{
		Topic:            &rmqpb.Resource{Name: "T", ResourceNamespace: "ns"},
		UserProperties:   map[string]string{"k": "v", "": "x"},
		SystemProperties: &rmqpb.SystemProperties{Tag: proto.String("a"), Keys: []string{"k1", "k2"}, MessageId: "01AB", BornTimestamp: timestamppb.Now(), DeliveryTimestamp: &timestamppb.Timestamp{Seconds: 5}, MessageGroup: proto.String("g")},
		Body:             []byte("body"),
	}}})
	seed(&rmqpb.ReceiveMessageRequest{Group: &rmqpb.Resource{Name: "G"}, BatchSize: 32, InvisibleDuration: durationpb.New(1e9), AutoRenew: true})
	f.Add([]byte{0x0a, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		agreeWithReflection(t, newAliasingCodec(), b)
	})
}

// agreeWithReflection decodes b with c and with reflection into each
// request type and compares.
func agreeWithReflection(t *testing.T, c codec, b []byte) {
	{
		for _, pair := range [][2]proto.Message{
			{new(rmqpb.SendMessageRequest), new(rmqpb.SendMessageRequest)},
			{new(rmqpb.ReceiveMessageRequest), new(rmqpb.ReceiveMessageRequest)},
			{new(rmqpb.AckMessageRequest), new(rmqpb.AckMessageRequest)},
			{new(rmqpb.TelemetryCommand), new(rmqpb.TelemetryCommand)},
		} {
			viaCodec, viaReflection := pair[0], pair[1]
			errCodec := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, viaCodec)
			errReflection := proto.Unmarshal(b, viaReflection)
			if (errCodec == nil) != (errReflection == nil) {
				// The two disagree on bad input in known ways: reflection
				// checks that strings are UTF-8, which the generated code
				// leaves to the server's own checks, and refuses unbalanced
				// groups, which the generated code skips as unknown data;
				// the generated code refuses known fields with the wrong
				// wire type (in map entries too), which reflection keeps as
				// unknown fields. Either way nothing malformed gets through.
				switch {
				case errCodec == nil && strings.Contains(errReflection.Error(), "UTF-8"):
				case errCodec == nil && strings.Contains(errReflection.Error(), "invalid wire-format"):
					discardUnknown(viaCodec.ProtoReflect())
					out, err := c.Marshal(viaCodec)
					if err == nil {
						err = proto.Unmarshal(out.Materialize(), viaReflection)
					}
					if err != nil && !strings.Contains(err.Error(), "UTF-8") {
						t.Fatalf("%T: the codec decoded what reflection refuses into a message that does not encode back: %v", viaCodec, err)
					}
				case errReflection == nil:
					// Stricter than reflection: bad input refused.
				default:
					t.Fatalf("%T: codec error %v, reflection error %v", viaCodec, errCodec, errReflection)
				}
				continue
			}
			if errCodec != nil {
				continue
			}
			// Unknown fields are dropped by either, at different depths.
			discardUnknown(viaCodec.ProtoReflect())
			discardUnknown(viaReflection.ProtoReflect())
			if !proto.Equal(viaCodec, viaReflection) {
				t.Fatalf("%T decodes differently:\ncodec      %v\nreflection %v", viaCodec, viaCodec, viaReflection)
			}
			out, err := c.Marshal(viaCodec)
			if err != nil {
				t.Fatalf("%T: marshal: %v", viaCodec, err)
			}
			back := viaCodec.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(out.Materialize(), back); err != nil || !proto.Equal(back, viaCodec) {
				t.Fatalf("%T: encoded form decodes to %v (%v), want %v", viaCodec, back, err, viaCodec)
			}
			out.Free()
		}
	}
}

// discardUnknown drops the unknown fields of m and of every message in it.
func discardUnknown(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				discardUnknown(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				discardUnknown(mv.Message())
				return true
			})
		case fd.Message() != nil && !fd.IsMap():
			discardUnknown(v.Message())
		}
		return true
	})
	if m.GetUnknown() != nil {
		m.SetUnknown(nil)
	}
}
