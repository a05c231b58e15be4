package server

import (
	"context"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/registry"
)

// checkTransaction asks a producer connected over gRPC to resolve half,
// with a RecoverOrphanedTransactionCommand on its telemetry stream.
func (s *Server) checkTransaction(ctx context.Context, producer registry.ClientInfo, half engine.HalfMessage) error {
	return errNotImplemented
}
