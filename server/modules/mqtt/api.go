package mqtt

import (
	"net/http"

	"github.com/karmanmq/karman/engine/hook"
	mqttserver "github.com/karmanmq/karman/protocol/mqtt/server"
	"github.com/karmanmq/karman/server/console"
)

// Sessions is the answer of GET /api/v1/mqtt/sessions.
type Sessions struct {
	Sessions []Session `json:"sessions"`
}

// Session is an MQTT session, connected or not.
type Session struct {
	ClientID  string `json:"clientId"`
	Connected bool   `json:"connected"`
	// Addr is the connected client's address.
	Addr string `json:"addr,omitempty"`
	// Protocol is the MQTT version of its last connection: "3.1",
	// "3.1.1" or "5.0".
	Protocol string `json:"protocol"`
	// Persistent: kept after the connection ends (3.1.1 clean session
	// 0, 5.0 session expiry above 0); CleanSession is its opposite, as
	// 3.1.1 names it.
	Persistent   bool `json:"persistent"`
	CleanSession bool `json:"cleanSession"`
	// ExpirySeconds is how long a persistent session is kept once
	// disconnected; -1: until its client ends it.
	ExpirySeconds int64 `json:"expirySeconds"`
	// Owner is the user that made it, with authentication.
	Owner string `json:"owner,omitempty"`
	// DisconnectedAt is when its last connection ended (ms since the
	// epoch); 0 while connected.
	DisconnectedAt int64 `json:"disconnectedAt"`
	// Inflight are QoS 1/2 messages sent and not acknowledged; Queued
	// are messages stored for its subscriptions (not the shared ones)
	// and not yet sent.
	Inflight      int            `json:"inflight"`
	Queued        int64          `json:"queued"`
	Subscriptions []Subscription `json:"subscriptions"`
}

// Subscription is one of a session's subscriptions.
type Subscription struct {
	// Filter is as subscribed ("$share/GROUP/FILTER" when shared).
	Filter string `json:"filter"`
	QoS    byte   `json:"qos"`
	// Group is a shared subscription's share name.
	Group             string `json:"group,omitempty"`
	NoLocal           bool   `json:"noLocal"`
	RetainAsPublished bool   `json:"retainAsPublished"`
	RetainHandling    byte   `json:"retainHandling"`
	// ID is the MQTT 5 subscription identifier, 0 when none.
	ID int `json:"subscriptionId"`
	// Queued are messages stored for it and not yet sent (shared: not
	// yet handed to any member of the group).
	Queued int64 `json:"queued"`
}

// Retained is the answer of GET /api/v1/mqtt/retained.
type Retained struct {
	Messages []RetainedMessage `json:"messages"`
}

// RetainedMessage is a retained message, without its payload.
type RetainedMessage struct {
	Topic     string `json:"topic"`
	Size      int    `json:"size"`
	QoS       byte   `json:"qos"`
	Publisher string `json:"publisher,omitempty"`
	// ExpireAt is when it expires (ms since the epoch); 0: never.
	ExpireAt int64 `json:"expireAt"`
}

// APIRoutes adds GET /api/v1/mqtt/sessions and GET /api/v1/mqtt/retained
// to the JSON API. With authentication on, each user sees what is its
// own: the sessions its clients made (their owner is the user) and the
// retained messages whose topics it may subscribe to; a user that may
// List the cluster sees them all.
func (m *Module) APIRoutes() []console.Route {
	return []console.Route{
		{Pattern: "GET " + console.Prefix + "mqtt/sessions", Handle: m.apiSessions},
		{Pattern: "GET " + console.Prefix + "mqtt/retained", Handle: m.apiRetained},
	}
}

// seesAll reports whether the caller of r may see every session and
// retained message: it may List the cluster (or nobody is authenticated).
func seesAll(r *http.Request) bool {
	return console.Authorize(r, hook.ActionList, console.Cluster(r)) == nil
}

// maySubscribe reports whether the caller of r may subscribe to filter.
func maySubscribe(r *http.Request, filter string) bool {
	for _, res := range mqttserver.SubResources(filter) {
		if console.Authorize(r, hook.ActionSub, res) != nil {
			return false
		}
	}
	return true
}

func (m *Module) apiSessions(r *http.Request) (any, error) {
	srv := m.live.Load()
	if srv == nil {
		return nil, console.ErrUnavailable
	}
	all := seesAll(r)
	user, _ := console.Principal(r)
	out := Sessions{Sessions: []Session{}}
	for _, si := range srv.Sessions() {
		if !all && (user.Anonymous() || si.Owner != user.Name) {
			continue
		}
		s := Session{
			ClientID: si.ClientID, Connected: si.Connected, Addr: si.Addr, Protocol: protocolName(si.Version),
			Persistent: si.Persistent, CleanSession: !si.Persistent, ExpirySeconds: int64(si.Expiry), Owner: si.Owner,
			Inflight: si.Inflight, Queued: si.Queued, Subscriptions: []Subscription{},
		}
		if si.Expiry == mqttserver.NeverExpires {
			s.ExpirySeconds = -1
		}
		if !si.Disconnected.IsZero() {
			s.DisconnectedAt = si.Disconnected.UnixMilli()
		}
		for _, sub := range si.Subscriptions {
			s.Subscriptions = append(s.Subscriptions, Subscription{
				Filter: sub.Filter, QoS: sub.QoS, Group: sub.Group, NoLocal: sub.NoLocal, RetainAsPublished: sub.RetainAsPublished,
				RetainHandling: sub.RetainHandling, ID: sub.ID, Queued: sub.Queued,
			})
		}
		out.Sessions = append(out.Sessions, s)
	}
	return out, nil
}

func (m *Module) apiRetained(r *http.Request) (any, error) {
	srv := m.live.Load()
	if srv == nil {
		return nil, console.ErrUnavailable
	}
	all := seesAll(r)
	out := Retained{Messages: []RetainedMessage{}}
	for _, ri := range srv.Retained() {
		if !all && !maySubscribe(r, ri.Topic) {
			continue
		}
		rm := RetainedMessage{Topic: ri.Topic, Size: ri.Size, QoS: ri.QoS, Publisher: ri.Publisher}
		if !ri.ExpireAt.IsZero() {
			rm.ExpireAt = ri.ExpireAt.UnixMilli()
		}
		out.Messages = append(out.Messages, rm)
	}
	return out, nil
}

// protocolName names an MQTT protocol level.
func protocolName(level byte) string {
	switch level {
	case 3:
		return "3.1"
	case 4:
		return "3.1.1"
	case 5:
		return "5.0"
	}
	return "unknown"
}
