package server

import (
	"context"
	"fmt"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// SyncLiteSubscription is refused with NOT_IMPLEMENTED: the server has no
// lite topics (per-key sub-streams of a topic). Lite consumers are refused
// earlier, when they declare their settings (telemetry.go), and lite
// messages when they are sent.
func (s *Server) SyncLiteSubscription(ctx context.Context, req *rmqpb.SyncLiteSubscriptionRequest) (*rmqpb.SyncLiteSubscriptionResponse, error) {
	return &rmqpb.SyncLiteSubscriptionResponse{Status: statusOf(fmt.Errorf("%w: lite topics are not supported by this server", errNotImplemented))}, nil
}
