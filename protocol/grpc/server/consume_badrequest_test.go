package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Bad requests of the consuming RPCs each get their own status code, and
// a message saying what is wrong.
func TestConsumeBadRequests(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 2)
	h.group(meta.Group{Name: "Off", ConsumeDisabled: true})
	ctx := clientCtx("c1")
	res := func(name string) *rmqpb.Resource { return &rmqpb.Resource{Name: name} }
	mq := func(topic string, id int32) *rmqpb.MessageQueue {
		return &rmqpb.MessageQueue{Topic: res(topic), Id: id}
	}
	recv := func(edit func(*rmqpb.ReceiveMessageRequest)) func(context.Context) *rmqpb.Status {
		return func(ctx context.Context) *rmqpb.Status {
			req := receiveReq("G", "T", 8, 30*time.Second)
			edit(req)
			st, _, err := receiveAll(ctx, h.client, req)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
	}
	pull := func(req *rmqpb.PullMessageRequest) func(context.Context) *rmqpb.Status {
		return func(ctx context.Context) *rmqpb.Status { return h.pull(ctx, req).status }
	}
	ack := func(req *rmqpb.AckMessageRequest) func(context.Context) *rmqpb.Status {
		return func(ctx context.Context) *rmqpb.Status {
			resp, err := h.client.AckMessage(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			return resp.GetStatus()
		}
	}
	change := func(req *rmqpb.ChangeInvisibleDurationRequest) func(context.Context) *rmqpb.Status {
		return func(ctx context.Context) *rmqpb.Status {
			resp, err := h.client.ChangeInvisibleDuration(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			return resp.GetStatus()
		}
	}
	forward := func(req *rmqpb.ForwardMessageToDeadLetterQueueRequest) func(context.Context) *rmqpb.Status {
		return func(ctx context.Context) *rmqpb.Status {
			resp, err := h.client.ForwardMessageToDeadLetterQueue(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			return resp.GetStatus()
		}
	}

	tests := []struct {
		name string
		call func(context.Context) *rmqpb.Status
		code rmqpb.Code
		ctx  context.Context // default ctx
	}{
		{"receive: no group", recv(func(r *rmqpb.ReceiveMessageRequest) { r.Group = nil }), rmqpb.Code_ILLEGAL_CONSUMER_GROUP, nil},
		{"receive: bad group", recv(func(r *rmqpb.ReceiveMessageRequest) { r.Group = res("a b") }), rmqpb.Code_ILLEGAL_CONSUMER_GROUP, nil},
		{"receive: no queue", recv(func(r *rmqpb.ReceiveMessageRequest) { r.MessageQueue = nil }), rmqpb.Code_BAD_REQUEST, nil},
		{"receive: no topic", recv(func(r *rmqpb.ReceiveMessageRequest) { r.MessageQueue.Topic = nil }), rmqpb.Code_ILLEGAL_TOPIC, nil},
		{"receive: unknown topic", recv(func(r *rmqpb.ReceiveMessageRequest) { r.MessageQueue.Topic = res("Nope") }), rmqpb.Code_TOPIC_NOT_FOUND, nil},
		{"receive: batch 0", recv(func(r *rmqpb.ReceiveMessageRequest) { r.BatchSize = 0 }), rmqpb.Code_BAD_REQUEST, nil},
		{"receive: batch too large", recv(func(r *rmqpb.ReceiveMessageRequest) { r.BatchSize = engine.MaxPullMessages + 1 }), rmqpb.Code_BAD_REQUEST, nil},
		{"receive: no invisible duration", recv(func(r *rmqpb.ReceiveMessageRequest) { r.InvisibleDuration = nil }), rmqpb.Code_ILLEGAL_INVISIBLE_TIME, nil},
		{"receive: short invisible duration", recv(func(r *rmqpb.ReceiveMessageRequest) { r.InvisibleDuration = durationpb.New(time.Second) }), rmqpb.Code_ILLEGAL_INVISIBLE_TIME, nil},
		{"receive: negative invisible duration", recv(func(r *rmqpb.ReceiveMessageRequest) { r.InvisibleDuration = durationpb.New(-time.Minute) }), rmqpb.Code_ILLEGAL_INVISIBLE_TIME, nil},
		{"receive: invalid invisible duration", recv(func(r *rmqpb.ReceiveMessageRequest) {
			r.InvisibleDuration = &durationpb.Duration{Seconds: 1, Nanos: -5}
		}), rmqpb.Code_ILLEGAL_INVISIBLE_TIME, nil},
		{"receive: long invisible duration", recv(func(r *rmqpb.ReceiveMessageRequest) { r.InvisibleDuration = durationpb.New(13 * time.Hour) }), rmqpb.Code_ILLEGAL_INVISIBLE_TIME, nil},
		{"receive: negative polling", recv(func(r *rmqpb.ReceiveMessageRequest) { r.LongPollingTimeout = durationpb.New(-time.Second) }), rmqpb.Code_ILLEGAL_POLLING_TIME, nil},
		{"receive: bad tag expression", recv(func(r *rmqpb.ReceiveMessageRequest) { r.FilterExpression.Expression = "|| ||" }), rmqpb.Code_ILLEGAL_FILTER_EXPRESSION, nil},
		{"receive: auto_renew without client id", recv(func(r *rmqpb.ReceiveMessageRequest) { r.AutoRenew = true }), rmqpb.Code_CLIENT_ID_REQUIRED, context.Background()},
		{"receive: disabled group", recv(func(r *rmqpb.ReceiveMessageRequest) { r.Group = res("Off") }), rmqpb.Code_FORBIDDEN, nil},
		{"receive: nothing", recv(func(r *rmqpb.ReceiveMessageRequest) {}), rmqpb.Code_MESSAGE_NOT_FOUND, nil},

		{"ack: no group", ack(&rmqpb.AckMessageRequest{Topic: res("T"), Entries: []*rmqpb.AckMessageEntry{{ReceiptHandle: "x"}}}), rmqpb.Code_ILLEGAL_CONSUMER_GROUP, nil},
		{"ack: no topic", ack(&rmqpb.AckMessageRequest{Group: res("G"), Entries: []*rmqpb.AckMessageEntry{{ReceiptHandle: "x"}}}), rmqpb.Code_ILLEGAL_TOPIC, nil},
		{"ack: no entries", ack(&rmqpb.AckMessageRequest{Group: res("G"), Topic: res("T")}), rmqpb.Code_BAD_REQUEST, nil},
		{"ack: empty handle", ack(&rmqpb.AckMessageRequest{Group: res("G"), Topic: res("T"), Entries: []*rmqpb.AckMessageEntry{{}}}), rmqpb.Code_INVALID_RECEIPT_HANDLE, nil},
		{"ack: garbage handle", ack(&rmqpb.AckMessageRequest{Group: res("G"), Topic: res("T"), Entries: []*rmqpb.AckMessageEntry{{ReceiptHandle: "1 T 0 0 0 0 zz"}}}), rmqpb.Code_INVALID_RECEIPT_HANDLE, nil},

		{"change: no group", change(&rmqpb.ChangeInvisibleDurationRequest{Topic: res("T"), ReceiptHandle: "x"}), rmqpb.Code_ILLEGAL_CONSUMER_GROUP, nil},
		{"change: no topic", change(&rmqpb.ChangeInvisibleDurationRequest{Group: res("G"), ReceiptHandle: "x"}), rmqpb.Code_ILLEGAL_TOPIC, nil},
		{"change: no handle", change(&rmqpb.ChangeInvisibleDurationRequest{Group: res("G"), Topic: res("T")}), rmqpb.Code_INVALID_RECEIPT_HANDLE, nil},
		{"change: negative", change(&rmqpb.ChangeInvisibleDurationRequest{Group: res("G"), Topic: res("T"), ReceiptHandle: "x", InvisibleDuration: durationpb.New(-1)}), rmqpb.Code_ILLEGAL_INVISIBLE_TIME, nil},
		{"change: too long", change(&rmqpb.ChangeInvisibleDurationRequest{Group: res("G"), Topic: res("T"), ReceiptHandle: "x", InvisibleDuration: durationpb.New(24 * time.Hour)}), rmqpb.Code_ILLEGAL_INVISIBLE_TIME, nil},
		{"change: garbage handle", change(&rmqpb.ChangeInvisibleDurationRequest{Group: res("G"), Topic: res("T"), ReceiptHandle: "x"}), rmqpb.Code_INVALID_RECEIPT_HANDLE, nil},

		{"forward: no group", forward(&rmqpb.ForwardMessageToDeadLetterQueueRequest{Topic: res("T"), ReceiptHandle: "x"}), rmqpb.Code_ILLEGAL_CONSUMER_GROUP, nil},
		{"forward: no topic", forward(&rmqpb.ForwardMessageToDeadLetterQueueRequest{Group: res("G"), ReceiptHandle: "x"}), rmqpb.Code_ILLEGAL_TOPIC, nil},
		{"forward: no handle", forward(&rmqpb.ForwardMessageToDeadLetterQueueRequest{Group: res("G"), Topic: res("T")}), rmqpb.Code_INVALID_RECEIPT_HANDLE, nil},

		{"pull: no group", pull(&rmqpb.PullMessageRequest{MessageQueue: mq("T", 0), BatchSize: 1}), rmqpb.Code_ILLEGAL_CONSUMER_GROUP, nil},
		{"pull: no queue", pull(&rmqpb.PullMessageRequest{Group: res("G"), BatchSize: 1}), rmqpb.Code_BAD_REQUEST, nil},
		{"pull: negative queue", pull(&rmqpb.PullMessageRequest{Group: res("G"), MessageQueue: mq("T", -1), BatchSize: 1}), rmqpb.Code_BAD_REQUEST, nil},
		{"pull: queue out of range", pull(&rmqpb.PullMessageRequest{Group: res("G"), MessageQueue: mq("T", 9), BatchSize: 1}), rmqpb.Code_BAD_REQUEST, nil},
		{"pull: unknown topic", pull(&rmqpb.PullMessageRequest{Group: res("G"), MessageQueue: mq("Nope", 0), BatchSize: 1}), rmqpb.Code_TOPIC_NOT_FOUND, nil},
		{"pull: batch 0", pull(&rmqpb.PullMessageRequest{Group: res("G"), MessageQueue: mq("T", 0)}), rmqpb.Code_BAD_REQUEST, nil},
		{"pull: negative offset", pull(&rmqpb.PullMessageRequest{Group: res("G"), MessageQueue: mq("T", 0), BatchSize: 1, Offset: -1}), rmqpb.Code_BAD_REQUEST, nil},
		{"pull: bad SQL", pull(&rmqpb.PullMessageRequest{Group: res("G"), MessageQueue: mq("T", 0), BatchSize: 1,
			FilterExpression: &rmqpb.FilterExpression{Type: rmqpb.FilterType_SQL, Expression: "((("}}), rmqpb.Code_ILLEGAL_FILTER_EXPRESSION, nil},

		{"update offset: no group", func(ctx context.Context) *rmqpb.Status {
			resp, _ := h.client.UpdateOffset(ctx, &rmqpb.UpdateOffsetRequest{MessageQueue: mq("T", 0)})
			return resp.GetStatus()
		}, rmqpb.Code_ILLEGAL_CONSUMER_GROUP, nil},
		{"update offset: no queue", func(ctx context.Context) *rmqpb.Status {
			resp, _ := h.client.UpdateOffset(ctx, &rmqpb.UpdateOffsetRequest{Group: res("G")})
			return resp.GetStatus()
		}, rmqpb.Code_BAD_REQUEST, nil},
		{"update offset: negative", func(ctx context.Context) *rmqpb.Status {
			resp, _ := h.client.UpdateOffset(ctx, &rmqpb.UpdateOffsetRequest{Group: res("G"), MessageQueue: mq("T", 0), Offset: -3})
			return resp.GetStatus()
		}, rmqpb.Code_ILLEGAL_OFFSET, nil},
		{"get offset: unknown queue", func(ctx context.Context) *rmqpb.Status {
			resp, _ := h.client.GetOffset(ctx, &rmqpb.GetOffsetRequest{Group: res("G"), MessageQueue: mq("T", 7)})
			return resp.GetStatus()
		}, rmqpb.Code_BAD_REQUEST, nil},
		{"get offset: unknown topic", func(ctx context.Context) *rmqpb.Status {
			resp, _ := h.client.GetOffset(ctx, &rmqpb.GetOffsetRequest{Group: res("G"), MessageQueue: mq("Nope", 0)})
			return resp.GetStatus()
		}, rmqpb.Code_TOPIC_NOT_FOUND, nil},
		{"query offset: no queue", func(ctx context.Context) *rmqpb.Status {
			resp, _ := h.client.QueryOffset(ctx, &rmqpb.QueryOffsetRequest{})
			return resp.GetStatus()
		}, rmqpb.Code_BAD_REQUEST, nil},

		{"assignment: no topic", func(ctx context.Context) *rmqpb.Status {
			resp, _ := h.client.QueryAssignment(ctx, &rmqpb.QueryAssignmentRequest{Group: res("G")})
			return resp.GetStatus()
		}, rmqpb.Code_ILLEGAL_TOPIC, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.ctx
			if c == nil {
				c = ctx
			}
			st := tt.call(c)
			if st.GetCode() != tt.code {
				t.Fatalf("status %v, want %v", st, tt.code)
			}
			if st.GetMessage() == "" || (tt.code != rmqpb.Code_MESSAGE_NOT_FOUND && strings.EqualFold(st.GetMessage(), "OK")) {
				t.Errorf("status message %q says nothing", st.GetMessage())
			}
		})
	}
}
