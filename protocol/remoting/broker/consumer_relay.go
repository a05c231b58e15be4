package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Requests an administration tool asks the broker to pass on to one
// consumer, whose answer the broker passes back, as Java's broker does:
//
//	GET_CONSUMER_RUNNING_INFO (307)  the client's settings, subscriptions,
//	                                 per-queue state and rates (JSON)
//	CONSUME_MESSAGE_DIRECTLY (309)   the client consumes one stored message
//	                                 now (msgId, an offset message id; the
//	                                 broker attaches the stored record) and
//	                                 says how it went (JSON)
//
// The consumer must be connected to this broker over remoting. An offline
// consumer is SYSTEM_ERROR, one that does not answer within
// Options.ClientCallTimeout CONSUME_MSG_TIMEOUT, as in Java. The client's
// answer, whatever its code, is the answer.

func (b *Broker) getConsumerRunningInfo(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetConsumerRunningInfoRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	fwd := wire.NewRequest(wire.GetConsumerRunningInfo, nil)
	fwd.EncodeHeader(&h)
	return b.callConsumer(ctx, req, fwd, h.ConsumerGroup, h.ClientID)
}

func (b *Broker) consumeMessageDirectly(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.ConsumeMessageDirectlyRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	_, offset, err := message.ParseOffsetID(h.MsgID)
	if err != nil {
		return errorResponse(req, fmt.Errorf("%w: msgId %q: %w", errInvalidRequest, h.MsgID, err))
	}
	body, err := b.storedRecord(offset)
	if err != nil {
		return errorResponse(req, err)
	}
	h.BrokerName = b.opts.BrokerName
	fwd := wire.NewRequest(wire.ConsumeMessageDirectly, nil)
	fwd.EncodeHeader(&h)
	fwd.Body = body
	return b.callConsumer(ctx, req, fwd, h.ConsumerGroup, h.ClientID)
}

// callConsumer sends fwd to the consumer clientID of group and answers req
// with the consumer's answer.
func (b *Broker) callConsumer(ctx context.Context, req, fwd *wire.Command, group, clientID string) *wire.Command {
	conn := b.consumerConn(group, clientID)
	if conn == nil {
		return errorResponse(req, fmt.Errorf("%w: consumer %s of group %s is not connected to this broker", errClientOffline, clientID, group))
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.ClientCallTimeout)
	defer cancel()
	got, err := conn.Invoke(ctx, fwd)
	switch {
	case errors.Is(err, peer.ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
		return wire.NewResponse(req, wire.ConsumeMsgTimeout,
			fmt.Sprintf("consumer %s of group %s did not answer %s within %s", clientID, group, fwd.RequestCode(), b.opts.ClientCallTimeout))
	case err != nil:
		return errorResponse(req, fmt.Errorf("broker: ask consumer %s of group %s: %w", clientID, group, err))
	}
	resp := wire.NewResponse(req, got.ResponseCode(), got.Remark)
	resp.ExtFields = got.ExtFields
	resp.Body = got.Body
	return resp
}

// consumerConn returns the remoting connection of consumer clientID of
// group, or nil.
func (b *Broker) consumerConn(group, clientID string) *server.Conn {
	for _, ci := range b.eng.Clients().Consumers(group) {
		if ci.ID != registry.ClientID(clientID) || ci.Protocol != Protocol {
			continue
		}
		if c, ok := ci.Conn.(*server.Conn); ok {
			return c
		}
	}
	return nil
}
