package broker

import (
	"context"
	"fmt"

	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// getConsumerConnectionList serves GET_CONSUMER_CONNECTION_LIST (203): a
// consumer group's live clients, its settings and its effective
// subscriptions, as Java's ConsumerConnection. Clients of every protocol
// are listed; a group without clients is CONSUMER_NOT_ONLINE.
func (b *Broker) getConsumerConnectionList(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetConsumerConnectionListRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	gi, ok := b.eng.Clients().ConsumerGroup(h.ConsumerGroup)
	if !ok {
		return errorResponse(req, fmt.Errorf("%w: %s", errConsumerOffline, h.ConsumerGroup))
	}
	out := ConsumerConnection{
		ConnectionSet:     []Connection{},
		SubscriptionTable: map[string]wire.SubscriptionData{},
		ConsumeType:       gi.Type.String(),
		MessageModel:      gi.Model.String(),
		ConsumeFromWhere:  gi.From.String(),
	}
	for _, ci := range b.eng.Clients().Consumers(h.ConsumerGroup) {
		out.ConnectionSet = append(out.ConnectionSet, connectionOf(ci.ClientInfo))
	}
	for _, s := range gi.Subscriptions {
		out.SubscriptionTable[s.Topic] = subscriptionDataOf(s)
	}
	return jsonResponse(req, out)
}

// getProducerConnectionList serves GET_PRODUCER_CONNECTION_LIST (204): the
// live clients of a producer group, as Java's ProducerConnection, which
// admin tools show and use to tell whether a transaction can be checked.
// A group without live producers is a SYSTEM_ERROR, as in Java.
func (b *Broker) getProducerConnectionList(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetProducerConnectionListRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	producers := b.eng.Clients().Producers(h.ProducerGroup)
	if len(producers) == 0 {
		return errorResponse(req, fmt.Errorf("%w: %s", errProducerOffline, h.ProducerGroup))
	}
	out := ProducerConnection{ConnectionSet: make([]Connection, 0, len(producers))}
	for _, ci := range producers {
		out.ConnectionSet = append(out.ConnectionSet, connectionOf(ci))
	}
	return jsonResponse(req, out)
}

// connectionOf describes a client's connection.
func connectionOf(ci registry.ClientInfo) Connection {
	conn := Connection{ClientID: string(ci.ID), Language: "OTHER"}
	if ci.Conn != nil {
		conn.ClientAddr = ci.Conn.RemoteAddr()
	}
	if c, ok := ci.Conn.(*server.Conn); ok {
		if v, ok := c.Get(attrLanguage); ok {
			conn.Language = v.(string)
		}
		if v, ok := c.Get(attrVersion); ok {
			conn.Version = v.(int32)
		}
	}
	return conn
}

// subscriptionDataOf describes a subscription as heartbeats carry it.
func subscriptionDataOf(s registry.Subscription) wire.SubscriptionData {
	d := wire.SubscriptionData{
		Topic:          s.Topic,
		SubString:      s.Expression,
		SubVersion:     s.Version,
		ExpressionType: string(s.ExprType),
	}
	if d.ExpressionType == "" {
		d.ExpressionType = wire.ExpressionTag
	}
	if d.SubString == "" {
		d.SubString = "*"
	}
	return d
}
