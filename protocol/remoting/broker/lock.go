package broker

import (
	"context"
	"fmt"

	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42): queue locks of orderly
// consumers, kept by the engine's client registry. A lock belongs to
// (group, queue) and one client id; the lock answer lists the queues the
// client now holds, which clients read whatever the response code.

func (b *Broker) lockBatchMQ(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var body wire.LockBatchRequestBody
	if err := decodeLockBody(req, &body); err != nil {
		return errorResponse(req, err)
	}
	locked := b.eng.Clients().Lock(body.ConsumerGroup, registry.ClientID(body.ClientID), queuesOf(body.MQSet))
	out := wire.LockBatchResponseBody{LockOKMQSet: make([]wire.MessageQueue, len(locked))}
	for i, q := range locked {
		out.LockOKMQSet[i] = wire.MessageQueue{Topic: q.Topic, BrokerName: q.Broker, QueueID: q.ID}
	}
	data, err := wire.EncodeJSONBody(out)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.Body = data
	return resp
}

func (b *Broker) unlockBatchMQ(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var body wire.LockBatchRequestBody
	if err := decodeLockBody(req, &body); err != nil {
		return errorResponse(req, err)
	}
	b.eng.Clients().Unlock(body.ConsumerGroup, registry.ClientID(body.ClientID), queuesOf(body.MQSet))
	return success(req)
}

func decodeLockBody(req *wire.Command, body *wire.LockBatchRequestBody) error {
	if err := wire.DecodeJSONBody(req.Body, body); err != nil {
		return fmt.Errorf("broker: %s: %w", req.RequestCode(), err)
	}
	if body.ConsumerGroup == "" || body.ClientID == "" {
		return fmt.Errorf("%w: %s needs consumerGroup and clientId", errInvalidRequest, req.RequestCode())
	}
	return nil
}

func queuesOf(mqs []wire.MessageQueue) []registry.Queue {
	qs := make([]registry.Queue, len(mqs))
	for i, q := range mqs {
		qs[i] = registry.Queue{Topic: q.Topic, Broker: q.BrokerName, ID: q.QueueID}
	}
	return qs
}
