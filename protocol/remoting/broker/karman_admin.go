package broker

import (
	"context"
	"errors"
	"math"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// invokeBrokerToResetOffset serves INVOKE_BROKER_TO_RESET_OFFSET (222):
// move a group's offsets in a topic to a time (-1: the end), for pull and
// pop consumers alike, and tell the group's connected consumers. The
// answer's body holds the new offsets.
func (b *Broker) invokeBrokerToResetOffset(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.ResetOffsetRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	ts := h.Timestamp
	if ts < 0 {
		ts = math.MaxInt64 // Java: -1 resets to the end
	}
	offsets, err := b.eng.ResetOffset(ctx, h.Group, h.Topic, ts)
	if err != nil {
		return errorResponse(req, err)
	}
	body, err := resetOffsetBody(b.opts.BrokerName, h.Topic, offsets)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.Body = body
	return resp
}

// resendDeadLetter serves KARMAN_RESEND_DEAD_LETTER (30000): put a dead
// letter of a group back on the topic it came from.
func (b *Broker) resendDeadLetter(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.ResendDeadLetterRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	res, err := b.eng.ResendDeadLetter(ctx, h.Group, h.MsgID)
	if err != nil {
		if errors.Is(err, engine.ErrMessageNotFound) {
			return wire.NewResponse(req, wire.QueryNotFound, err.Error())
		}
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.EncodeHeader(&wire.ResendDeadLetterResponseHeader{
		Topic:       res.Topic,
		MsgID:       res.MsgID,
		OffsetMsgID: res.OffsetMsgID(),
		QueueID:     res.QueueID,
		QueueOffset: res.QueueOffset,
	})
	return resp
}
