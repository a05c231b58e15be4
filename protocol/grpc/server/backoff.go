package server

import (
	"errors"
	"slices"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
)

// Redelivery back-off of consumer groups.
//
// A consumer group's back-off is the delay before each redelivery of a
// message its consumers failed: the group's own table (meta.Group's
// RetryBackoff, set from an exponential or customized retry policy) when
// it has one, else defaultBackoff, from 1 s doubling up to a minute.
//
// Push consumers learn it from the retry policy in their settings
// (telemetry.go) and nack a message they failed with
// ChangeInvisibleDuration, asking for the policy's delay for its delivery
// attempt. The Node.js client (1.0.8) reads the policy's durations in
// whole seconds and sends the delay as milliseconds, a thousandth of it;
// so the server itself keeps a message a push consumer nacked invisible
// for at least the group's delay for the attempt (invisible.go), which is
// what Java clients ask for.
//
// RocketMQ 5 clients take exponential policies only (the Node.js client
// implements no other), so a group's table is told as the exponential
// policy that fits it: its first delay, multiplied by the ratio of its
// first two, up to its longest. A table built from an exponential policy
// is told exactly.

// defaultBackoff is the back-off of a group without a table of its own.
var defaultBackoff = backoff{initial: time.Second, ceiling: time.Minute, multiplier: 2}

// backoff is an exponential back-off: initial after the first failed
// delivery, then multiplier times longer after each, up to ceiling.
type backoff struct {
	initial, ceiling time.Duration
	multiplier       float64
}

// delay is the back-off after delivery attempt (1 for the first) failed.
func (b backoff) delay(attempt int32) time.Duration {
	d := float64(b.initial)
	for range max(attempt, 1) - 1 {
		if d *= b.multiplier; d >= float64(b.ceiling) {
			return b.ceiling
		}
	}
	return min(time.Duration(d), b.ceiling)
}

// policy is the retry policy of attempts tries that clients are told.
func (b backoff) policy(attempts int32) *rmqpb.RetryPolicy {
	return exponentialBackoff(attempts, b.initial, b.ceiling, float32(b.multiplier))
}

// groupBackoff is the exponential back-off that clients of g are told.
func groupBackoff(g meta.Group) backoff {
	t := g.RetryBackoff
	if len(t) == 0 {
		return defaultBackoff
	}
	b := backoff{initial: t[0], ceiling: slices.Max(t), multiplier: 1}
	if len(t) > 1 && t[1] > t[0] {
		b.multiplier = float64(t[1]) / float64(t[0])
	}
	return b
}

// redeliveryDelay is how long g waits before redelivering a message whose
// delivery attempt failed: its table's entry, or the default back-off.
func redeliveryDelay(g meta.Group, attempt int32) time.Duration {
	if t := g.RetryBackoff; len(t) > 0 {
		return t[min(int(max(attempt, 1)), len(t))-1]
	}
	return defaultBackoff.delay(attempt)
}

// isPushConsumer reports whether sess is a push consumer's, whose changes
// of invisible duration are nacks.
func isPushConsumer(sess *session.Session) bool {
	return sess != nil && sess.Settings().GetClientType() == rmqpb.ClientType_PUSH_CONSUMER
}

// nackDelay is how long the message handle names (in flight to group)
// stays invisible when a push consumer nacks it: the group's delay for
// its delivery attempt.
func (s *Server) nackDelay(group, handle string) (time.Duration, error) {
	attempt, err := s.eng.DeliveryAttempt(group, handle)
	if err != nil {
		return 0, err
	}
	g, err := s.eng.Group(group)
	if err != nil && !errors.Is(err, engine.ErrGroupNotFound) {
		return 0, err
	}
	return redeliveryDelay(g, attempt), nil
}
