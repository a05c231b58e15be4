package broker

import (
	"context"
	"errors"
	"slices"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// getConsumeStats serves GET_CONSUME_STATS (208): for every queue of the
// topic (or, without a topic, of every topic the group subscribes plus
// its retry topic and every topic it has committed offsets in, as Java
// brokers answer) the queue's max offset and the group's committed
// offset; their difference is the group's lag.
func (b *Broker) getConsumeStats(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetConsumeStatsRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	topics := []string{h.Topic}
	if h.Topic == "" {
		topics = b.consumedTopics(h.ConsumerGroup)
	}
	stats := ConsumeStats{OffsetTable: map[wire.MessageQueue]OffsetWrapper{}}
	for _, topic := range topics {
		t, err := b.eng.Topic(topic)
		if err != nil {
			if h.Topic == "" && errors.Is(err, engine.ErrTopicNotFound) {
				continue
			}
			return errorResponse(req, err)
		}
		committed, err := b.eng.ConsumerOffsets(h.ConsumerGroup, topic)
		if err != nil && !errors.Is(err, engine.ErrNoOffset) {
			return errorResponse(req, err)
		}
		for q := range t.ReadQueues {
			end, err := b.eng.MaxOffset(topic, q)
			if err != nil {
				return errorResponse(req, err)
			}
			off := committed[q]
			stats.OffsetTable[wire.MessageQueue{Topic: topic, BrokerName: b.opts.BrokerName, QueueID: q}] = OffsetWrapper{
				BrokerOffset:   end,
				ConsumerOffset: off,
				PullOffset:     off,
			}
		}
	}
	return jsonResponse(req, stats)
}

// consumedTopics returns the topics a group subscribes or has committed
// offsets in, with its retry topic, sorted.
func (b *Broker) consumedTopics(group string) []string {
	topics := []string{message.RetryTopic(group)}
	if committed, err := b.eng.TopicsConsumedBy(group); err == nil {
		for _, t := range committed {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	if gi, ok := b.eng.Clients().ConsumerGroup(group); ok {
		for _, s := range gi.Subscriptions {
			if !slices.Contains(topics, s.Topic) {
				topics = append(topics, s.Topic)
			}
		}
	}
	slices.Sort(topics)
	return topics
}
