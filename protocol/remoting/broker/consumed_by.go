package broker

import (
	"context"
	"slices"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// queryTopicConsumeByWho serves QUERY_TOPIC_CONSUME_BY_WHO (300): the
// groups that consume a topic, as Java answers it: those with an online
// consumer subscribed to it and those that committed offsets in it.
func (b *Broker) queryTopicConsumeByWho(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.TopicRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	committed, err := b.eng.GroupsConsuming(h.Topic)
	if err != nil {
		return errorResponse(req, err)
	}
	groups := append(b.eng.Clients().ConsumerGroupsOf(h.Topic), committed...)
	slices.Sort(groups)
	return jsonResponse(req, wire.GroupListBody{GroupList: slices.Compact(groups)})
}

// queryTopicsByConsumer serves QUERY_TOPICS_BY_CONSUMER (343): the topics
// in which a group committed offsets, with this broker's address.
func (b *Broker) queryTopicsByConsumer(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GroupRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	topics, err := b.eng.TopicsConsumedBy(h.Group)
	if err != nil {
		return errorResponse(req, err)
	}
	return jsonResponse(req, wire.TopicListBody{TopicList: topics, BrokerAddr: b.opts.Addr})
}
