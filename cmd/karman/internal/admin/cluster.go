package admin

import (
	"context"
	"slices"
	"strings"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Broker is one broker process: a master (ID 0) or a replica.
type Broker struct {
	Cluster string `json:"cluster"`
	Name    string `json:"brokerName"`
	ID      int64  `json:"brokerId"`
	Addr    string `json:"address"`
}

// IsMaster reports whether b is its group's master.
func (b Broker) IsMaster() bool { return b.ID == wire.MasterID }

// clusterInfo is the body of GET_BROKER_CLUSTER_INFO (Java ClusterInfo).
type clusterInfo struct {
	BrokerAddrTable  map[string]wire.BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string        `json:"clusterAddrTable"`
}

// Brokers lists every broker the name servers know, sorted by cluster,
// broker name and id.
func (c *Client) Brokers(ctx context.Context) ([]Broker, error) {
	resp, ns, err := c.namesrvInvoke(ctx, wire.GetBrokerClusterInfo, nil)
	if err != nil {
		return nil, err
	}
	var ci clusterInfo
	if len(resp.Body) > 0 {
		if err := decodeBody(ns, wire.GetBrokerClusterInfo, resp.Body, &ci); err != nil {
			return nil, err
		}
	}
	clusterOf := map[string]string{}
	for cluster, names := range ci.ClusterAddrTable {
		for _, n := range names {
			clusterOf[n] = cluster
		}
	}
	var out []Broker
	for name, bd := range ci.BrokerAddrTable {
		cluster := bd.Cluster
		if cluster == "" {
			cluster = clusterOf[name]
		}
		if bd.BrokerName != "" {
			name = bd.BrokerName
		}
		for id, addr := range bd.BrokerAddrs {
			out = append(out, Broker{Cluster: cluster, Name: name, ID: id, Addr: addr})
		}
	}
	slices.SortFunc(out, func(a, b Broker) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.ID - b.ID)
	})
	return out, nil
}

// masters returns the masters of cluster (of every cluster when cluster
// is empty), failing with ErrNoBroker when there is none.
func (c *Client) masters(ctx context.Context, cluster string) ([]Broker, error) {
	all, err := c.Brokers(ctx)
	if err != nil {
		return nil, err
	}
	var out []Broker
	clusters := map[string]bool{}
	for _, b := range all {
		clusters[b.Cluster] = true
		if b.IsMaster() && (cluster == "" || b.Cluster == cluster) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		if cluster != "" && !clusters[cluster] {
			return nil, errorf(ErrNoBroker, "no cluster %q: the name servers know %s", cluster, listOrNone(sortedKeys(clusters)))
		}
		if cluster != "" {
			return nil, errorf(ErrNoBroker, "cluster %q has no broker master", cluster)
		}
		return nil, errorf(ErrNoBroker, "the name servers know no broker master")
	}
	return out, nil
}

// clusterMasters returns the masters a cluster-wide change goes to: those
// of cluster, or of the only cluster when cluster is empty. With several
// clusters and none chosen it fails, so that a change never lands on a
// cluster by accident.
func (c *Client) clusterMasters(ctx context.Context, cluster string) ([]Broker, error) {
	ms, err := c.masters(ctx, cluster)
	if err != nil || cluster != "" {
		return ms, err
	}
	names := map[string]bool{}
	for _, b := range ms {
		names[b.Cluster] = true
	}
	if len(names) > 1 {
		return nil, invalidf("the name servers know several clusters (%s): choose one with --cluster", strings.Join(sortedKeys(names), ", "))
	}
	return ms, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
