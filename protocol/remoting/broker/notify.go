package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Requests the broker sends to clients.
//
// NOTIFY_CONSUMER_IDS_CHANGED (40) goes to every remoting consumer of a
// group whose members or subscriptions changed (the registry's Watch,
// which sees clients of every protocol), so they rebalance at once rather
// than at their next 20 s rebalance. RESET_CONSUMER_CLIENT_OFFSET (220)
// goes to the consumers of a group whose offsets the engine reset, with
// the new offsets. Both are sent oneway: clients do not answer them.

// notifyTimeout bounds queueing one notification to a client.
const notifyTimeout = 3 * time.Second

// notifyLoop notifies the consumers of every changed group. Changes that
// arrive together are coalesced: each group is notified once per burst.
func (b *Broker) notifyLoop(changes <-chan registry.Change) {
	pending := map[string]struct{}{}
	for ch := range changes {
		pending[ch.Group] = struct{}{}
	drain:
		for {
			select {
			case ch, ok := <-changes:
				if !ok {
					break drain
				}
				pending[ch.Group] = struct{}{}
			default:
				break drain
			}
		}
		for group := range pending {
			b.notifyConsumers(group)
			delete(pending, group)
		}
	}
}

// notifyConsumers sends NOTIFY_CONSUMER_IDS_CHANGED to the group's
// remoting consumers.
func (b *Broker) notifyConsumers(group string) {
	req := wire.NewRequest(wire.NotifyConsumerIdsChanged, nil)
	req.EncodeHeader(&wire.NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: group})
	b.sendToConsumers(group, req)
}

// eventLoop passes engine events on to clients.
func (b *Broker) eventLoop(events <-chan engine.Event) {
	for ev := range events {
		switch ev.Kind {
		case engine.EventTopicCreated:
			b.noteTopic(ev.Topic)
			continue
		case engine.EventTopicDeleted:
			b.forgetTopic(ev.Topic)
			continue
		case engine.EventOffsetReset:
		default:
			continue
		}
		body, err := resetOffsetBody(b.opts.BrokerName, ev.Topic, ev.Offsets)
		if err != nil {
			b.opts.Logger.Error("encode offset reset", "group", ev.Group, "topic", ev.Topic, "err", err)
			continue
		}
		req := wire.NewRequest(wire.ResetConsumerClientOffset, nil)
		req.EncodeHeader(&wire.ResetOffsetRequestHeader{Topic: ev.Topic, Group: ev.Group, Timestamp: time.Now().UnixMilli()})
		req.Body = body
		b.sendToConsumers(ev.Group, req)
	}
}

// sendToConsumers sends req oneway to every remoting consumer of group.
func (b *Broker) sendToConsumers(group string, req *wire.Command) {
	for _, ci := range b.eng.Clients().Consumers(group) {
		c, ok := ci.Conn.(*server.Conn)
		if !ok || ci.Protocol != Protocol {
			continue
		}
		ctx, cancel := context.WithTimeout(b.ctx, notifyTimeout)
		err := c.InvokeOneway(ctx, req)
		cancel()
		if err != nil {
			b.opts.Logger.Debug("notify consumer", "group", group, "client", string(ci.ID), "code", strconv.Itoa(int(req.Code)), "err", err)
		}
	}
}
