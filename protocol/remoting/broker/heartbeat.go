package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// HEART_BEAT (34) and UNREGISTER_CLIENT (35).
//
// A heartbeat is a client's full statement of its producer and consumer
// groups; it goes to the engine's client registry with the connection, so
// the broker can reach the client later (group change notifications,
// offset resets, transaction checks). For every consumer group the broker
// makes sure the group exists (when Options.AutoCreateGroups allows) and
// that its retry topic %RETRY%<group> exists, with one queue, so the name
// servers route it. Clients are forgotten when their connection closes
// (OnClose) or when they stop heartbeating (the engine expires them).

// Connection attributes set at heartbeat time.
const (
	attrLanguage = "broker.language"
	attrVersion  = "broker.version"
)

func (b *Broker) heartbeat(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var hb wire.HeartbeatData
	if err := wire.DecodeJSONBody(req.Body, &hb); err != nil {
		return errorResponse(req, fmt.Errorf("broker: %s: %w", req.RequestCode(), err))
	}
	if hb.ClientID == "" {
		return errorResponse(req, fmt.Errorf("%w: heartbeat without clientID", errInvalidRequest))
	}
	c.Set(attrLanguage, req.Language.String())
	c.Set(attrClientID, hb.ClientID)
	c.Set(attrVersion, req.Version)

	beat := registry.Heartbeat{
		Client:    registry.ClientID(hb.ClientID),
		Protocol:  Protocol,
		Language:  req.Language.String(),
		Version:   wire.VersionName(req.Version),
		Conn:      c,
		Producers: make([]string, 0, len(hb.ProducerDataSet)),
		Consumers: make([]registry.Consumer, 0, len(hb.ConsumerDataSet)),
	}
	for _, p := range hb.ProducerDataSet {
		beat.Producers = append(beat.Producers, p.GroupName)
	}
	for _, cd := range hb.ConsumerDataSet {
		if cd.GroupName == "" {
			continue
		}
		if err := b.prepareGroup(ctx, cd.GroupName); err != nil {
			// Still register the client: its pulls and offset requests
			// get the error that explains it.
			b.opts.Logger.Warn("heartbeat: consumer group not ready", "group", cd.GroupName, "client", hb.ClientID, "err", err)
		}
		beat.Consumers = append(beat.Consumers, consumerOf(cd))
	}
	b.eng.Clients().Heartbeat(beat)
	return success(req)
}

// prepareGroup makes a consumer group and its retry topic exist.
func (b *Broker) prepareGroup(ctx context.Context, group string) error {
	if err := message.ValidateGroup(group); err != nil {
		return err
	}
	if _, err := b.group(ctx, group); err != nil {
		return err
	}
	return b.ensureTopic(systemTopic(message.RetryTopic(group)))
}

// consumerOf translates a heartbeat's consumer data.
func consumerOf(cd wire.ConsumerData) registry.Consumer {
	c := registry.Consumer{
		Group:         cd.GroupName,
		Subscriptions: make([]registry.Subscription, 0, len(cd.SubscriptionDataSet)),
	}
	switch cd.ConsumeType {
	case wire.ConsumeActively:
		c.Type = registry.ConsumePull
	case wire.ConsumePop:
		c.Type = registry.ConsumeSimple
	}
	if strings.EqualFold(cd.MessageModel, wire.Broadcasting) {
		c.Model = registry.Broadcasting
	}
	switch cd.ConsumeFromWhere {
	case wire.ConsumeFromFirstOffset:
		c.From = registry.ConsumeFromFirstOffset
	case wire.ConsumeFromTimestamp:
		c.From = registry.ConsumeFromTimestamp
	}
	for _, s := range cd.SubscriptionDataSet {
		if s.Topic == "" {
			continue
		}
		exprType := registry.ExprTag
		if strings.EqualFold(s.ExpressionType, wire.ExpressionSQL92) {
			exprType = registry.ExprSQL92
		}
		c.Subscriptions = append(c.Subscriptions, registry.Subscription{
			Topic:      s.Topic,
			ExprType:   exprType,
			Expression: s.SubString,
			Version:    s.SubVersion,
		})
	}
	return c
}

// unregisterClient serves UNREGISTER_CLIENT, which Java clients send when
// a producer or consumer shuts down.
func (b *Broker) unregisterClient(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.UnregisterClientRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	b.eng.Clients().Unregister(registry.ClientID(h.ClientID), h.ProducerGroup, h.ConsumerGroup)
	return success(req)
}
