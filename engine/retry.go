package engine

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// Retries and dead letters of queue-level consumption.
//
// A consumer that fails a message sends it back (SendBack): the broker
// stores a copy under the group's retry topic %RETRY%<group>, scheduled
// after the backoff for its attempt, keeping the message id, keys and
// properties, with the original topic in RETRY_TOPIC and the reconsume
// count raised by one. A message that has used up the group's attempts goes
// to the dead-letter topic %DLQ%<group> instead, which reads like any
// topic; ResendDeadLetter puts a dead letter back on its original topic.

// SendBackOptions tune SendBack.
type SendBackOptions struct {
	// DelayLevel picks the redelivery delay: 0 lets the broker choose from
	// the group's backoff, > 0 names a delay level, < 0 sends the message
	// to the dead-letter topic at once.
	DelayLevel int32
	// MaxAttempts overrides the group's max delivery attempts when > 0.
	MaxAttempts int32
}

// RetryBackoff is the delay before redelivery attempt n+1 of a message
// that failed n times (n ≥ 1): RocketMQ's delay levels 3 and up (10s, 30s,
// 1m, ... 2h), or the group's own table when it has one.
func (e *Engine) RetryBackoff(g meta.Group, failures int32) time.Duration {
	if len(g.RetryBackoff) > 0 {
		return g.RetryBackoff[min(int(max(failures, 1))-1, len(g.RetryBackoff)-1)]
	}
	level := min(int(failures)+2, len(e.opts.DelayLevels))
	return e.opts.DelayLevels[max(level, 1)-1]
}

// SendBack redelivers, after a backoff, the message stored at
// commitLogOffset that a consumer of group failed to consume
// (RocketMQ's CONSUMER_SEND_MSG_BACK).
func (e *Engine) SendBack(ctx context.Context, group string, commitLogOffset int64, o SendBackOptions) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if err := message.ValidateGroup(group); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidGroup, err)
	}
	g, err := e.ensureGroup(group)
	if err != nil {
		return err
	}
	rec, err := e.log.Read(commitLogOffset, nil)
	if err != nil {
		return fmt.Errorf("%w: no message at commit-log offset %d: %w", ErrMessageNotFound, commitLogOffset, err)
	}
	m, _, err := message.DecodeStored(rec)
	if err != nil {
		return fmt.Errorf("%w: record at %d: %w", ErrMessageNotFound, commitLogOffset, err)
	}
	maxAttempts := g.Attempts()
	if o.MaxAttempts > 0 {
		maxAttempts = o.MaxAttempts
	}
	if o.DelayLevel < 0 || m.ReconsumeTimes+1 >= maxAttempts {
		return e.deadLetter(group, rec, m.ReconsumeTimes+1)
	}
	delay := e.RetryBackoff(g, m.ReconsumeTimes+1)
	if o.DelayLevel > 0 {
		delay = e.opts.DelayLevels[min(int(o.DelayLevel), len(e.opts.DelayLevels))-1]
	}
	r := Delivery{Kind: DeliveryRetry, Topic: m.Topic, Queue: m.QueueID, From: m.QueueOffset, To: m.QueueOffset, ID: historyID(m), Attempt: m.ReconsumeTimes + 2, Delay: delay}
	if err := e.retry(group, m, delay); err != nil {
		return err
	}
	clientOf(ctx, &r)
	e.history.add(group, r)
	return nil
}

// retry stores m under group's retry topic, due after delay.
func (e *Engine) retry(group string, m *message.Message, delay time.Duration) error {
	rt := message.RetryTopic(group)
	rq, err := e.systemQueue(rt)
	if err != nil {
		return err
	}
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	if m.Properties[message.PropertyRetryTopic] == "" {
		m.Properties[message.PropertyRetryTopic] = m.Topic
	}
	if m.Properties[message.PropertyOriginMessageID] == "" {
		m.Properties[message.PropertyOriginMessageID] = m.ID()
	}
	delete(m.Properties, message.PropertyDelayLevel)
	delete(m.Properties, propertyTimerSource)
	m.ReconsumeTimes++
	m.Topic = rt
	t, _ := e.topic(rt)
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	return e.schedule(s, t, rq, m, dueAfter(delay))
}

// ResendResult is where ResendDeadLetter put a dead letter back.
type ResendResult struct {
	Topic string // the topic the dead letter came from
	SendResult
}

// ResendDeadLetter puts the dead letter msgID of group back on the topic it
// came from, as a new message with its id, keys and properties and a fresh
// attempt count.
func (e *Engine) ResendDeadLetter(ctx context.Context, group, msgID string) (ResendResult, error) {
	if err := e.checkOpen(); err != nil {
		return ResendResult{}, err
	}
	if err := e.WaitDispatched(ctx); err != nil {
		return ResendResult{}, err
	}
	m, err := e.MessageByIDInTopic(msgID, message.DLQTopic(group))
	if err != nil {
		return ResendResult{}, fmt.Errorf("%w: group %s has no dead letter %s", ErrMessageNotFound, group, msgID)
	}
	origin := m.DeadLetterOrigin()
	for _, k := range []string{message.PropertyDLQOriginTopic, message.PropertyDLQOriginMessageID, message.PropertyRetryTopic, propertyTimerSource} {
		delete(m.Properties, k)
	}
	m.Topic = origin
	m.ReconsumeTimes = 0
	res, err := e.Send(ctx, m)
	return ResendResult{Topic: origin, SendResult: res}, err
}

// ResetOffset moves group's position in every queue of topic to the first
// message stored at or after ts (ms since the epoch), for queue-level and
// message-level consumption alike, and tells subscribers (see Subscribe)
// so front-ends can tell connected consumers. It returns the new offsets.
func (e *Engine) ResetOffset(ctx context.Context, group, topic string, ts int64) (map[int32]int64, error) {
	if err := message.ValidateGroup(group); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidGroup, err)
	}
	t, err := e.topic(topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var moved []*popQueue
	for _, q := range *t.queues.Load() {
		off, err := e.OffsetByTime(topic, q.id, ts)
		if err != nil {
			return nil, err
		}
		if err := e.meta.CommitOffset(group, topic, q.id, off); err != nil {
			return nil, err
		}
		pq, err := e.seekPop(group, q, off)
		if err != nil {
			return nil, err
		}
		if pq != nil {
			moved = append(moved, pq)
		}
		out[q.id] = off
	}
	if err := e.savePops(moved, true); err != nil {
		return nil, err
	}
	e.publish(Event{Kind: EventOffsetReset, Group: group, Topic: topic, Offsets: out})
	t.pops.wakeAll(group)
	return out, nil
}

// BroadcastGroup returns the name under which the engine keeps the offsets
// of one client of a broadcasting group: each client of such a group reads
// every message, so each needs offsets of its own.
func BroadcastGroup(group, clientID string) string {
	h := fnv.New64a()
	h.Write([]byte(clientID))
	return group + "%" + strconv.FormatUint(h.Sum64(), 36)
}
