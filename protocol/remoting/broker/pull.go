package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// PULL_MESSAGE (11), and LITE_PULL_MESSAGE (361), which Java's lite pull
// consumer sends (with the LITE_PULL flag) and Java's broker serves alike.
//
// The answer depends on where queueOffset falls in the queue [min, max):
//
//	messages found at offset                 SUCCESS, body = stored records, next = past the last scanned
//	messages scanned, none matched           PULL_RETRY_IMMEDIATELY, next = past the scanned ones
//	offset == max (caught up, empty queue)   PULL_NOT_FOUND after the long poll, next = offset
//	offset > max (also: empty queue, ≠ 0)    PULL_OFFSET_MOVED, next = max
//	offset < min                             PULL_OFFSET_MOVED, next = min
//
// With the SUSPEND flag a caught-up pull is held until a matching message
// arrives in the queue, for at most suspendTimeoutMillis (capped by
// Options.MaxSuspend); the engine's WaitForArrival wakes it, nothing
// polls. Messages that arrive while it is held but do not match are
// skipped, and the answer's nextBeginOffset moves past them.
//
// The COMMIT_OFFSET flag stores commitOffset for the group first. The
// SUBSCRIPTION flag makes the request's subscription and expressionType
// the filter; without it the group's subscription from its heartbeats
// is used, and a group that never subscribed the topic gets
// SUBSCRIPTION_NOT_EXIST. A pull for maxMsgNums ≤ 0 answers at most one
// message, as Java does.

func (b *Broker) pullMessage(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.PullMessageRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	if b.hooked {
		clientGroup(ctx, h.ConsumerGroup) // the group of the engine's delivery hooks
	} else {
		// The group the engine counts the delivery under (Stats), and
		// the consumer its delivery history names.
		cl := &hook.Client{Protocol: Protocol, Group: h.ConsumerGroup, Addr: bornHost(c)}
		if id, ok := c.Get(attrClientID); ok {
			cl.ID, _ = id.(string)
		}
		ctx = hook.NewContext(ctx, cl)
	}
	batch := pullBatch(h.MaxMsgNums)
	g, err := b.group(ctx, h.ConsumerGroup)
	if err != nil {
		return errorResponse(req, err)
	}
	if g.ConsumeDisabled {
		return errorResponse(req, fmt.Errorf("%w: %s", errGroupDisabled, g.Name))
	}
	f, err := b.pullFilter(&h)
	if err != nil {
		return errorResponse(req, err)
	}
	if h.SysFlag&wire.PullFlagCommitOffset != 0 {
		if err := b.eng.CommitOffset(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset); err != nil {
			b.opts.Logger.Debug("pull: commit offset", "group", h.ConsumerGroup, "topic", h.Topic, "queue", h.QueueID, "offset", h.CommitOffset, "err", err)
		}
	}

	var deadline time.Time
	if h.SysFlag&wire.PullFlagSuspend != 0 && h.SuspendTimeoutMillis > 0 {
		deadline = time.Now().Add(min(time.Duration(h.SuspendTimeoutMillis)*time.Millisecond, time.Duration(b.maxSuspend.Load())))
	}
	offset := h.QueueOffset
	for waited := false; ; waited = true {
		res, err := b.eng.Pull(ctx, h.Topic, h.QueueID, offset, batch, f)
		if err != nil {
			var re *engine.OffsetRangeError
			if errors.As(err, &re) {
				next := re.Max
				if re.Offset < re.Min {
					next = re.Min
				}
				return pullResponse(req, wire.PullOffsetMoved, next, re.Min, re.Max)
			}
			return errorResponse(req, err)
		}
		switch {
		case len(res.Records) > 0:
			resp := pullResponse(req, wire.Success, res.NextOffset, res.MinOffset, res.MaxOffset)
			// The records go out from the engine's buffer, which the
			// connection hands back once they are written.
			resp.Body = res.Bytes()
			resp.BodyDone = res.Release
			return resp
		case res.NextOffset > offset && !waited:
			res.Release()
			return pullResponse(req, wire.PullRetryImmediately, res.NextOffset, res.MinOffset, res.MaxOffset)
		}
		res.Release()
		offset = res.NextOffset
		if deadline.IsZero() || !time.Now().Before(deadline) {
			return pullResponse(req, wire.PullNotFound, offset, res.MinOffset, res.MaxOffset)
		}
		if err := b.waitForArrival(ctx, deadline, h.Topic, h.QueueID, offset); err != nil {
			if ctx.Err() != nil {
				return nil // the connection is gone
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				return errorResponse(req, err)
			}
			// Timed out, or the broker is closing: answer with what the
			// queue holds now.
			return pullResponse(req, wire.PullNotFound, offset, res.MinOffset, max(res.MaxOffset, offset))
		}
	}
}

// pullBatch is how many messages a pull asking for maxMsgNums may
// answer. Java fills a batch until it is full but always takes the first
// message, so a pull asking for none or fewer gets one: the Go pull
// consumer asks for 0 when WithPullBatchSize was not given.
func pullBatch(maxMsgNums int32) int {
	return int(max(min(maxMsgNums, engine.MaxPullMessages), 1))
}

// waitForArrival waits until (topic, queue) holds a message at offset,
// until deadline, or until the broker closes.
func (b *Broker) waitForArrival(ctx context.Context, deadline time.Time, topic string, queue int32, offset int64) error {
	server.Detach(ctx)
	b.held.Add(1)
	defer b.held.Add(-1)
	if hook := b.testHookHold.Load(); hook != nil {
		(*hook)()
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	stop := context.AfterFunc(b.ctx, cancel)
	defer stop()
	return b.eng.WaitForArrival(wctx, topic, queue, offset)
}

// pullFilter returns the filter of a pull: the request's own subscription
// when it carries one, else the group's.
func (b *Broker) pullFilter(h *wire.PullMessageRequestHeader) (engine.Filter, error) {
	if h.SysFlag&wire.PullFlagSubscription != 0 {
		return b.filterFor(h.ConsumerGroup, h.Topic, h.ExpressionType, h.Subscription)
	}
	sub, ok := b.eng.Clients().Subscription(h.ConsumerGroup, h.Topic)
	if !ok {
		return nil, fmt.Errorf("%w: group %s, topic %s", errSubscriptionMissing, h.ConsumerGroup, h.Topic)
	}
	if h.SubVersion > sub.Version {
		return nil, fmt.Errorf("%w: group %s, topic %s: version %d, the broker has %d", errSubscriptionOld, h.ConsumerGroup, h.Topic, h.SubVersion, sub.Version)
	}
	return b.filterFor(h.ConsumerGroup, h.Topic, string(sub.ExprType), sub.Expression)
}

func pullResponse(req *wire.Command, code wire.ResponseCode, next, min, max int64) *wire.Command {
	resp := wire.NewResponse(req, code, "")
	resp.SetHeader(&wire.PullMessageResponseHeader{NextBeginOffset: next, MinOffset: min, MaxOffset: max})
	return resp
}
