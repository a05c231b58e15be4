package broker

import (
	"context"
	"errors"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) and SEARCH_OFFSET_BY_TIMESTAMP
// (29): positions in a queue. Clients parse the offset extField without
// looking at the response code, so every answer carries one; a queue that
// does not exist answers 0, as in Java. The max offset counts every
// message acknowledged before the request: it waits, briefly, until the
// engine has indexed them.

func (b *Broker) getMaxOffset(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetMaxOffsetRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return offsetResponse(req, 0, err)
	}
	b.waitIndexed(ctx) // count every message already acknowledged
	off, err := b.eng.MaxOffset(h.Topic, h.QueueID)
	return offsetResponse(req, off, err)
}

func (b *Broker) getMinOffset(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetMinOffsetRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return offsetResponse(req, 0, err)
	}
	off, err := b.eng.MinOffset(h.Topic, h.QueueID)
	return offsetResponse(req, off, err)
}

// getEarliestMsgStoretime serves GET_EARLIEST_MSG_STORETIME (32): the
// store time of the first message still in the queue, -1 when the queue
// holds none (Java answers the same, with SUCCESS).
func (b *Broker) getEarliestMsgStoretime(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetEarliestMsgStoretimeRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	ts := int64(-1)
	first, err := b.eng.MinOffset(h.Topic, h.QueueID)
	if err == nil {
		ts, err = b.eng.StoreTime(h.Topic, h.QueueID, first)
	}
	switch {
	case err == nil:
	case errors.Is(err, engine.ErrMessageNotFound), errors.Is(err, engine.ErrTopicNotFound), errors.Is(err, engine.ErrInvalidQueue):
		ts = -1
	default:
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.EncodeHeader(&wire.GetEarliestMsgStoretimeResponseHeader{Timestamp: ts})
	return resp
}

// searchOffsetByTimestamp answers the first offset stored at or after the
// timestamp (boundary LOWER, the default), or the last one stored at or
// before it (UPPER); the max offset when nothing was stored since.
func (b *Broker) searchOffsetByTimestamp(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.SearchOffsetRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return offsetResponse(req, 0, err)
	}
	if h.BoundaryType != wire.BoundaryUpper {
		off, err := b.eng.OffsetByTime(h.Topic, h.QueueID, h.Timestamp)
		return offsetResponse(req, off, err)
	}
	next, err := b.eng.OffsetByTime(h.Topic, h.QueueID, h.Timestamp+1)
	if err != nil {
		return offsetResponse(req, 0, err)
	}
	first, err := b.eng.MinOffset(h.Topic, h.QueueID)
	return offsetResponse(req, max(next-1, first), err)
}

// offsetResponse answers offset, or err with offset 0 (SUCCESS when the
// queue does not exist).
func offsetResponse(req *wire.Command, offset int64, err error) *wire.Command {
	var resp *wire.Command
	switch {
	case err == nil:
		resp = success(req)
	case errors.Is(err, engine.ErrTopicNotFound), errors.Is(err, engine.ErrInvalidQueue):
		resp, offset = success(req), 0
	default:
		resp, offset = errorResponse(req, err), 0
	}
	resp.EncodeHeader(&wire.OffsetResponseHeader{Offset: offset})
	return resp
}
