package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
)

// consumeHarness is a Server on a real engine in a temporary directory,
// served by a grpc.Server on a loopback port, and a client of it.
type consumeHarness struct {
	t      testing.TB
	eng    *engine.Engine
	srv    *Server
	client rmqpb.MessagingServiceClient
}

// newConsumeHarness starts a server with o (its Endpoint is set to the
// listener's address).
func newConsumeHarness(t testing.TB, o Options) *consumeHarness {
	t.Helper()
	// Registered first, so it runs after the server has stopped.
	t.Cleanup(func() { checkNoServerGoroutines(t) })
	o.Endpoint = ""
	eng, srv, conn, _ := serveForTest(t, engine.Options{AutoCreateGroups: true, SegmentSize: 64 << 20}, o)
	return &consumeHarness{t: t, eng: eng, srv: srv, client: rmqpb.NewMessagingServiceClient(conn)}
}

// checkNoServerGoroutines fails t when goroutines of the server are still
// running a while after it was closed.
func checkNoServerGoroutines(t testing.TB) {
	t.Helper()
	var stacks string
	for range 200 {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "protocol/grpc/server.(*Server)") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("server goroutines left after Close:\n%s", stacks)
}

// clientCtx returns a context naming client id in its metadata.
func clientCtx(id string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), headerClientID, id)
}

func (h *consumeHarness) topic(name string, queues int32) {
	h.t.Helper()
	if err := h.eng.CreateTopic(meta.Topic{Name: name, ReadQueues: queues, WriteQueues: queues, Perm: meta.PermRW}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *consumeHarness) group(g meta.Group) {
	h.t.Helper()
	if err := h.eng.CreateGroup(g); err != nil {
		h.t.Fatal(err)
	}
}

// send stores a message with body and properties (name, value pairs) in
// topic and waits until consumers can see it.
func (h *consumeHarness) send(topic, body string, props ...string) {
	h.t.Helper()
	m := &message.Message{Topic: topic, Body: []byte(body)}
	for i := 0; i+1 < len(props); i += 2 {
		m.SetProperty(props[i], props[i+1])
	}
	if _, err := h.eng.Send(context.Background(), m); err != nil {
		h.t.Fatal(err)
	}
	if err := h.eng.WaitDispatched(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// receiveReq is a receive without auto_renew and without waiting.
func receiveReq(group, topic string, batch int32, invisible time.Duration) *rmqpb.ReceiveMessageRequest {
	return &rmqpb.ReceiveMessageRequest{
		Group:              &rmqpb.Resource{Name: group},
		MessageQueue:       &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: topic}},
		FilterExpression:   &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
		BatchSize:          batch,
		InvisibleDuration:  durationpb.New(invisible),
		LongPollingTimeout: durationpb.New(0),
	}
}

// receive runs a ReceiveMessage call and returns its status and
// messages, checking the shape of the stream: one status, first, then
// messages only when it is OK.
func (h *consumeHarness) receive(ctx context.Context, req *rmqpb.ReceiveMessageRequest) (*rmqpb.Status, []*rmqpb.Message) {
	h.t.Helper()
	st, msgs, err := receiveAll(ctx, h.client, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return st, msgs
}

func receiveAll(ctx context.Context, c rmqpb.MessagingServiceClient, req *rmqpb.ReceiveMessageRequest) (*rmqpb.Status, []*rmqpb.Message, error) {
	stream, err := c.ReceiveMessage(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	var (
		st   *rmqpb.Status
		msgs []*rmqpb.Message
	)
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		switch c := r.GetContent().(type) {
		case *rmqpb.ReceiveMessageResponse_Status:
			if st != nil || len(msgs) > 0 {
				return nil, nil, fmt.Errorf("status %v after the first item", c.Status)
			}
			st = c.Status
		case *rmqpb.ReceiveMessageResponse_Message:
			if st.GetCode() != rmqpb.Code_OK {
				return nil, nil, fmt.Errorf("message after status %v", st)
			}
			msgs = append(msgs, c.Message)
		default:
			return nil, nil, fmt.Errorf("unexpected item %v", r)
		}
	}
	if st == nil {
		return nil, nil, errors.New("stream without a status")
	}
	if st.GetCode() == rmqpb.Code_OK && len(msgs) == 0 {
		return nil, nil, errors.New("status OK without messages")
	}
	return st, msgs, nil
}

// mustReceive receives and fails unless the status is want.
func (h *consumeHarness) mustReceive(ctx context.Context, req *rmqpb.ReceiveMessageRequest, want rmqpb.Code) []*rmqpb.Message {
	h.t.Helper()
	st, msgs := h.receive(ctx, req)
	if st.GetCode() != want {
		h.t.Fatalf("receive: status %v, want %v", st, want)
	}
	return msgs
}

func (h *consumeHarness) ack(ctx context.Context, group, topic string, msgs ...*rmqpb.Message) *rmqpb.AckMessageResponse {
	h.t.Helper()
	req := &rmqpb.AckMessageRequest{Group: &rmqpb.Resource{Name: group}, Topic: &rmqpb.Resource{Name: topic}}
	for _, m := range msgs {
		req.Entries = append(req.Entries, &rmqpb.AckMessageEntry{
			MessageId: m.GetSystemProperties().GetMessageId(), ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()})
	}
	resp, err := h.client.AckMessage(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func (h *consumeHarness) ackHandle(ctx context.Context, group, topic, handle string) rmqpb.Code {
	h.t.Helper()
	resp, err := h.client.AckMessage(ctx, &rmqpb.AckMessageRequest{
		Group: &rmqpb.Resource{Name: group}, Topic: &rmqpb.Resource{Name: topic},
		Entries: []*rmqpb.AckMessageEntry{{ReceiptHandle: handle}},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.GetStatus().GetCode()
}

func (h *consumeHarness) changeInvisible(ctx context.Context, group, topic, handle string, d time.Duration) *rmqpb.ChangeInvisibleDurationResponse {
	h.t.Helper()
	resp, err := h.client.ChangeInvisibleDuration(ctx, &rmqpb.ChangeInvisibleDurationRequest{
		Group: &rmqpb.Resource{Name: group}, Topic: &rmqpb.Resource{Name: topic},
		ReceiptHandle: handle, InvisibleDuration: durationpb.New(d),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func bodiesOf(msgs []*rmqpb.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.GetBody())
	}
	return out
}
