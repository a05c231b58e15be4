package meta

import (
	"fmt"
	"strings"
	"time"
)

// Perm is a topic's permission bit mask, with RocketMQ's values.
type Perm int32

// Permission bits.
const (
	PermInherit Perm = 1
	PermWrite   Perm = 2
	PermRead    Perm = 4
	PermRW           = PermRead | PermWrite
)

// Readable reports whether consumers may read the topic.
func (p Perm) Readable() bool { return p&PermRead != 0 }

// Writable reports whether producers may write the topic.
func (p Perm) Writable() bool { return p&PermWrite != 0 }

// MessageType is the kind of message a topic accepts (RocketMQ 5's
// message.type attribute).
type MessageType int32

// Message types, as RocketMQ's TopicMessageType. A topic created without a
// type is MessageTypeUnspecified (the zero value) and, like MIXED, accepts
// every kind of message.
const (
	MessageTypeUnspecified MessageType = iota
	MessageTypeNormal
	MessageTypeFIFO
	MessageTypeDelay
	MessageTypeTransaction
	MessageTypeMixed
)

var messageTypeNames = [...]string{"UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"}

// String returns the type's RocketMQ name (NORMAL, FIFO, DELAY, TRANSACTION, MIXED).
func (t MessageType) String() string {
	if t < 0 || int(t) >= len(messageTypeNames) {
		return fmt.Sprintf("MessageType(%d)", int32(t))
	}
	return messageTypeNames[t]
}

// ParseMessageType reads a type name, case-insensitively; "" reads as
// UNSPECIFIED.
func ParseMessageType(s string) (MessageType, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if u == "" {
		return MessageTypeUnspecified, nil
	}
	for i, n := range messageTypeNames {
		if n == u {
			return MessageType(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown message type %q (want NORMAL, FIFO, DELAY, TRANSACTION or MIXED)", ErrInvalid, s)
}

// Accepts reports whether a topic of type t takes a message of type m.
func (t MessageType) Accepts(m MessageType) bool {
	return t == MessageTypeUnspecified || t == MessageTypeMixed || t == m
}

// Topic is a topic's configuration.
type Topic struct {
	Name        string
	ReadQueues  int32 // queues consumers read; ids 0..ReadQueues-1
	WriteQueues int32 // queues producers write; ids 0..WriteQueues-1
	Perm        Perm
	MessageType MessageType
	// Attributes are RocketMQ topic attributes (for example
	// "message.type"), kept as given.
	Attributes map[string]string
	// System marks topics the broker creates for itself (retry, dead-letter,
	// half messages, ...).
	System bool
}

// Queues is the number of queue ids in use: the larger of ReadQueues and
// WriteQueues.
func (t Topic) Queues() int32 { return max(t.ReadQueues, t.WriteQueues) }

// Group is a consumer group's configuration.
type Group struct {
	Name string
	// FIFO makes the group consume each message group (and each queue) in
	// order.
	FIFO bool
	// Broadcast makes every consumer of the group receive every message.
	Broadcast bool
	// MaxAttempts is how many times a message is delivered before it goes to
	// the group's dead-letter topic; 0 means the default, 16.
	MaxAttempts int32
	// RetryBackoff overrides the delay before each redelivery; empty means
	// RocketMQ's levels (10s 30s 1m 2m ... 2h).
	RetryBackoff []time.Duration
	// ConsumeDisabled stops the group from consuming.
	ConsumeDisabled bool
}

// DefaultMaxAttempts is the delivery attempts of a group that sets none.
const DefaultMaxAttempts = 16

// Attempts returns MaxAttempts, or DefaultMaxAttempts when unset.
func (g Group) Attempts() int32 {
	if g.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return g.MaxAttempts
}
