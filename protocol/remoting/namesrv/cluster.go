package namesrv

import (
	"context"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// getClusterInfo answers GET_BROKER_CLUSTER_INFO (106) with the
// ClusterInfo JSON.
func (p *Processor) getClusterInfo(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	return jsonResponse(req, p.routes.ClusterInfo())
}

// getTopicsByCluster answers GET_TOPICS_BY_CLUSTER (224) with a TopicList
// body: the topics some broker of the cluster serves (none for an unknown
// cluster).
func (p *Processor) getTopicsByCluster(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h GetTopicsByClusterRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	return jsonResponse(req, wire.TopicListBody{TopicList: p.routes.TopicsByCluster(h.Cluster)})
}
