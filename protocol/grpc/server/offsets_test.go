package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// pullResult is what one PullMessage stream carried.
type pullResult struct {
	status  *rmqpb.Status
	msgs    []*rmqpb.Message
	next    int64
	hasNext bool
}

func (h *consumeHarness) pull(ctx context.Context, req *rmqpb.PullMessageRequest) pullResult {
	h.t.Helper()
	stream, err := h.client.PullMessage(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	var r pullResult
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			h.t.Fatal(err)
		}
		switch c := resp.GetContent().(type) {
		case *rmqpb.PullMessageResponse_Status:
			if r.status != nil {
				h.t.Fatalf("second status %v", c.Status)
			}
			r.status = c.Status
		case *rmqpb.PullMessageResponse_Message:
			if r.status.GetCode() != rmqpb.Code_OK || r.hasNext {
				h.t.Fatalf("message out of place")
			}
			r.msgs = append(r.msgs, c.Message)
		case *rmqpb.PullMessageResponse_NextOffset:
			r.next, r.hasNext = c.NextOffset, true
		}
	}
	if r.status == nil {
		h.t.Fatal("pull without a status")
	}
	return r
}

func pullReq(group, topic string, queue int32, offset int64, batch int32) *rmqpb.PullMessageRequest {
	return &rmqpb.PullMessageRequest{
		Group:        &rmqpb.Resource{Name: group},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: topic}, Id: queue},
		Offset:       offset, BatchSize: batch,
	}
}

// pullAll pulls every message of a queue from offset 0, once everything
// stored is indexed.
func (h *consumeHarness) pullAll(ctx context.Context, group, topic string, queue int32) []*rmqpb.Message {
	h.t.Helper()
	if err := h.eng.WaitDispatched(ctx); err != nil {
		h.t.Fatal(err)
	}
	var out []*rmqpb.Message
	for off := int64(0); ; {
		r := h.pull(ctx, pullReq(group, topic, queue, off, 32))
		if r.status.GetCode() != rmqpb.Code_OK {
			return out
		}
		out = append(out, r.msgs...)
		off = r.next
	}
}

