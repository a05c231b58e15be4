package server

import (
	"fmt"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

func TestNotMasterStatus(t *testing.T) {
	err := fmt.Errorf("engine: send: %w: this broker is a replica, send to the master", engine.ErrNotMaster)
	if got := codeOf(err); got != rmqpb.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("codeOf(%v) = %v, want INTERNAL_SERVER_ERROR", err, got)
	}
}
