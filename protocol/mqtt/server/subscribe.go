package server

import (
	"strings"

	"github.com/karmanmq/karman/engine"
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
	// What the SUBACK promises is written in one synced batch before it
	// goes: the session's subscriptions, the offsets new ones start
	// from, and the start of a shared group made now.
	var ops []engine.StateOp
	var added []int // indexes of new subscriptions in p.Subscriptions
	changed := false
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
			changed = true
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
				if op, ok := sub.shared.startOp(); ok {
					ops = append(ops, op)
				}
			} else {
				sub.next = s.queueEnd(queue)
			}
			ss.mu.Lock()
			ss.subs[sub.raw] = sub
			ops = ss.appendOffsetOpsLocked(ops, sub)
			ss.mu.Unlock()
			changed = true
			start = append(start, sub)
			added = append(added, i)
		}
		o := sub.o()
		ack.ReasonCodes[i] = packet.ReasonCode(o.qos)
		if sub.group == "" && (o.rh == 0 || (o.rh == 1 && old == nil)) {
			sendRetained = append(sendRetained, retainedFor{sub})
		}
	}
	if changed && !c.saveSubscriptions(ops) {
		// Not durable: the new subscriptions are refused, not promised.
		for _, sub := range start {
			ss.mu.Lock()
			delete(ss.subs, sub.raw)
			ss.mu.Unlock()
			s.releaseSubscription(ss, sub)
		}
		for _, i := range added {
			ack.ReasonCodes[i] = packet.UnspecifiedError
			if !v5 {
				ack.ReasonCodes[i] = packet.V3SubackFailure
			}
		}
		start, sendRetained = nil, nil
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
	if c.commitReader() != nil || c.write(ack) != nil { // after the answers before it
		return false
	}
	for _, sub := range start {
		c.startSub(sub)
	}
	var out []retainedOut
	for _, r := range sendRetained {
		o := r.sub.o()
		for _, m := range s.retained.matching(r.sub.filter) {
			out = append(out, retainedOut{m, min(m.QoS, o.qos), o.subID})
		}
		if strings.HasPrefix(r.sub.filter, "$SYS") {
			for _, m := range s.sysMessages() {
				if matchFilter(r.sub.filter, m.Topic) {
					out = append(out, retainedOut{m, 0, o.subID})
				}
			}
		}
	}
	if len(out) > 0 {
		c.deliverRetained(out)
	}
	return true
}

// saveSubscriptions writes the session's record with ops, synced, when
// the session persists; false when the write failed.
func (c *conn) saveSubscriptions(ops []engine.StateOp) bool {
	ss := c.ss
	ss.mu.Lock()
	persist := ss.persist.Load()
	if persist {
		ops = append(ops, ss.recordOpLocked())
	}
	ss.mu.Unlock()
	apply := c.s.st.ApplySync
	if !persist {
		apply = c.s.st.Apply // a shared group's start, for its other members
	}
	if err := apply(ops...); err != nil {
		c.s.log.Warn("mqtt: save subscriptions", "client", ss.id, "err", err)
		return false
	}
	return true
}

// dropSub ends the subscription raw of ss, c's session, as an
// UNSUBSCRIBE does; false when the session has none. A persistent
// session's record is synced before it returns: gone for good once
// UNSUBACK says so (the done marks a crash leaves are dropped at the
// next load).
func (c *conn) dropSub(ss *session, raw string) bool {
	s := c.s
	ss.mu.Lock()
	sub := ss.subs[raw]
	delete(ss.subs, raw)
	persist := ss.persist.Load()
	var ops []engine.StateOp
	if sub != nil && persist {
		ops = append(ops, ss.recordOpLocked(), engine.StateOp{Key: offKey(ss.id, raw), Delete: true})
	}
	ss.mu.Unlock()
	if sub == nil {
		return false
	}
	c.stopSub(raw)
	s.releaseSubscription(ss, sub)
	if persist {
		if err := s.st.ApplySync(ops...); err != nil {
			s.log.Warn("mqtt: save unsubscribe", "client", ss.id, "err", err)
		}
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
	return c.commitReader() == nil && c.write(ack) == nil // after the answers before it
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
