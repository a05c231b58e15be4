package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Consumer-group administration: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// (200), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201),
// GET_SUBSCRIPTIONGROUP_CONFIG (352) and DELETE_SUBSCRIPTIONGROUP (207),
// translating Java's
// SubscriptionGroupConfig to and from the engine's groups:
//
//	groupName                 Name
//	consumeEnable             !ConsumeDisabled
//	consumeBroadcastEnable    Broadcast
//	consumeMessageOrderly     FIFO (also read from "fifo")
//	retryMaxTimes             MaxAttempts - 1 (a message is delivered once, then retried)
//	groupRetryPolicy          RetryBackoff
//
// The other fields are answered with Java's defaults and ignored on input.
// Creating a group also creates its retry topic.

// maxBackoffSteps bounds the backoff table an exponential policy expands to.
const maxBackoffSteps = 32

func (b *Broker) updateAndCreateSubscriptionGroup(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	cfg := defaultGroupConfig()
	if err := wire.DecodeJSONBody(req.Body, &cfg); err != nil {
		return errorResponse(req, fmt.Errorf("broker: %s: %w", req.RequestCode(), err))
	}
	g, err := groupOf(cfg)
	if err != nil {
		return errorResponse(req, err)
	}
	if err := b.eng.CreateGroup(g); err != nil {
		return errorResponse(req, err)
	}
	// The retry topic is created with the group, so that it is routable
	// before the group's first consumer starts.
	if err := b.ensureTopic(systemTopic(message.RetryTopic(g.Name))); err != nil {
		return errorResponse(req, err)
	}
	return success(req)
}

func (b *Broker) getAllSubscriptionGroupConfig(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	w := SubscriptionGroupWrapper{SubscriptionGroupTable: map[string]SubscriptionGroupConfig{}, DataVersion: nowVersion()}
	for _, g := range b.eng.Groups() {
		w.SubscriptionGroupTable[g.Name] = groupConfigOf(g)
	}
	return jsonResponse(req, w)
}

// getSubscriptionGroupConfig answers one group's configuration, or
// SUBSCRIPTION_GROUP_NOT_EXIST; it never creates the group.
func (b *Broker) getSubscriptionGroupConfig(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GroupRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	g, err := b.eng.Group(h.Group)
	if err != nil {
		return errorResponse(req, err)
	}
	return jsonResponse(req, groupConfigOf(g))
}

func (b *Broker) deleteSubscriptionGroup(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.DeleteSubscriptionGroupRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	if err := b.eng.DeleteGroup(h.GroupName); err != nil {
		return errorResponse(req, err)
	}
	return success(req)
}

// groupOf translates a SubscriptionGroupConfig into an engine group.
func groupOf(cfg SubscriptionGroupConfig) (meta.Group, error) {
	if cfg.RetryMaxTimes < 0 {
		return meta.Group{}, fmt.Errorf("%w: retryMaxTimes %d", errInvalidRequest, cfg.RetryMaxTimes)
	}
	g := meta.Group{
		Name:            cfg.GroupName,
		FIFO:            cfg.ConsumeMessageOrderly || cfg.FIFO,
		Broadcast:       cfg.ConsumeBroadcastEnable,
		MaxAttempts:     cfg.RetryMaxTimes + 1,
		ConsumeDisabled: !cfg.ConsumeEnable,
	}
	if p := cfg.GroupRetryPolicy; p != nil {
		switch {
		case p.Type == RetryPolicyCustomized && p.CustomizedRetryPolicy != nil:
			next := p.CustomizedRetryPolicy.Next
			// Java reads next[n+2] for the delay before redelivery n+1.
			if len(next) > 2 {
				next = next[2:]
			} else if len(next) > 0 {
				next = next[len(next)-1:]
			}
			for _, ms := range next {
				if ms <= 0 {
					return meta.Group{}, fmt.Errorf("%w: retry delay %d ms", errInvalidRequest, ms)
				}
				g.RetryBackoff = append(g.RetryBackoff, time.Duration(ms)*time.Millisecond)
			}
		case p.Type == RetryPolicyExponential && p.ExponentialRetryPolicy != nil:
			e := p.ExponentialRetryPolicy
			if e.Initial <= 0 || e.Max < e.Initial || e.Multiplier < 1 {
				return meta.Group{}, fmt.Errorf("%w: exponential retry policy %+v", errInvalidRequest, *e)
			}
			d := e.Initial
			for range min(g.MaxAttempts, maxBackoffSteps) {
				g.RetryBackoff = append(g.RetryBackoff, time.Duration(d)*time.Millisecond)
				if d > e.Max/e.Multiplier {
					d = e.Max
				} else {
					d = min(d*e.Multiplier, e.Max)
				}
			}
		}
	}
	return g, nil
}

// groupConfigOf translates an engine group into a SubscriptionGroupConfig.
func groupConfigOf(g meta.Group) SubscriptionGroupConfig {
	cfg := defaultGroupConfig()
	cfg.GroupName = g.Name
	cfg.ConsumeEnable = !g.ConsumeDisabled
	cfg.ConsumeBroadcastEnable = g.Broadcast
	cfg.ConsumeMessageOrderly = g.FIFO
	cfg.RetryMaxTimes = g.Attempts() - 1
	if len(g.RetryBackoff) > 0 {
		// Two leading entries stand for the delay levels Java skips.
		next := []int64{g.RetryBackoff[0].Milliseconds(), g.RetryBackoff[0].Milliseconds()}
		for _, d := range g.RetryBackoff {
			next = append(next, d.Milliseconds())
		}
		cfg.GroupRetryPolicy = &GroupRetryPolicy{Type: RetryPolicyCustomized, CustomizedRetryPolicy: &CustomizedRetryPolicy{Next: next}}
	}
	return cfg
}
