package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// deliverSeen records the Client of every batch a delivery hook sees.
type deliverSeen struct {
	mu      sync.Mutex
	clients []hook.Client
}

func (d *deliverSeen) BeforeDeliver(_ context.Context, b *hook.DeliverBatch) error {
	d.mu.Lock()
	d.clients = append(d.clients, b.Client)
	d.mu.Unlock()
	return nil
}

// TestMessageHookSeesClient checks that, with only a message hook
// installed (no authentication), a receive's batch still names the
// calling client: the gRPC protocol, its id and its consumer group.
func TestMessageHookSeesClient(t *testing.T) {
	seen := &deliverSeen{}
	eng, _, conn, _ := serveForTest(t, engine.Options{AutoCreateGroups: true, SegmentSize: 64 << 20, Hooks: []any{seen}}, Options{})
	h := &consumeHarness{t: t, eng: eng, client: rmqpb.NewMessagingServiceClient(conn)}
	h.topic("HookedTopic", 1)
	h.send("HookedTopic", "hello")
	ctx, cancel := context.WithTimeout(clientCtx("hooked-client"), 10*time.Second)
	defer cancel()
	if got := h.mustReceive(ctx, receiveReq("hooked-group", "HookedTopic", 8, time.Minute), rmqpb.Code_OK); len(got) != 1 {
		t.Fatalf("received %d messages, want 1", len(got))
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.clients) == 0 {
		t.Fatal("the delivery hook saw no batch")
	}
	c := seen.clients[0]
	if c.Protocol != Protocol || c.ID != "hooked-client" || c.Group != "hooked-group" {
		t.Errorf("the delivery hook saw client %+v, want protocol %s, id hooked-client, group hooked-group", c, Protocol)
	}
}
