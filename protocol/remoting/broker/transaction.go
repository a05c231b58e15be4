package broker

import (
	"context"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Transactions. A send whose message carries TRAN_MSG=true is stored by
// the engine as a half message; the send response's msgId (offset id) and
// queueOffset name it. The producer decides with END_TRANSACTION (37),
// which the Go client sends without expecting an answer. A half message
// left undecided is checked: the engine picks a live producer of its group
// and this broker sends that producer CHECK_TRANSACTION_STATE (39) on the
// connection it heartbeats on, with the half message (topic and queue
// restored) as the body; the producer answers later with END_TRANSACTION.

// endTransaction serves END_TRANSACTION.
func (b *Broker) endTransaction(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.EndTransactionRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	d := engine.Unknown
	switch h.CommitOrRollback {
	case wire.TransactionCommitType:
		d = engine.Commit
	case wire.TransactionRollbackType:
		d = engine.Rollback
	}
	err := b.eng.EndTransaction(ctx, engine.EndTransactionRequest{
		ProducerGroup:   h.ProducerGroup,
		CommitLogOffset: h.CommitLogOffset,
		MsgID:           h.MsgID,
		QueueOffset:     h.TranStateTableOffset,
		Decision:        d,
		FromCheck:       h.FromTransactionCheck,
	})
	if err != nil {
		if d != engine.Unknown {
			b.opts.Logger.Warn("end transaction failed", "group", h.ProducerGroup, "msg_id", h.MsgID, "decision", d.String(), "err", err)
		}
		return errorResponse(req, err)
	}
	return success(req)
}

// checkTransaction is the engine's TransactionChecker for producers
// connected through this front-end.
func (b *Broker) checkTransaction(ctx context.Context, producer registry.ClientInfo, half engine.HalfMessage) error {
	conn, ok := producer.Conn.(*server.Conn)
	if !ok {
		return fmt.Errorf("broker: producer %s has no remoting connection", producer.ID)
	}
	req := wire.NewRequest(wire.CheckTransactionState, nil)
	req.EncodeHeader(&wire.CheckTransactionStateRequestHeader{
		Topic:                half.Topic,
		TranStateTableOffset: half.QueueOffset,
		CommitLogOffset:      half.CommitLogOffset,
		MsgID:                half.MsgID,
		TransactionID:        half.TransactionID,
		OffsetMsgID:          offsetIDOf(half.Record),
		BrokerName:           b.opts.BrokerName,
	})
	req.Body = half.Record
	return conn.InvokeOneway(ctx, req)
}
