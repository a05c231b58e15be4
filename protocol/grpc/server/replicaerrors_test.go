package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

func TestNotMasterStatus(t *testing.T) {
	err := fmt.Errorf("engine: send: %w: this broker is a replica, send to the master", engine.ErrNotMaster)
	if got := codeOf(err); got != rmqpb.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("codeOf(%v) = %v, want INTERNAL_SERVER_ERROR", err, got)
	}
}

// A replica (here a demoted master) refuses receives, acknowledgements
// and invisibility changes with the code clients retry elsewhere, and
// says why; pop state is the master's.
func TestReplicaRefusesReceive(t *testing.T) {
	h := newConsumeHarness(t, Options{})
	h.topic("T", 1)
	for i := range 3 {
		h.send("T", fmt.Sprint("m", i))
	}
	ctx := clientCtx("c1")
	msgs := h.mustReceive(ctx, receiveReq("G", "T", 1, 30*time.Second), rmqpb.Code_OK)
	if err := h.eng.Demote(); err != nil {
		t.Fatal(err)
	}
	st, got := h.receive(ctx, receiveReq("G", "T", 32, 30*time.Second))
	if st.GetCode() != rmqpb.Code_INTERNAL_SERVER_ERROR || len(got) != 0 || !strings.Contains(st.GetMessage(), "replica") {
		t.Fatalf("receive from a replica: %v with %d messages, want INTERNAL_SERVER_ERROR naming the replica", st, len(got))
	}
	handle := msgs[0].GetSystemProperties().GetReceiptHandle()
	if code := h.ackHandle(ctx, "G", "T", handle); code != rmqpb.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("ack on a replica: %v, want INTERNAL_SERVER_ERROR", code)
	}
	if resp := h.changeInvisible(ctx, "G", "T", handle, time.Second); resp.GetStatus().GetCode() != rmqpb.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("change invisible on a replica: %v, want INTERNAL_SERVER_ERROR", resp.GetStatus())
	}
}
