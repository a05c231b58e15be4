package registry

import (
	"fmt"
	"time"
)

// ClientID identifies a client instance across connections and protocols:
// the remoting heartbeat's clientID, the gRPC x-mq-client-id header, or
// whatever an embedding program or another front-end chooses. IDs are
// compared as exact strings.
type ClientID string

// Conn is the handle a front-end gives the registry so that it can reach a
// client later (to notify a consumer group, to check a transaction, to
// close an expired client). The registry never calls it beyond RemoteAddr
// and hands it back exactly as given.
//
// Conn values are compared with == and used as map keys, so the dynamic
// type must be comparable; a pointer type is the usual choice.
type Conn interface {
	// RemoteAddr is the peer's address, for display.
	RemoteAddr() string
}

// ConsumeType is how a consumer fetches messages.
type ConsumeType int

// Consume types. ConsumePush is the zero value.
const (
	// ConsumePush: the client keeps pulling the queues it is assigned
	// (remoting CONSUME_PASSIVELY, gRPC PUSH_CONSUMER).
	ConsumePush ConsumeType = iota
	// ConsumePull: the application pulls queues itself (remoting
	// CONSUME_ACTIVELY).
	ConsumePull
	// ConsumeSimple: message-level receive and ack (gRPC SIMPLE_CONSUMER,
	// remoting CONSUME_POP).
	ConsumeSimple
)

var consumeTypeNames = [...]string{"CONSUME_PASSIVELY", "CONSUME_ACTIVELY", "CONSUME_POP"}

// String returns RocketMQ's name for the type: CONSUME_PASSIVELY,
// CONSUME_ACTIVELY or CONSUME_POP.
func (t ConsumeType) String() string {
	if t < 0 || int(t) >= len(consumeTypeNames) {
		return fmt.Sprintf("ConsumeType(%d)", int(t))
	}
	return consumeTypeNames[t]
}

// MessageModel says whether a group shares its messages among its consumers
// or gives each consumer every message.
type MessageModel int

// Message models. Clustering is the zero value.
const (
	// Clustering: each message goes to one consumer of the group.
	Clustering MessageModel = iota
	// Broadcasting: each consumer of the group receives every message.
	Broadcasting
)

// String returns CLUSTERING or BROADCASTING.
func (m MessageModel) String() string {
	switch m {
	case Clustering:
		return "CLUSTERING"
	case Broadcasting:
		return "BROADCASTING"
	}
	return fmt.Sprintf("MessageModel(%d)", int(m))
}

// ConsumeFrom is where a group with no stored offset starts reading.
type ConsumeFrom int

// Start positions. ConsumeFromLastOffset is the zero value.
const (
	ConsumeFromLastOffset ConsumeFrom = iota
	ConsumeFromFirstOffset
	ConsumeFromTimestamp
)

var consumeFromNames = [...]string{"CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"}

// String returns RocketMQ's name: CONSUME_FROM_LAST_OFFSET,
// CONSUME_FROM_FIRST_OFFSET or CONSUME_FROM_TIMESTAMP.
func (f ConsumeFrom) String() string {
	if f < 0 || int(f) >= len(consumeFromNames) {
		return fmt.Sprintf("ConsumeFrom(%d)", int(f))
	}
	return consumeFromNames[f]
}

// ExpressionType is the language of a subscription's filter expression.
type ExpressionType string

// Expression types, spelled as on the wire.
const (
	ExprTag   ExpressionType = "TAG"
	ExprSQL92 ExpressionType = "SQL92"
)

// Subscription is a consumer group's interest in one topic.
type Subscription struct {
	Topic string
	// ExprType is the expression language. Empty reads as ExprTag.
	ExprType ExpressionType
	// Expression filters the topic's messages: "tagA || tagB" or "*" for
	// TAG, a boolean SQL92 expression over properties for SQL92. An empty
	// TAG expression reads as "*".
	Expression string
	// Version orders the subscriptions of a group for the same topic: the
	// highest wins. Clients send the time they subscribed (remoting
	// subVersion). A heartbeat that gives 0 is stamped by the registry with
	// the time the client's expression last changed, so a client that sends
	// no versions still wins when it changes its expression.
	Version int64
}

