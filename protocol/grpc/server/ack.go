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
	entries := req.GetEntries()
	errs := s.ackAll(ctx, sessionOf(ctx), group, entries)
	resp := &rmqpb.AckMessageResponse{Entries: make([]*rmqpb.AckMessageResultEntry, len(entries))}
	results := make([]rmqpb.AckMessageResultEntry, len(entries))
	ok := okStatus() // shared by the entries acknowledged
	var first *rmqpb.Status
	same := true
	for i, e := range entries {
		st := ok
		if errs[i] != nil {
			st = statusOf(errs[i])
		}
		r := &results[i]
		r.MessageId, r.ReceiptHandle, r.Status = e.GetMessageId(), e.GetReceiptHandle(), st
		resp.Entries[i] = r
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

// ackAll acknowledges the message of each entry's receipt handle and
// returns each entry's error. Handles of the client's leases are
// acknowledged through them one by one, the others with one engine call.
func (s *Server) ackAll(ctx context.Context, owner *session.Session, group string, entries []*rmqpb.AckMessageEntry) []error {
	errs := make([]error, len(entries))
	handles := make([]string, 0, len(entries))
	at := make([]int, 0, len(entries))
	for i, e := range entries {
		h := e.GetReceiptHandle()
		switch l := s.leases.lookup(owner, h); {
		case h == "":
			errs[i] = fmt.Errorf("%w: the receipt handle is empty", engine.ErrInvalidHandle)
		case l != nil && l.group == group:
			errs[i] = s.withLease(owner, group, h, func(h string) error { return s.eng.Ack(ctx, group, h) })
		default:
			handles = append(handles, h)
			at = append(at, i)
		}
	}
	if len(handles) > 0 {
		for j, err := range s.eng.AckBatch(ctx, group, handles) {
			errs[at[j]] = err
		}
	}
	for i, err := range errs {
		if errors.Is(err, engine.ErrAlreadyDone) {
			errs[i] = nil
		}
	}
	return errs
}
