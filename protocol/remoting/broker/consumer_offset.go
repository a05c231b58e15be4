package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// QUERY_CONSUMER_OFFSET (14) and UPDATE_CONSUMER_OFFSET (15): a consumer
// group's committed position in a queue, the next offset to consume.

// queryConsumerOffset answers the group's committed offset. Without one
// it copies Java: a queue that still holds its first message (its min
// offset is 0) answers offset 0, so a new group reads a young topic from
// the start whatever its consume-from setting; otherwise, or when the
// request says setZeroIfNotFound=false, QUERY_NOT_FOUND, and the client
// falls back to its consume-from setting.
func (b *Broker) queryConsumerOffset(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.QueryConsumerOffsetRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	off, err := b.eng.ConsumerOffset(h.ConsumerGroup, h.Topic, h.QueueID)
	if errors.Is(err, engine.ErrNoOffset) {
		first, merr := b.eng.MinOffset(h.Topic, h.QueueID)
		if !h.SetZeroIfNotFound || merr != nil || first > 0 {
			return errorResponse(req, fmt.Errorf("%w: group %s has no offset in %s/%d", engine.ErrNoOffset, h.ConsumerGroup, h.Topic, h.QueueID))
		}
		off, err = 0, nil
	}
	if err != nil {
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.EncodeHeader(&wire.OffsetResponseHeader{Offset: off})
	return resp
}

// updateConsumerOffset stores the group's offset. The Go client sends it
// every 5 s per queue and ignores the answer.
func (b *Broker) updateConsumerOffset(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.UpdateConsumerOffsetRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	if err := b.eng.CommitOffset(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset); err != nil {
		return errorResponse(req, err)
	}
	return success(req)
}
