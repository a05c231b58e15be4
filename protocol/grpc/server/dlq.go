package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// ForwardMessageToDeadLetterQueue moves a received message to its group's
// dead-letter topic %DLQ%<group> (with its origin topic and message id)
// and acknowledges it, which unblocks a FIFO message group. Push consumers
// send it for FIFO messages that failed their last local attempt.
//
// Clients retry every answer but OK without end, so a forward is
// idempotent: a message already acknowledged or dead-lettered is OK, and
// so is a handle replaced by a redelivery (the message is not forwarded:
// it is in flight again, and goes to the dead-letter topic when it runs
// out of attempts). Only a handle that is garbage is
// INVALID_RECEIPT_HANDLE. A handle the server renewed acts on its current
// lease.
func (s *Server) ForwardMessageToDeadLetterQueue(ctx context.Context, req *rmqpb.ForwardMessageToDeadLetterQueueRequest) (*rmqpb.ForwardMessageToDeadLetterQueueResponse, error) {
	return &rmqpb.ForwardMessageToDeadLetterQueueResponse{Status: s.forwardToDLQ(ctx, req)}, nil
}

func (s *Server) forwardToDLQ(ctx context.Context, req *rmqpb.ForwardMessageToDeadLetterQueueRequest) *rmqpb.Status {
	group, err := consumerGroup(req.GetGroup())
	if err != nil {
		return statusOf(err)
	}
	if _, err := consumedTopic(req.GetTopic()); err != nil {
		return statusOf(err)
	}
	if req.GetReceiptHandle() == "" {
		return statusOf(fmt.Errorf("%w: the receipt handle is empty", engine.ErrInvalidHandle))
	}
	err = s.withLease(sessionOf(ctx), group, req.GetReceiptHandle(), func(h string) error {
		return s.eng.DeadLetter(ctx, group, h)
	})
	switch {
	case errors.Is(err, engine.ErrAlreadyDone):
		return &rmqpb.Status{Code: rmqpb.Code_OK, Message: "message already acknowledged or dead-lettered"}
	case errors.Is(err, engine.ErrHandleExpired):
		return &rmqpb.Status{Code: rmqpb.Code_OK, Message: "receipt handle replaced by a redelivery; the message was not forwarded"}
	}
	return statusOf(err)
}
