package server

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// observed records what Options.Latency sees.
type observed struct {
	mu   sync.Mutex
	seen []observation
}

type observation struct {
	method, code string
	d            time.Duration
}

func (o *observed) latency(method, code string, d time.Duration) {
	o.mu.Lock()
	o.seen = append(o.seen, observation{method, code, d})
	o.mu.Unlock()
}

// take returns what was observed since the last take. A call's
// observation is made before its trailers leave, so it is there once the
// client has read the end of the call.
func (o *observed) take() []observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.seen
	o.seen = nil
	return s
}

// The calls that answer one request with a stream are observed once
// each, until their last response, with the code of their status; the
// Telemetry session is not observed.
func TestLatencyOfStreamingCalls(t *testing.T) {
	var obs observed
	h := newConsumeHarness(t, Options{Latency: obs.latency})
	h.topic("T", 1)
	h.group(meta.Group{Name: "G"})
	for range 3 {
		h.send("T", "x")
	}
	ctx := clientCtx("consumer@1")

	// Three messages in one call: one observation, not one per response.
	if msgs := h.mustReceive(ctx, receiveReq("G", "T", 8, time.Minute), rmqpb.Code_OK); len(msgs) != 3 {
		t.Fatalf("received %d messages, want 3", len(msgs))
	}
	if got := obs.take(); len(got) != 1 || got[0].method != "ReceiveMessage" || got[0].code != "OK" || got[0].d <= 0 {
		t.Fatalf("a receive of 3 messages observed as %+v, want one ReceiveMessage OK", got)
	}

	// A long poll that finds nothing: observed once it answers, with its
	// status, its duration the time it was held.
	const hold = 300 * time.Millisecond
	req := receiveReq("G", "T", 8, time.Minute)
	req.LongPollingTimeout = durationpb.New(hold)
	h.mustReceive(ctx, req, rmqpb.Code_MESSAGE_NOT_FOUND)
	if got := obs.take(); len(got) != 1 || got[0].method != "ReceiveMessage" || got[0].code != "MESSAGE_NOT_FOUND" || got[0].d < hold/2 {
		t.Fatalf("a long poll of %v observed as %+v, want one ReceiveMessage MESSAGE_NOT_FOUND held that long", hold, got)
	}

	// A bad request, answered with its status.
	bad := receiveReq("G", "T", 0, time.Minute)
	h.mustReceive(ctx, bad, rmqpb.Code_BAD_REQUEST)
	if got := obs.take(); len(got) != 1 || got[0].code != "BAD_REQUEST" {
		t.Fatalf("a bad receive observed as %+v", got)
	}

	// PullMessage, the other call of one request and a stream.
	ps, err := h.client.PullMessage(ctx, &rmqpb.PullMessageRequest{Group: &rmqpb.Resource{Name: "G"},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: 0}, Offset: 0, BatchSize: 8,
		FilterExpression: &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"}, LongPollingTimeout: durationpb.New(0)})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := ps.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if got := obs.take(); len(got) != 1 || got[0].method != "PullMessage" {
		t.Fatalf("a pull observed as %+v, want one PullMessage", got)
	}

	// Telemetry: a session of its own, not observed.
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ts, err := h.client.Telemetry(tctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Send(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_Settings{Settings: consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "G", "T")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := ts.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := ts.Recv(); err != nil {
			break
		}
	}
	if got := obs.take(); len(got) != 0 {
		t.Fatalf("telemetry observed as %+v, want nothing", got)
	}
}
