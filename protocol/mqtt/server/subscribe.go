package server

import (
	"strings"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/topic"
)

// newSubscription parses a raw filter ("$share/group/filter" or a
// filter) with its options.
func (s *Server) newSubscription(raw string, qos byte, noLocal, rap bool, rh byte, subID int) (*subscription, error) {
	sub := &subscription{raw: raw, filter: raw, committed: -1}
	sub.opts.Store(&subOpts{qos: min(qos, 2), noLocal: noLocal, rap: rap, rh: rh, subID: subID})
	if topic.IsShared(raw) {
		group, filter, err := topic.ParseShared(raw)
		if err != nil {
			return nil, err
		}
		sub.group, sub.filter = group, filter
	} else if err := topic.ValidFilter(raw); err != nil {
		return nil, err
	}
	return sub, nil
}

// authorizeSub checks that c's principal may subscribe to filter: Sub
// on the MQTT filter, then on the RocketMQ topic its first level names,
// or on every topic for a wildcard first level.
func (c *conn) authorizeSub(hooks *hook.Set, filter string) error {
	if len(hooks.Authorizers) == 0 {
		return nil
	}
	for _, res := range SubResources(filter) {
		if err := hooks.Authorize(c.hookCtx, c.principal, hook.ActionSub, res); err != nil {
			return err
		}
	}
	return nil
}

func (c *conn) handleSubscribe(p *packet.Subscribe) bool {
	s, ss, v5 := c.s, c.ss, c.version == packet.Version5
	ack := &packet.Suback{PacketID: p.PacketID, ReasonCodes: make([]packet.ReasonCode, len(p.Subscriptions))}
	subID := 0
	if ids := p.Properties.SubscriptionIdentifiers; len(ids) > 0 {
		subID = ids[0]
	}
	type retainedFor struct {
		sub *subscription
	}
	var sendRetained []retainedFor
	var start []*subscription
	hooks := s.e.Hooks()
	for i, o := range p.Subscriptions {
		fail := packet.ReasonCode(packet.V3SubackFailure)
		sub, err := s.newSubscription(o.Filter, o.QoS, o.NoLocal, o.RetainAsPublished, o.RetainHandling, subID)
		if err != nil {
			if v5 {
				fail = packet.TopicFilterInvalid
			}
			ack.ReasonCodes[i] = fail
			continue
		}
		if sub.group != "" && sub.o().noLocal {
			c.disconnect(packet.ProtocolError, "no local on a shared subscription")
			return false
		}
		if err := c.authorizeSub(hooks, sub.filter); err != nil {
			if v5 {
				fail = packet.NotAuthorized
			}
			ack.ReasonCodes[i] = fail
			continue
		}
		ss.mu.Lock()
		old := ss.subs[sub.raw]
		if old != nil {
			// The same filter again: new options, nothing lost.
			old.opts.Store(sub.o())
			sub = old
			ss.saveLocked()
			ss.mu.Unlock()
		} else {
			ss.mu.Unlock()
			queue, err := s.router.Add(sub.filter)
			if err != nil {
				s.log.Warn("mqtt: subscribe", "client", ss.id, "filter", sub.raw, "err", err)
				ack.ReasonCodes[i] = packet.UnspecifiedError
				if !v5 {
					ack.ReasonCodes[i] = packet.V3SubackFailure
				}
				continue
			}
			sub.queue = queue
			if sub.group != "" {
				sub.shared = s.sharedGroup(sub.group, sub.filter, queue)
			} else {
				sub.next = s.queueEnd(queue)
			}
			ss.mu.Lock()
			ss.subs[sub.raw] = sub
			err = ss.saveLocked()
			if err == nil {
				err = ss.saveOffsetLocked(sub)
			}
			ss.mu.Unlock()
			if err != nil {
				s.log.Warn("mqtt: save subscription", "client", ss.id, "err", err)
			}
			start = append(start, sub)
		}
		o := sub.o()
		ack.ReasonCodes[i] = packet.ReasonCode(o.qos)
		if sub.group == "" && (o.rh == 0 || (o.rh == 1 && old == nil)) {
			sendRetained = append(sendRetained, retainedFor{sub})
		}
	}
	if v5 && c.problemInfo {
		for _, code := range ack.ReasonCodes {
			switch code {
			case packet.TopicFilterInvalid:
				ack.Properties.ReasonString = "a topic filter is not valid"
			case packet.NotAuthorized:
				ack.Properties.ReasonString = "not authorized to subscribe to a topic filter"
			}
		}
	}
	if c.write(ack) != nil {
		return false
	}
	for _, sub := range start {
		c.startSub(sub)
	}
	for _, r := range sendRetained {
		for _, m := range s.retained.matching(r.sub.filter) {
			c.deliverMessage(m, min(m.QoS, r.sub.o().qos), r.sub.o().subID)
		}
		if strings.HasPrefix(r.sub.filter, "$SYS") {
			for _, m := range s.sysMessages() {
				if matchFilter(r.sub.filter, m.Topic) {
					c.deliverMessage(m, 0, r.sub.o().subID)
				}
			}
		}
	}
	return true
}

// dropSub ends the subscription raw of ss, c's session, as an
// UNSUBSCRIBE does; false when the session has none.
func (c *conn) dropSub(ss *session, raw string) bool {
	s := c.s
	ss.mu.Lock()
	sub := ss.subs[raw]
	delete(ss.subs, raw)
	if sub != nil {
		ss.saveLocked()
	}
	persist := ss.persist.Load()
	ss.mu.Unlock()
	if sub == nil {
		return false
	}
	c.stopSub(raw)
	s.releaseSubscription(ss, sub)
	if persist {
		s.st.Delete(offKey(ss.id, raw))
		s.st.DeletePrefix("d/" + subKey(ss.id) + raw + "\x00")
	}
	return true
}

func (c *conn) handleUnsubscribe(p *packet.Unsubscribe) bool {
	ack := &packet.Unsuback{PacketID: p.PacketID}
	for _, f := range p.Filters {
		code := packet.Success
		if !c.dropSub(c.ss, f) {
			code = packet.NoSubscriptionExisted
		}
		if c.version == packet.Version5 {
			ack.ReasonCodes = append(ack.ReasonCodes, code)
		}
	}
	return c.write(ack) == nil
}

// SubResources returns what a subscription to filter (without a
// $share/GROUP/ prefix) is authorized on, in order: the MQTT filter as
// written, then the RocketMQ topic its first level maps to, or every
// topic when the first level is a wildcard. A Sub on each must be
// allowed.
func SubResources(filter string) []hook.Resource {
	out := []hook.Resource{hook.MQTT(filter)}
	switch first, _, _ := strings.Cut(filter, "/"); {
	case first == "+" || first == "#":
		// It reads from every topic.
		out = append(out, hook.AllTopics)
	case message.ValidateUserTopic(first) == nil:
		out = append(out, hook.Topic(first))
	}
	return out
}
