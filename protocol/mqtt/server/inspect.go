package server

import (
	"cmp"
	"slices"
	"time"
)

// NeverExpires is SessionInfo.Expiry of a session kept until its client
// ends it.
const NeverExpires = neverExpires

// SessionInfo describes a session for operators (Server.Sessions).
type SessionInfo struct {
	ClientID string
	// Connected: a connection holds the session; Addr is its client's.
	Connected bool
	Addr      string
	// Version is the MQTT protocol level of its last connection: 3
	// (3.1), 4 (3.1.1) or 5.
	Version byte
	// Persistent: the session outlives its connection (3.1.1: clean
	// session 0; 5.0: a session expiry above 0).
	Persistent bool
	// Expiry is how long, in seconds, a persistent session is kept after
	// its connection ends; NeverExpires for ever.
	Expiry uint32
	// Owner is the principal that made the session, "" without
	// authentication.
	Owner string
	// Disconnected is when its last connection ended; zero while
	// connected.
	Disconnected time.Time
	// Inflight are QoS 1 and 2 messages sent and not acknowledged.
	Inflight int
	// Queued are messages stored for its non-shared subscriptions and not
	// yet sent.
	Queued        int64
	Subscriptions []SubscriptionInfo
}

// SubscriptionInfo is one subscription of a session.
type SubscriptionInfo struct {
	// Filter is as subscribed: "$share/GROUP/FILTER" for a shared one.
	Filter string
	QoS    byte
	// Group is the share name of a shared subscription, "" otherwise.
	Group             string
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte
	// ID is the MQTT 5 subscription identifier, 0 when none.
	ID int
	// Queued are messages stored for the subscription and not yet sent
	// (of a shared one: not yet handed to any member of its group).
	Queued int64
}

// RetainedInfo describes a retained message (Server.Retained).
type RetainedInfo struct {
	Topic string
	Size  int // payload bytes
	QoS   byte
	// Publisher is the client id that published it, "" when unknown.
	Publisher string
	// ExpireAt is when it expires; zero: never.
	ExpireAt time.Time
}

// Sessions returns the sessions held, connected or not, by client id. It
// takes each session's lock briefly, one at a time, and reads queue ends
// from the engine: it is for operators, not for the message path.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	type pending struct {
		info  *SubscriptionInfo
		queue string
		next  int64
		group *sharedGroup
	}
	out := make([]SessionInfo, 0, len(all))
	var ends []pending
	for _, ss := range all {
		ss.mu.Lock()
		si := SessionInfo{
			ClientID: ss.id, Connected: ss.conn != nil, Version: ss.version, Persistent: ss.persist.Load(),
			Expiry: ss.expiry, Owner: ss.owner, Disconnected: ss.gone, Inflight: len(ss.out),
		}
		if ss.conn != nil {
			si.Addr = ss.conn.addr.String()
		}
		for _, sub := range ss.subs {
			o := sub.o()
			si.Subscriptions = append(si.Subscriptions, SubscriptionInfo{
				Filter: sub.raw, QoS: o.qos, Group: sub.group, NoLocal: o.noLocal, RetainAsPublished: o.rap,
				RetainHandling: o.rh, ID: o.subID,
			})
		}
		slices.SortFunc(si.Subscriptions, func(a, b SubscriptionInfo) int { return cmp.Compare(a.Filter, b.Filter) })
		out = append(out, si)
		// Queue positions, matched to the sorted subscriptions.
		for i := range si.Subscriptions {
			sub := ss.subs[si.Subscriptions[i].Filter]
			if sub == nil {
				continue
			}
			ends = append(ends, pending{queue: sub.queue, next: sub.next, group: sub.shared})
			ends[len(ends)-1].info = &out[len(out)-1].Subscriptions[i]
		}
		ss.mu.Unlock()
	}
	for _, p := range ends {
		next := p.next
		if p.group != nil {
			p.group.mu.Lock()
			next = p.group.next
			p.group.mu.Unlock()
		}
		end, err := s.e.MaxOffset(p.queue, 0)
		if err == nil && end > next {
			p.info.Queued = end - next
		}
	}
	for i := range out {
		for _, sub := range out[i].Subscriptions {
			if sub.Group == "" {
				out[i].Queued += sub.Queued
			}
		}
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return cmp.Compare(a.ClientID, b.ClientID) })
	return out
}

// Retained returns the retained messages that have not expired, by
// topic.
func (s *Server) Retained() []RetainedInfo {
	now := time.Now()
	s.retained.mu.RLock()
	out := make([]RetainedInfo, 0, len(s.retained.msgs))
	for t, m := range s.retained.msgs {
		if !m.ExpireAt.IsZero() && !now.Before(m.ExpireAt) {
			continue
		}
		out = append(out, RetainedInfo{Topic: t, Size: len(m.Payload), QoS: m.QoS, Publisher: m.Publisher, ExpireAt: m.ExpireAt})
	}
	s.retained.mu.RUnlock()
	slices.SortFunc(out, func(a, b RetainedInfo) int { return cmp.Compare(a.Topic, b.Topic) })
	return out
}
