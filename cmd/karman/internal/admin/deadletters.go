package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// DefaultDeadLetterMax is how many dead letters DeadLetters returns when
// not told.
const DefaultDeadLetterMax = 1000

// pullBatch is how many messages admin asks for per PULL_MESSAGE.
const pullBatch = 32

// DeadLetter is a message of a consumer group's dead-letter topic.
type DeadLetter struct {
	*Message
	// OriginTopic is the topic it was consumed from, where a resend puts
	// it back: its DLQ_ORIGIN_TOPIC property, else RETRY_TOPIC.
	OriginTopic string `json:"originTopic"`
}

// DeadLetterQuery selects dead letters of a consumer group.
type DeadLetterQuery struct {
	Group string
	// Begin and End bound the store time (when the message was
	// dead-lettered). Zero Begin means the start; zero End means now.
	Begin, End time.Time
	// Max is the most dead letters returned; 0 means DefaultDeadLetterMax.
	Max int
}

// DeadLetters returns the dead letters of a group stored in the query's
// time range, oldest first. It reads every queue of %DLQ%<group> with
// PULL_MESSAGE as the tools group (message.GroupTools), from the offset SEARCH_OFFSET_BY_TIMESTAMP
// gives for Begin, and commits nothing. A group without a dead-letter
// topic has none.
func (c *Client) DeadLetters(ctx context.Context, q DeadLetterQuery) ([]DeadLetter, error) {
	if err := message.ValidateGroup(q.Group); err != nil {
		return nil, invalidName(err)
	}
	max, begin, end, err := queryBounds(q.Max, DefaultDeadLetterMax, q.Begin, q.End)
	if err != nil {
		return nil, err
	}
	q.Max = max
	dlq := message.DLQTopic(q.Group)
	route, err := c.Route(ctx, dlq)
	if errors.Is(err, ErrTopicNotFound) {
		return []DeadLetter{}, nil
	}
	if err != nil {
		return nil, err
	}
	masters, queues := routeMasters(route)
	var all []*Message
	for _, b := range masters {
		qd := queues[b.Name]
		if qd.ReadQueueNums > 0 && qd.Perm&wire.PermRead == 0 {
			return nil, fmt.Errorf("%s is not readable on broker %s (Java brokers before 5.0 create dead-letter topics write-only); make it readable with: karman admin topic update %s --perm rw",
				dlq, b.Name, dlq)
		}
		for id := range qd.ReadQueueNums {
			r := queueRead{c: c, b: b, topic: dlq, queue: id, begin: begin, end: end, max: q.Max}
			ms, err := r.messages(ctx)
			if err != nil {
				return nil, err
			}
			all = append(all, ms...)
		}
	}
	sortByStoreTime(all)
	out := make([]DeadLetter, 0, min(len(all), q.Max))
	for _, m := range all[:min(len(all), q.Max)] {
		out = append(out, DeadLetter{Message: m, OriginTopic: m.stored.DeadLetterOrigin()})
	}
	return out, nil
}

// queueRead reads the messages of one queue stored between begin and end
// (ms since the epoch), at most max of them.
type queueRead struct {
	c          *Client
	b          Broker
	topic      string
	queue      int32
	begin, end int64
	max        int
}

func (r *queueRead) messages(ctx context.Context) ([]*Message, error) {
	t := brokerTarget(r.b)
	from, err := r.c.queueOffset(ctx, t, wire.SearchOffsetByTimestamp,
		&wire.SearchOffsetRequestHeader{Topic: r.topic, QueueID: r.queue, Timestamp: r.begin, BrokerName: r.b.Name})
	if err != nil {
		return nil, err
	}
	to, err := r.c.queueOffset(ctx, t, wire.GetMaxOffset,
		&wire.GetMaxOffsetRequestHeader{Topic: r.topic, QueueID: r.queue, Committed: true, BrokerName: r.b.Name})
	if err != nil {
		return nil, err
	}
	var out []*Message
	for off := from; off < to && len(out) < r.max; {
		msgs, next, err := r.pull(ctx, t, off)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			switch {
			case m.StoreTimestamp < r.begin:
				continue
			case m.StoreTimestamp > r.end || len(out) == r.max:
				return out, nil
			}
			out = append(out, messageOf(m, r.b.Name))
		}
		if next <= off {
			break // the broker has nothing more from off on
		}
		off = next
	}
	return out, nil
}

// pull reads the messages of the queue from offset off with one
// PULL_MESSAGE, and returns them with the offset to read next.
func (r *queueRead) pull(ctx context.Context, t target, off int64) ([]*message.Message, int64, error) {
	h := &wire.PullMessageRequestHeader{
		ConsumerGroup:  message.GroupTools,
		Topic:          r.topic,
		QueueID:        r.queue,
		QueueOffset:    off,
		MaxMsgNums:     pullBatch,
		SysFlag:        wire.PullFlagSubscription,
		Subscription:   "*",
		ExpressionType: "TAG",
		BrokerName:     r.b.Name,
	}
	resp, err := r.c.invoke(ctx, t, request(wire.PullMessage, h, nil))
	switch {
	case err == nil:
	case HasCode(err, wire.PullNotFound):
		return nil, off, nil
	case HasCode(err, wire.PullRetryImmediately, wire.PullOffsetMoved):
		// No message here (filtered out, or off is out of range): go on
		// from where the broker says.
	default:
		return nil, 0, err
	}
	var rh wire.PullMessageResponseHeader
	if herr := resp.DecodeHeader(&rh); herr != nil {
		return nil, 0, fmt.Errorf("%s answered %s without a valid header: %w", t, wire.PullMessage, herr)
	}
	if err != nil {
		return nil, rh.NextBeginOffset, nil
	}
	msgs, err := decodeRecords(resp.Body)
	if err != nil {
		return nil, 0, badBody(t, wire.PullMessage, err)
	}
	return msgs, rh.NextBeginOffset, nil
}
