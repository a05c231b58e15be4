package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Bad requests to the publishing and lifecycle RPCs are answered with the
// status code that says what is wrong, and a message that says it too,
// never with a transport error or a panic.
func TestBadPublishingRequests(t *testing.T) {
	e := newPubEnv(t, engine.Options{AutoCreateTopics: true}, Options{AutoCreateTopics: true, MaxBodySize: 64})
	if err := e.eng.CreateTopic(meta.Topic{Name: "T", ReadQueues: 1, WriteQueues: 1}); err != nil {
		t.Fatal(err)
	}
	sendOne := func(m *rmqpb.Message) func(ctx context.Context) (*rmqpb.Status, error) {
		return func(ctx context.Context) (*rmqpb.Status, error) {
			resp, err := e.cli.SendMessage(ctx, &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{m}})
			return resp.GetStatus(), err
		}
	}
	withSys := func(edit func(*rmqpb.SystemProperties)) *rmqpb.Message {
		return e.msg("T", "body", func(m *rmqpb.Message) { edit(m.SystemProperties) })
	}
	end := func(req *rmqpb.EndTransactionRequest) func(ctx context.Context) (*rmqpb.Status, error) {
		return func(ctx context.Context) (*rmqpb.Status, error) {
			resp, err := e.cli.EndTransaction(ctx, req)
			return resp.GetStatus(), err
		}
	}
	recall := func(req *rmqpb.RecallMessageRequest) func(ctx context.Context) (*rmqpb.Status, error) {
		return func(ctx context.Context) (*rmqpb.Status, error) {
			resp, err := e.cli.RecallMessage(ctx, req)
			return resp.GetStatus(), err
		}
	}
	route := func(req *rmqpb.QueryRouteRequest) func(ctx context.Context) (*rmqpb.Status, error) {
		return func(ctx context.Context) (*rmqpb.Status, error) {
			resp, err := e.cli.QueryRoute(ctx, req)
			return resp.GetStatus(), err
		}
	}
	tx := &rmqpb.Resource{Name: "T"}
	for _, tc := range []struct {
		name   string
		call   func(ctx context.Context) (*rmqpb.Status, error)
		want   rmqpb.Code
		saying string // in the status message
	}{
		{"route: no request fields", route(&rmqpb.QueryRouteRequest{}), rmqpb.Code_ILLEGAL_TOPIC, "no topic"},
		{"route: invalid topic", route(&rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "a/b"}}), rmqpb.Code_ILLEGAL_TOPIC, "a/b"},

		{"send: no messages", func(ctx context.Context) (*rmqpb.Status, error) {
			resp, err := e.cli.SendMessage(ctx, &rmqpb.SendMessageRequest{})
			return resp.GetStatus(), err
		}, rmqpb.Code_BAD_REQUEST, "no messages"},
		{"send: empty message", sendOne(&rmqpb.Message{}), rmqpb.Code_ILLEGAL_TOPIC, "without a topic"},
		{"send: no system properties", sendOne(&rmqpb.Message{Topic: tx, Body: []byte("x")}), rmqpb.Code_ILLEGAL_MESSAGE_ID, "message_id"},
		{"send: no message id", sendOne(withSys(func(sp *rmqpb.SystemProperties) { sp.MessageId = "" })), rmqpb.Code_ILLEGAL_MESSAGE_ID, "message_id is required"},
		{"send: empty body", sendOne(e.msg("T", "", nil)), rmqpb.Code_MESSAGE_BODY_EMPTY, "empty"},
		{"send: body too large", sendOne(e.msg("T", strings.Repeat("x", 65), nil)), rmqpb.Code_MESSAGE_BODY_TOO_LARGE, "limit is 64"},
		{"send: bad tag", sendOne(withSys(func(sp *rmqpb.SystemProperties) { sp.Tag = proto.String("a|b") })), rmqpb.Code_ILLEGAL_MESSAGE_TAG, "'|'"},
		{"send: bad key", sendOne(withSys(func(sp *rmqpb.SystemProperties) { sp.Keys = []string{"\x01"} })), rmqpb.Code_ILLEGAL_MESSAGE_KEY, "control character"},
		{"send: bad group", sendOne(withSys(func(sp *rmqpb.SystemProperties) {
			sp.MessageType = rmqpb.MessageType_FIFO
			sp.MessageGroup = proto.String(" ")
		})), rmqpb.Code_ILLEGAL_MESSAGE_GROUP, "empty"},
		{"send: system property", sendOne(e.msg("T", "x", func(m *rmqpb.Message) { m.UserProperties = map[string]string{"UNIQ_KEY": "x"} })), rmqpb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "UNIQ_KEY"},
		{"send: type conflict", sendOne(withSys(func(sp *rmqpb.SystemProperties) { sp.MessageType = rmqpb.MessageType_DELAY })), rmqpb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "no delivery time"},
		{"send: bad delivery time", sendOne(withSys(func(sp *rmqpb.SystemProperties) {
			sp.MessageType = rmqpb.MessageType_DELAY
			sp.DeliveryTimestamp = &timestamppb.Timestamp{Seconds: -1}
		})), rmqpb.Code_ILLEGAL_DELIVERY_TIME, "before 1970"},
		{"send: delivery beyond the timer horizon", sendOne(withSys(func(sp *rmqpb.SystemProperties) {
			sp.MessageType = rmqpb.MessageType_DELAY
			sp.DeliveryTimestamp = timestamppb.New(time.Now().Add(24 * 365 * time.Hour))
		})), rmqpb.Code_ILLEGAL_DELIVERY_TIME, "ahead"},
		{"send: lite message", sendOne(withSys(func(sp *rmqpb.SystemProperties) {
			sp.MessageType = rmqpb.MessageType_LITE
			sp.LiteTopic = proto.String("l")
		})), rmqpb.Code_UNSUPPORTED, "not supported"},
		{"send: corrupt gzip", sendOne(withSys(func(sp *rmqpb.SystemProperties) { sp.BodyEncoding = rmqpb.Encoding_GZIP })), rmqpb.Code_MESSAGE_CORRUPTED, "GZIP"},

		{"end: no fields", end(&rmqpb.EndTransactionRequest{}), rmqpb.Code_ILLEGAL_TOPIC, "no topic"},
		{"end: no ids", end(&rmqpb.EndTransactionRequest{Topic: tx, Resolution: rmqpb.TransactionResolution_COMMIT}), rmqpb.Code_INVALID_TRANSACTION_ID, "transaction_id or a message_id"},
		{"end: unknown resolution", end(&rmqpb.EndTransactionRequest{Topic: tx, MessageId: "m", Resolution: 9}), rmqpb.Code_BAD_REQUEST, "resolution"},
		{"end: unknown transaction", end(&rmqpb.EndTransactionRequest{Topic: tx, TransactionId: "7F00000100002A9F0000000000FFFFFF", MessageId: "m", Resolution: rmqpb.TransactionResolution_COMMIT}), rmqpb.Code_INVALID_TRANSACTION_ID, "no pending half message"},

		{"recall: no handle", recall(&rmqpb.RecallMessageRequest{}), rmqpb.Code_BAD_REQUEST, "recall_handle"},
		{"recall: garbage handle", recall(&rmqpb.RecallMessageRequest{Topic: tx, RecallHandle: "%%%"}), rmqpb.Code_BAD_REQUEST, "not one this server issued"},
		{"recall: foreign handle", recall(&rmqpb.RecallMessageRequest{Topic: tx, RecallHandle: "djEgVA"}), rmqpb.Code_BAD_REQUEST, "not one this server issued"},
		{"recall: handle of another topic", recall(&rmqpb.RecallMessageRequest{Topic: &rmqpb.Resource{Name: "U"}, RecallHandle: recallHandle("T", "id")}), rmqpb.Code_BAD_REQUEST, "for topic T"},
		{"recall: unknown message", recall(&rmqpb.RecallMessageRequest{Topic: tx, RecallHandle: recallHandle("T", "nope")}), rmqpb.Code_NOT_FOUND, "nope"},

		{"lite subscription", func(ctx context.Context) (*rmqpb.Status, error) {
			resp, err := e.cli.SyncLiteSubscription(ctx, &rmqpb.SyncLiteSubscriptionRequest{})
			return resp.GetStatus(), err
		}, rmqpb.Code_NOT_IMPLEMENTED, "lite topics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := tc.call(e.as("client@1"))
			if err != nil {
				t.Fatalf("transport error %v", err)
			}
			e.want(st, tc.want)
			if !strings.Contains(st.GetMessage(), tc.saying) {
				t.Errorf("message %q does not say %q", st.GetMessage(), tc.saying)
			}
		})
	}
}
