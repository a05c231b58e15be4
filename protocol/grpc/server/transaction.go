package server

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// Transactions. A TRANSACTION message is stored by the engine as a half
// message, invisible to consumers, whose producer group is its topic (as
// RocketMQ's proxy names it for gRPC producers). Its SendResultEntry
// carries a transaction id: the offset message id of the half message
// (store host and commit-log offset, as RocketMQ's remoting brokers name
// it), which finds it without a lookup by message id. The producer
// decides with EndTransaction; a producer that stays silent is asked with
// a RecoverOrphanedTransactionCommand on its telemetry stream
// (transaction_check.go) and answers with EndTransaction too.

// EndTransaction commits or rolls back a half message, found by its
// transaction id, or by its message id when the transaction id is not one
// this server issued. An unknown or already resolved transaction is
// INVALID_TRANSACTION_ID. An unspecified resolution leaves the message
// pending: it will be checked.
func (s *Server) EndTransaction(ctx context.Context, req *rmqpb.EndTransactionRequest) (*rmqpb.EndTransactionResponse, error) {
	return &rmqpb.EndTransactionResponse{Status: statusOf(s.endTransaction(ctx, req))}, nil
}

func (s *Server) endTransaction(ctx context.Context, req *rmqpb.EndTransactionRequest) error {
	topic := convert.ResourceName(req.GetTopic())
	if topic == "" {
		return fmt.Errorf("%w: EndTransaction names no topic", errIllegalTopic)
	}
	if req.GetTransactionId() == "" && req.GetMessageId() == "" {
		return fmt.Errorf("%w: EndTransaction needs a transaction_id or a message_id", errInvalidTxID)
	}
	r := engine.EndTransactionRequest{
		ProducerGroup: topic,
		MsgID:         req.GetMessageId(),
		QueueOffset:   -1,
		FromCheck:     req.GetSource() == rmqpb.TransactionSource_SOURCE_SERVER_CHECK,
	}
	switch res := req.GetResolution(); res {
	case rmqpb.TransactionResolution_COMMIT:
		r.Decision = engine.Commit
	case rmqpb.TransactionResolution_ROLLBACK:
		r.Decision = engine.Rollback
	case rmqpb.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED:
		r.Decision = engine.Unknown
	default:
		return badRequest("unknown transaction resolution %d", int32(res))
	}
	if off, ok := halfOffset(req.GetTransactionId()); ok {
		r.CommitLogOffset = off
	} else if r.MsgID == "" {
		r.MsgID = req.GetTransactionId() // a message id, as RocketMQ's proxy issues them
	}
	if err := s.eng.EndTransaction(ctx, r); err != nil {
		if r.Decision != engine.Unknown {
			s.log.Warn("end transaction failed", "topic", topic, "msg_id", r.MsgID, "decision", r.Decision.String(), "err", err)
		}
		return fmt.Errorf("%s of transaction %q (message %q) of topic %s: %w", r.Decision, req.GetTransactionId(), req.GetMessageId(), topic, err)
	}
	return nil
}

// transactionID returns the transaction id of the half message stored at
// commit-log offset off by host.
func transactionID(host netip.AddrPort, off int64) string {
	return message.OffsetID(host, off)
}

// halfOffset returns the commit-log offset a transaction id names.
func halfOffset(id string) (int64, bool) {
	if id == "" {
		return 0, false
	}
	_, off, err := message.ParseOffsetID(id)
	return off, err == nil && off >= 0
}
