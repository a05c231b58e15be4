package server

import (
	"fmt"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// ConsumeOptions tune message consumption: receives, their long polling,
// invisible durations and the leases the server renews for auto_renew
// receives. The zero value gives RocketMQ's proxy defaults.
type ConsumeOptions struct {
	// MinInvisible is the shortest invisible_duration a receive without
	// auto_renew may ask for; a shorter one is ILLEGAL_INVISIBLE_TIME.
	// Default 10s.
	MinInvisible time.Duration
	// MinChangeInvisible is the shortest invisible duration
	// ChangeInvisibleDuration applies: shorter requests (push consumers
	// nack with 0 or a few ms) are raised to it, so a failing message
	// does not come straight back. Default 1s.
	MinChangeInvisible time.Duration
	// MaxLongPolling caps how long a receive holds the call while no
	// message is visible. Default 20s.
	MaxLongPolling time.Duration
	// LongPollingReserve is how long before the call's deadline a
	// long-polling receive gives up waiting, to answer in time.
	// Default 500ms.
	LongPollingReserve time.Duration
	// AutoRenewInvisible is the lease of messages received with
	// auto_renew, renewed while the client lives. Default 60s.
	AutoRenewInvisible time.Duration
	// RenewBefore is how long before a lease ends the server renews it.
	// Default 10s.
	RenewBefore time.Duration
	// RenewInterval is how often the server looks for leases to renew;
	// at most RenewBefore/2. Default 1s.
	RenewInterval time.Duration
	// MaxRenew bounds how long renewal keeps one message invisible.
	// Default 3h.
	MaxRenew time.Duration
}

func (o *ConsumeOptions) ensureDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.MinInvisible, 10*time.Second)
	def(&o.MinChangeInvisible, time.Second)
	def(&o.MaxLongPolling, 20*time.Second)
	def(&o.LongPollingReserve, 500*time.Millisecond)
	def(&o.AutoRenewInvisible, 60*time.Second)
	def(&o.RenewBefore, 10*time.Second)
	def(&o.RenewInterval, time.Second)
	def(&o.MaxRenew, 3*time.Hour)
	o.RenewBefore = min(o.RenewBefore, o.AutoRenewInvisible/2)
	o.RenewInterval = max(min(o.RenewInterval, o.RenewBefore/2), time.Millisecond)
}

// maxInvisible is the longest invisible duration the engine accepts.
const maxInvisible = 12 * time.Hour

// consumerGroup returns the consumer group a request names, as stored
// (with its namespace).
func consumerGroup(r *rmqpb.Resource) (string, error) {
	name := convert.ResourceName(r)
	if name == "" {
		return "", fmt.Errorf("%w: the consumer group is required", errIllegalGroup)
	}
	if err := message.ValidateGroup(name); err != nil {
		return "", fmt.Errorf("%w: %w", errIllegalGroup, err)
	}
	return name, nil
}

// consumedTopic returns the topic a consumer request names, as stored
// (with its namespace).
func consumedTopic(r *rmqpb.Resource) (string, error) {
	name := convert.ResourceName(r)
	if name == "" {
		return "", fmt.Errorf("%w: the topic is required", errIllegalTopic)
	}
	if err := message.ValidateTopic(name); err != nil {
		return "", fmt.Errorf("%w: %w", errIllegalTopic, err)
	}
	return name, nil
}

// queueOf returns the topic and queue id of a message queue a pull or an
// offset request names.
func queueOf(mq *rmqpb.MessageQueue) (string, int32, error) {
	if mq == nil {
		return "", 0, badRequest("the message queue is required")
	}
	topic, err := consumedTopic(mq.GetTopic())
	if err != nil {
		return "", 0, err
	}
	if mq.GetId() < 0 {
		return "", 0, fmt.Errorf("%w: queue id %d of topic %s", engine.ErrInvalidQueue, mq.GetId(), topic)
	}
	return topic, mq.GetId(), nil
}

// filterOf returns the engine filter of a subscription expression: a tag
// expression ("*", "a||b") or an SQL92 condition. No expression passes
// every message.
func (s *Server) filterOf(group, topic string, fe *rmqpb.FilterExpression) (engine.Filter, error) {
	if fe == nil {
		return nil, nil
	}
	switch fe.GetType() {
	case rmqpb.FilterType_TAG, rmqpb.FilterType_FILTER_TYPE_UNSPECIFIED:
		return engine.TagFilter(fe.GetExpression())
	case rmqpb.FilterType_SQL:
		if fe.GetExpression() == "" {
			return nil, fmt.Errorf("%w: empty SQL92 expression", errIllegalFilter)
		}
		return s.eng.SQLFilter(group, topic, fe.GetExpression())
	}
	return nil, fmt.Errorf("%w: unknown filter type %d", errIllegalFilter, fe.GetType())
}

// durationOf returns a protocol duration; nil is 0. A malformed or
// negative one is an error wrapping kind.
func durationOf(d *durationpb.Duration, field string, kind error) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if err := d.CheckValid(); err != nil {
		return 0, fmt.Errorf("%w: %s: %w", kind, field, err)
	}
	v := d.AsDuration()
	if v < 0 {
		return 0, fmt.Errorf("%w: %s %s is negative", kind, field, v)
	}
	return v, nil
}