// Consumer is a client's membership in one consumer group, as a heartbeat
// states it.
type Consumer struct {
	Group         string
	Type          ConsumeType
	Model         MessageModel
	From          ConsumeFrom
	FIFO          bool // the client consumes in order (when the protocol says so)
	Subscriptions []Subscription
}

// Heartbeat is what a client declares about itself. Every heartbeat is a
// full statement: the client belongs to exactly the producer and consumer
// groups it lists, and groups left out are left.
type Heartbeat struct {
	Client ClientID
	// Protocol names the front-end the client came through ("remoting",
	// "grpc", "mqtt", ...). Empty keeps the value of earlier heartbeats.
	Protocol string
	// Language and Version are what the client says it is written in
	// ("JAVA", "GO", "NODE_JS", ...) and its version, as its protocol
	// names them. Empty keeps the values of earlier heartbeats.
	Language, Version string
	// Conn reaches the client. Nil keeps the connection of earlier
	// heartbeats (a gRPC unary heartbeat, say, that arrives beside the
	// client's telemetry stream).
	Conn Conn
	// Producers are the producer groups the client belongs to. Empty names
	// are ignored.
	Producers []string
	// Consumers are the consumer groups the client belongs to. Entries with
	// an empty group are ignored; when a group is listed twice the last
	// entry wins.
	Consumers []Consumer
}

// ClientInfo describes a registered client.
type ClientInfo struct {
	ID            ClientID
	Protocol      string
	Language      string // "" when the client never said
	Version       string
	Conn          Conn // nil when the client never gave one
	LastHeartbeat time.Time
}

// ConsumerInfo describes one client of a consumer group: the client and its
// own membership (settings and subscriptions, sorted by topic, versions as
// the registry holds them).
type ConsumerInfo struct {
	ClientInfo
	Consumer
}

// GroupInfo describes a consumer group. Settings (type, model, start
// position, FIFO) are those of the latest heartbeat from any of its
// clients, as in RocketMQ; Subscriptions are the group's effective
// subscriptions (one per topic, see Registry.Subscription), sorted by topic.
type GroupInfo struct {
	Consumer
	Clients []ClientID // sorted
}

// ChangeKind says what happened in a consumer group.
type ChangeKind int

// Change kinds.
const (
	// Joined: Change.Client became a consumer of the group.
	Joined ChangeKind = iota + 1
	// Left: Change.Client stopped being a consumer of the group (it said
	// so, its connection closed, or it expired).
	Left
	// SubscriptionChanged: the group's subscription to Change.Topic was
	// added, removed, or its expression changed. Change.Client is the client
	// whose heartbeat or departure caused it.
	SubscriptionChanged
	// Resync: a watcher fell behind and changes to the group were dropped;
	// read the group's current state instead. Only Change.Group is set.
	Resync
)

// String returns "joined", "left", "subscription-changed" or "resync".
func (k ChangeKind) String() string {
	switch k {
	case Joined:
		return "joined"
	case Left:
		return "left"
	case SubscriptionChanged:
		return "subscription-changed"
	case Resync:
		return "resync"
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

// Change is one event of a consumer group, delivered by Registry.Watch.
type Change struct {
	Group  string
	Kind   ChangeKind
	Client ClientID
	Topic  string // SubscriptionChanged only
}

func (c Change) String() string {
	s := c.Group + " " + c.Kind.String()
	if c.Client != "" {
		s += " " + string(c.Client)
	}
	if c.Topic != "" {
		s += " topic " + c.Topic
	}
	return s
}

// Queue names one message queue as clients see it.
type Queue struct {
	Topic string
	// Broker is the broker name the client sent; it is part of the queue's
	// identity and is echoed back as given.
	Broker string
	ID     int32
}

func (q Queue) String() string {
	return fmt.Sprintf("%s@%s@%d", q.Topic, q.Broker, q.ID)
}

// compareQueues orders queues by topic, broker name, then id, as RocketMQ
// clients do before they allocate.
func compareQueues(a, b Queue) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	if a.Broker != b.Broker {
		if a.Broker < b.Broker {
			return -1
		}
		return 1
	}
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}
