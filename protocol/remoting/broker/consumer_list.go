package broker

import (
	"context"
	"fmt"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// getConsumerListByGroup serves GET_CONSUMER_LIST_BY_GROUP (38): the ids
// of the group's live consumers, from every protocol, sorted. Clients
// allocate queues from this list, so it must hold the caller's own id;
// it does as soon as the caller's heartbeat arrived. A group without
// consumers is a SYSTEM_ERROR, as in Java.
func (b *Broker) getConsumerListByGroup(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetConsumerListByGroupRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	ids := b.eng.Clients().ConsumerIDs(h.ConsumerGroup)
	if len(ids) == 0 {
		return errorResponse(req, fmt.Errorf("%w: %s", errNoConsumers, h.ConsumerGroup))
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = string(id)
	}
	body, err := wire.EncodeJSONBody(wire.ConsumerListResponseBody{ConsumerIDList: list})
	if err != nil {
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.Body = body
	return resp
}
