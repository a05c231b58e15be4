package namesrv

import (
	"context"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// getAllTopicList answers GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) with
// {"topicList":[...]}.
func (p *Processor) getAllTopicList(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	return jsonResponse(req, wire.TopicListBody{TopicList: p.routes.Topics()})
}

// deleteTopic answers DELETE_TOPIC_IN_NAMESRV (216) with SUCCESS, whether
// or not the topic was known. With clusterName only that cluster's queues
// go.
func (p *Processor) deleteTopic(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h wire.DeleteTopicRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	if p.routes.DeleteTopic(h.Topic, h.ClusterName) {
		p.opts.Logger.Info("topic deleted", "topic", h.Topic, "cluster", h.ClusterName)
	}
	return wire.NewResponse(req, wire.Success, "")
}
