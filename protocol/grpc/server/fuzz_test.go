package server

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// rawCodec sends and receives messages as the bytes they are, so that
// FuzzRPC can send what no client would encode.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// fuzzMethods are the RPCs FuzzRPC calls, and whether the server
// streams its answers.
var fuzzMethods = []struct {
	name   string
	stream bool
}{
	{rmqpb.MessagingService_QueryRoute_FullMethodName, false},
	{rmqpb.MessagingService_Heartbeat_FullMethodName, false},
	{rmqpb.MessagingService_SendMessage_FullMethodName, false},
	{rmqpb.MessagingService_QueryAssignment_FullMethodName, false},
	{rmqpb.MessagingService_ReceiveMessage_FullMethodName, true},
	{rmqpb.MessagingService_AckMessage_FullMethodName, false},
	{rmqpb.MessagingService_ForwardMessageToDeadLetterQueue_FullMethodName, false},
	{rmqpb.MessagingService_PullMessage_FullMethodName, true},
	{rmqpb.MessagingService_UpdateOffset_FullMethodName, false},
	{rmqpb.MessagingService_GetOffset_FullMethodName, false},
	{rmqpb.MessagingService_QueryOffset_FullMethodName, false},
	{rmqpb.MessagingService_EndTransaction_FullMethodName, false},
	{rmqpb.MessagingService_NotifyClientTermination_FullMethodName, false},
	{rmqpb.MessagingService_ChangeInvisibleDuration_FullMethodName, false},
	{rmqpb.MessagingService_RecallMessage_FullMethodName, false},
	{rmqpb.MessagingService_SyncLiteSubscription_FullMethodName, false},
	{rmqpb.MessagingService_Telemetry_FullMethodName, true},
}

func fuzzMethod(name string) uint8 {
	for i, m := range fuzzMethods {
		if m.name == name {
			return uint8(i)
		}
	}
	panic("method not fuzzed: " + name)
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzRPC calls every RPC of the messaging service with arbitrary
// request bytes, as a client with an id. A unary call must end with an
// answer or a status; a streaming one may also run until its deadline
// (a receive rightly waits for messages). The connection must stay up,
// and no handler may panic: the transport does not recover them, so a
// panic ends the test binary.
func FuzzRPC(f *testing.F) {
	topic := &rmqpb.Resource{Name: "FuzzTopic"}
	group := &rmqpb.Resource{Name: "FuzzGroup"}
	tag := "a"
	f.Add(fuzzMethod(rmqpb.MessagingService_QueryRoute_FullMethodName), mustMarshal(&rmqpb.QueryRouteRequest{Topic: topic}))
	f.Add(fuzzMethod(rmqpb.MessagingService_Heartbeat_FullMethodName), mustMarshal(&rmqpb.HeartbeatRequest{Group: group, ClientType: rmqpb.ClientType_SIMPLE_CONSUMER}))
	f.Add(fuzzMethod(rmqpb.MessagingService_SendMessage_FullMethodName), mustMarshal(&rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{{
		Topic: topic, Body: []byte("body"), UserProperties: map[string]string{"k": "v"},
		SystemProperties: &rmqpb.SystemProperties{MessageId: "0123456789ABCDEF0123456789AB", Tag: &tag, Keys: []string{"key"},
			MessageType: rmqpb.MessageType_NORMAL, BodyEncoding: rmqpb.Encoding_IDENTITY, BornHost: "127.0.0.1"},
	}}}))
	f.Add(fuzzMethod(rmqpb.MessagingService_ReceiveMessage_FullMethodName), mustMarshal(&rmqpb.ReceiveMessageRequest{
		Group: group, MessageQueue: &rmqpb.MessageQueue{Topic: topic, Id: -1},
		FilterExpression: &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"}, BatchSize: 4,
		InvisibleDuration: durationpb.New(time.Second), LongPollingTimeout: durationpb.New(100 * time.Millisecond),
	}))
	f.Add(fuzzMethod(rmqpb.MessagingService_AckMessage_FullMethodName), mustMarshal(&rmqpb.AckMessageRequest{Group: group, Topic: topic,
		Entries: []*rmqpb.AckMessageEntry{{MessageId: "0123456789ABCDEF0123456789AB", ReceiptHandle: "handle"}}}))
	f.Add(fuzzMethod(rmqpb.MessagingService_ChangeInvisibleDuration_FullMethodName), mustMarshal(&rmqpb.ChangeInvisibleDurationRequest{Group: group, Topic: topic,
		ReceiptHandle: "handle", InvisibleDuration: durationpb.New(time.Second), MessageId: "0123456789ABCDEF0123456789AB"}))
	f.Add(fuzzMethod(rmqpb.MessagingService_Telemetry_FullMethodName), mustMarshal(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_Settings{Settings: &rmqpb.Settings{
		ClientType: rmqpb.ClientType_PRODUCER.Enum(), PubSub: &rmqpb.Settings_Publishing{Publishing: &rmqpb.Publishing{Topics: []*rmqpb.Resource{topic}}}}}}))

	_, _, conn, _ := serveForTest(f, engine.Options{AutoCreateTopics: true, AutoCreateGroups: true, SegmentSize: 4 << 20, MaxMessageSize: 1 << 20},
		Options{AutoCreateTopics: true, AutoCreateGroups: true})
	f.Fuzz(func(t *testing.T, method uint8, req []byte) {
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, headerClientID, "fuzz-client", headerLanguage, "GOLANG", "x-mq-protocol", "v2")
		var err error
		if m.stream {
			err = callStream(ctx, conn, m.name, req)
		} else {
			var out []byte
			err = conn.Invoke(ctx, m.name, &req, &out, grpc.ForceCodec(rawCodec{}))
		}
		switch status.Code(err) {
		case codes.Internal:
			// What grpc-go answers, too, to a request that does not
			// parse; any other internal error is a fault of the server.
			if !strings.Contains(err.Error(), "error unmarshalling request") {
				t.Fatalf("%s: %v", m.name, err)
			}
		case codes.Unavailable, codes.Unknown:
			t.Fatalf("%s: %v", m.name, err)
		case codes.DeadlineExceeded:
			if !m.stream {
				t.Fatalf("%s: no answer in 5s", m.name)
			}
		}
	})
}

// callStream sends req on a new stream of method, closes its side and
// reads the answers until the stream ends.
func callStream(ctx context.Context, conn *grpc.ClientConn, method string, req []byte) error {
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	if err := s.SendMsg(&req); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		var out []byte
		if err := s.RecvMsg(&out); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
