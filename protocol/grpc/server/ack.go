package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
)

// AckMessage acknowledges received messages, each by its receipt handle,
// and answers with a status per entry. The top-level status is OK when
// every entry is, the entries' common code when they share one, else
// MULTIPLE_RESULTS.
//
// Acknowledging is idempotent: a handle whose message is already
// acknowledged (or dead-lettered) is OK, since clients retry every other
// failure without end. A handle that is garbage, or that a redelivery or
// ChangeInvisibleDuration replaced, is INVALID_RECEIPT_HANDLE, on which
// clients give up. A handle the server renewed (auto_renew) is
// acknowledged through its current lease.
func (s *Server) AckMessage(ctx context.Context, req *rmqpb.AckMessageRequest) (*rmqpb.AckMessageResponse, error) {
	group, err := consumerGroup(req.GetGroup())
	if err == nil {
		_, err = consumedTopic(req.GetTopic())
	}
	if err == nil && len(req.GetEntries()) == 0 {
		err = badRequest("no entries to acknowledge")
	}
	if err != nil {
		return &rmqpb.AckMessageResponse{Status: statusOf(err)}, nil
	}
	owner := sessionOf(ctx)
	resp := &rmqpb.AckMessageResponse{Entries: make([]*rmqpb.AckMessageResultEntry, len(req.GetEntries()))}
	var first *rmqpb.Status
	same := true
	for i, e := range req.GetEntries() {
		st := statusOf(s.ackOne(ctx, owner, group, e.GetReceiptHandle()))
		resp.Entries[i] = &rmqpb.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle(), Status: st}
		if first == nil {
			first = st
		} else if st.Code != first.Code {
			same = false
		}
	}
	switch {
	case same:
		resp.Status = &rmqpb.Status{Code: first.Code, Message: first.Message}
	default:
		resp.Status = &rmqpb.Status{Code: rmqpb.Code_MULTIPLE_RESULTS, Message: "entries have different results"}
	}
	return resp, nil
}

// ackOne acknowledges the message of one receipt handle.
func (s *Server) ackOne(ctx context.Context, owner *session.Session, group, handle string) error {
	if handle == "" {
		return fmt.Errorf("%w: the receipt handle is empty", engine.ErrInvalidHandle)
	}
	err := s.withLease(owner, group, handle, func(h string) error { return s.eng.Ack(ctx, group, h) })
	if errors.Is(err, engine.ErrAlreadyDone) {
		return nil
	}
	return err
}
