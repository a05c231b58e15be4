package namesrv

import (
	"context"
	"maps"
	"slices"

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

// getSystemTopicList answers GET_SYSTEM_TOPIC_LIST_FROM_NS (304) as Java
// name servers do: every cluster name and every broker name (a broker
// serves a topic named after itself and one after its cluster), sorted,
// with the address of one broker's master.
func (p *Processor) getSystemTopicList(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	info := p.routes.ClusterInfo()
	var topics []string
	for cluster, brokers := range info.ClusterAddrTable {
		topics = append(topics, cluster)
		topics = append(topics, brokers...)
	}
	slices.Sort(topics)
	body := wire.TopicListBody{TopicList: slices.Compact(topics)}
	names := slices.Sorted(maps.Keys(info.BrokerAddrTable))
	for _, name := range names {
		if addr, ok := info.BrokerAddrTable[name].BrokerAddrs[wire.MasterID]; ok {
			body.BrokerAddr = addr
			break
		}
	}
	return jsonResponse(req, body)
}
