package namesrv

import (
	"maps"

	routetable "github.com/karmanmq/karman/cluster/namesrv"
	remoting "github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// routes lets the remoting processors use the cluster route table: the
// two packages do not know each other, so their types meet here.
type routes struct{ t *routetable.Table }

var _ remoting.Routes = routes{}

func (r routes) Register(reg remoting.Registration) (remoting.RegisterResult, error) {
	topics := make([]routetable.TopicConfig, len(reg.Topics))
	for i, t := range reg.Topics {
		topics[i] = routetable.TopicConfig{
			Name:        t.TopicName,
			ReadQueues:  t.ReadQueueNums,
			WriteQueues: t.WriteQueueNums,
			Perm:        t.Perm,
			SysFlag:     t.TopicSysFlag,
			Order:       t.Order,
		}
	}
	res, err := r.t.Register(routetable.BrokerRegistration{
		Cluster:            reg.Cluster,
		BrokerName:         reg.BrokerName,
		BrokerID:           reg.BrokerID,
		Addr:               reg.Addr,
		HAAddr:             reg.HAAddr,
		ZoneName:           reg.ZoneName,
		EnableActingMaster: reg.EnableActingMaster,
		Timeout:            reg.Timeout,
		DataVersion:        routetable.DataVersion(reg.DataVersion),
		Topics:             topics,
		Partial:            reg.Partial,
	})
	return remoting.RegisterResult{MasterAddr: res.MasterAddr, MasterHAAddr: res.MasterHAAddr}, err
}

func (r routes) Unregister(cluster, brokerName, addr string, brokerID int64) bool {
	return r.t.Unregister(cluster, brokerName, addr, brokerID)
}

func (r routes) Route(topic string) (wire.TopicRouteData, bool) {
	rt, ok := r.t.Route(topic)
	if !ok {
		return wire.TopicRouteData{}, false
	}
	rd := wire.TopicRouteData{
		QueueDatas:  make([]wire.QueueData, len(rt.Queues)),
		BrokerDatas: make([]wire.BrokerData, len(rt.Brokers)),
	}
	for i, q := range rt.Queues {
		rd.QueueDatas[i] = wire.QueueData{
			BrokerName:     q.BrokerName,
			ReadQueueNums:  q.ReadQueues,
			WriteQueueNums: q.WriteQueues,
			Perm:           q.Perm,
			TopicSysFlag:   q.SysFlag,
		}
	}
	for i, b := range rt.Brokers {
		rd.BrokerDatas[i] = brokerData(b)
	}
	return rd, true
}

func brokerData(b routetable.BrokerData) wire.BrokerData {
	return wire.BrokerData{
		Cluster:            b.Cluster,
		BrokerName:         b.BrokerName,
		BrokerAddrs:        wire.BrokerAddrs(maps.Clone(b.Addrs)),
		ZoneName:           b.ZoneName,
		EnableActingMaster: b.EnableActingMaster,
	}
}

func (r routes) ClusterInfo() remoting.ClusterInfo {
	ci := r.t.ClusterInfo()
	out := remoting.ClusterInfo{
		BrokerAddrTable:  make(map[string]wire.BrokerData, len(ci.Brokers)),
		ClusterAddrTable: ci.Clusters,
	}
	for name, b := range ci.Brokers {
		out.BrokerAddrTable[name] = brokerData(b)
	}
	return out
}

func (r routes) Topics() []string { return r.t.Topics() }

func (r routes) TopicsByCluster(cluster string) []string { return r.t.TopicsByCluster(cluster) }

func (r routes) DeleteTopic(topic, cluster string) bool {
	if cluster == "" {
		return r.t.DeleteTopic(topic)
	}
	return r.t.DeleteTopicInCluster(topic, cluster)
}

// The KV store needs no adapter.
var _ remoting.KVConfig = (*routetable.KV)(nil)

func (r routes) WipeWritePerm(brokerName string) int { return r.t.WipeWritePerm(brokerName) }

func (r routes) AddWritePerm(brokerName string) int { return r.t.AddWritePerm(brokerName) }