func TestPullAndOffsets(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 1)
	before := time.Now().Add(-time.Second)
	for i := range 5 {
		h.send("T", fmt.Sprint(i), message.PropertyTags, string(rune('A'+i%2)))
	}
	ctx := clientCtx("c1")

	r := h.pull(ctx, pullReq("G", "T", 0, 1, 3))
	if r.status.GetCode() != rmqpb.Code_OK || !slices.Equal(bodiesOf(r.msgs), []string{"1", "2", "3"}) || r.next != 4 {
		t.Fatalf("pull: %v %v next %d", r.status, bodiesOf(r.msgs), r.next)
	}
	sp := r.msgs[0].GetSystemProperties()
	if sp.ReceiptHandle != nil || sp.GetDeliveryAttempt() != 1 || sp.GetQueueOffset() != 1 || sp.GetBodyDigest() == nil {
		t.Errorf("pulled message: %v", sp)
	}
	filtered := pullReq("G", "T", 0, 0, 32)
	filtered.FilterExpression = &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "B"}
	if r := h.pull(ctx, filtered); !slices.Equal(bodiesOf(r.msgs), []string{"1", "3"}) || r.next != 5 {
		t.Errorf("filtered pull: %v next %d", bodiesOf(r.msgs), r.next)
	}
	if r := h.pull(ctx, pullReq("G", "T", 0, 5, 3)); r.status.GetCode() != rmqpb.Code_MESSAGE_NOT_FOUND || r.next != 5 {
		t.Errorf("caught-up pull: %v next %d", r.status, r.next)
	}
	if r := h.pull(ctx, pullReq("G", "T", 0, 9, 3)); r.status.GetCode() != rmqpb.Code_ILLEGAL_OFFSET || !r.hasNext || r.next != 5 {
		t.Errorf("pull past the end: %v next %d", r.status, r.next)
	}

	// Long polling wakes on arrival.
	wait := pullReq("G", "T", 0, 5, 3)
	wait.LongPollingTimeout = durationpb.New(10 * time.Second)
	go func() {
		time.Sleep(200 * time.Millisecond)
		h.send("T", "5")
	}()
	start := time.Now()
	if r := h.pull(ctx, wait); !slices.Equal(bodiesOf(r.msgs), []string{"5"}) || time.Since(start) > 3*time.Second {
		t.Errorf("long-polling pull: %v after %s", bodiesOf(r.msgs), time.Since(start))
	}

	mq := &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: 0}
	g := &rmqpb.Resource{Name: "G"}
	if resp, _ := h.client.GetOffset(ctx, &rmqpb.GetOffsetRequest{Group: g, MessageQueue: mq}); resp.GetStatus().GetCode() != rmqpb.Code_OFFSET_NOT_FOUND {
		t.Errorf("offset before any commit: %v", resp)
	}
	if resp, _ := h.client.UpdateOffset(ctx, &rmqpb.UpdateOffsetRequest{Group: g, MessageQueue: mq, Offset: 4}); resp.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("update offset: %v", resp)
	}
	if resp, _ := h.client.GetOffset(ctx, &rmqpb.GetOffsetRequest{Group: g, MessageQueue: mq}); resp.GetStatus().GetCode() != rmqpb.Code_OK || resp.GetOffset() != 4 {
		t.Errorf("offset: %v", resp)
	}
	if resp, _ := h.client.UpdateOffset(ctx, &rmqpb.UpdateOffsetRequest{Group: g, MessageQueue: mq, Offset: 99}); resp.GetStatus().GetCode() != rmqpb.Code_ILLEGAL_OFFSET {
		t.Errorf("update past the end: %v", resp)
	}

	query := func(p rmqpb.QueryOffsetPolicy, ts *timestamppb.Timestamp) *rmqpb.QueryOffsetResponse {
		resp, err := h.client.QueryOffset(ctx, &rmqpb.QueryOffsetRequest{MessageQueue: mq, QueryOffsetPolicy: p, Timestamp: ts})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, c := range []struct {
		resp *rmqpb.QueryOffsetResponse
		code rmqpb.Code
		off  int64
	}{
		{query(rmqpb.QueryOffsetPolicy_BEGINNING, nil), rmqpb.Code_OK, 0},
		{query(rmqpb.QueryOffsetPolicy_END, nil), rmqpb.Code_OK, 6},
		{query(rmqpb.QueryOffsetPolicy_TIMESTAMP, timestamppb.New(before)), rmqpb.Code_OK, 0},
		{query(rmqpb.QueryOffsetPolicy_TIMESTAMP, timestamppb.New(time.Now().Add(time.Hour))), rmqpb.Code_OK, 6},
		{query(rmqpb.QueryOffsetPolicy_TIMESTAMP, nil), rmqpb.Code_BAD_REQUEST, 0},
		{query(rmqpb.QueryOffsetPolicy(9), nil), rmqpb.Code_BAD_REQUEST, 0},
	} {
		if c.resp.GetStatus().GetCode() != c.code || c.resp.GetOffset() != c.off {
			t.Errorf("query offset: %v, want %v %d", c.resp, c.code, c.off)
		}
	}
}

// TestUpdateOffsetMovesReceives checks that an offset set with
// UpdateOffset is where the group's receives continue, forward or back
// (past messages still in flight).
func TestUpdateOffsetMovesReceives(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 1)
	for i := range 8 {
		h.send("T", fmt.Sprint(i))
	}
	if err := h.eng.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := clientCtx("c1")
	mq := &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: 0}
	g := &rmqpb.Resource{Name: "G"}
	seek := func(off int64) {
		t.Helper()
		if resp, _ := h.client.UpdateOffset(ctx, &rmqpb.UpdateOffsetRequest{Group: g, MessageQueue: mq, Offset: off}); resp.GetStatus().GetCode() != rmqpb.Code_OK {
			t.Fatalf("update offset to %d: %v", off, resp)
		}
	}
	first := h.mustReceive(ctx, receiveReq("G", "T", 2, time.Minute), rmqpb.Code_OK)
	if got := bodiesOf(first); !slices.Equal(got, []string{"0", "1"}) {
		t.Fatalf("first receive %v", got)
	}
	seek(5)
	if got := bodiesOf(h.mustReceive(ctx, receiveReq("G", "T", 32, time.Minute), rmqpb.Code_OK)); !slices.Equal(got, []string{"5", "6", "7"}) {
		t.Fatalf("receive after moving the offset to 5: %v", got)
	}
	seek(2) // back, below messages in flight: they are delivered again
	if got := bodiesOf(h.mustReceive(ctx, receiveReq("G", "T", 32, time.Minute), rmqpb.Code_OK)); !slices.Equal(got, []string{"2", "3", "4", "5", "6", "7"}) {
		t.Fatalf("receive after moving the offset back to 2: %v", got)
	}
}
