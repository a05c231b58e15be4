package broker

import (
	"context"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// getTopicStatsInfo serves GET_TOPIC_STATS_INFO (202): the min and max
// offsets of every queue of a topic, counting every message acknowledged
// before the request, and the store time of each queue's newest message.
func (b *Broker) getTopicStatsInfo(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetTopicStatsInfoRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	t, err := b.eng.Topic(h.Topic)
	if err != nil {
		return errorResponse(req, err)
	}
	b.waitIndexed(ctx) // count every message already acknowledged
	stats := TopicStatsTable{OffsetTable: map[wire.MessageQueue]TopicOffset{}}
	for q := range t.Queues() {
		first, err := b.eng.MinOffset(h.Topic, q)
		if err != nil {
			return errorResponse(req, err)
		}
		last, err := b.eng.MaxOffset(h.Topic, q)
		if err != nil {
			return errorResponse(req, err)
		}
		o := TopicOffset{MinOffset: first, MaxOffset: last}
		if last > first {
			// As Java: the store time of the newest message.
			if ts, err := b.eng.StoreTime(h.Topic, q, last-1); err == nil {
				o.LastUpdateTimestamp = ts
			}
		}
		stats.OffsetTable[wire.MessageQueue{Topic: h.Topic, BrokerName: b.opts.BrokerName, QueueID: q}] = o
	}
	return jsonResponse(req, stats)
}
