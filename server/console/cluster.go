package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/karmanmq/karman/cluster/ha"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// How long GET /cluster keeps its answer, and how long it waits for a
// name server and for each broker. Brokers are asked in parallel, so a
// refresh takes at most nameServerTimeout*len(name servers) +
// brokerTimeout; a broker that does not answer within brokerTimeout is
// marked so.
const (
	clusterTTL        = 3 * time.Second
	nameServerTimeout = time.Second
	brokerTimeout     = 500 * time.Millisecond
)

// ClusterView is the answer of GET /cluster: the broker groups of this
// node's cluster as the name servers it registers with know them.
type ClusterView struct {
	Cluster string `json:"cluster"`
	// Source is "namesrv" when the groups come from the name servers,
	// "self" when this broker is shown alone: it registers with no name
	// server, or none answered (Error says why).
	Source      string        `json:"source"`
	NameServers []string      `json:"nameServers"`
	Error       string        `json:"error,omitempty"`
	Groups      []BrokerGroup `json:"groups"`
	At          int64         `json:"at"` // ms since the epoch, when the view was taken
}

// BrokerGroup is a broker name with its master and replicas.
type BrokerGroup struct {
	Name    string        `json:"name"`
	Brokers []BrokerState `json:"brokers"`
}

// BrokerState is one broker of a group, with what its runtime
// information (GET_BROKER_RUNTIME_INFO) says of its replication.
type BrokerState struct {
	ID   int64  `json:"id"`
	Addr string `json:"addr"`
	// Self marks this node.
	Self bool `json:"self"`
	// Role is the broker's replication role when it says ("master",
	// "replica"), else what its id at the name servers means ("master"
	// for id 0, "replica" otherwise).
	Role string `json:"role"`
	// Reachable is false when the broker did not answer in time; Error
	// says what went wrong and the replication fields are absent.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Version   string `json:"version,omitempty"`
	// Epoch is the group's master epoch as the broker knows it; InSync
	// the in-sync set by broker id; LagBytes a replica's distance behind
	// its master; ReplicaLagBytes each replica's distance as a master
	// sees it; Master a replica's master (its replication address).
	Epoch           *int64           `json:"epoch,omitempty"`
	InSync          []string         `json:"inSync,omitempty"`
	LagBytes        *int64           `json:"lagBytes,omitempty"`
	ReplicaLagBytes map[string]int64 `json:"replicaLagBytes,omitempty"`
	Master          string           `json:"master,omitempty"`
}

// clusterCache holds the last view, so that a page polling every few
// seconds asks the name servers and brokers at most once per clusterTTL.
type clusterCache struct {
	mu   sync.Mutex // held during a refresh: concurrent callers wait for it
	view *ClusterView
	at   time.Time
}

func (a *API) cluster(r *request) (any, error) {
	c := &a.clusterCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.view != nil && time.Since(c.at) < clusterTTL {
		return c.view, nil
	}
	// Not the caller's context: the view is kept for the next callers
	// even when this one goes away.
	v := a.clusterView(context.WithoutCancel(r.Context()))
	c.view, c.at = v, time.Now()
	return v, nil
}

// clusterView asks the name servers for this cluster's broker groups and
// each broker for its runtime information.
func (a *API) clusterView(ctx context.Context) *ClusterView {
	self, bound := "", ""
	if a.o.Addrs != nil {
		if b, ok := a.o.Addrs()["broker"]; ok {
			self, bound = dialableAddr(b), b
		}
	}
	v := &ClusterView{Cluster: a.o.Cluster, Source: "self", NameServers: []string{}, Groups: []BrokerGroup{}, At: time.Now().UnixMilli()}
	if a.o.NameServers != nil {
		for _, ns := range a.o.NameServers() {
			v.NameServers = append(v.NameServers, dialableAddr(ns))
		}
	}
	var groups []BrokerGroup
	if len(v.NameServers) > 0 {
		g, err := clusterGroups(ctx, v.NameServers, a.o.Cluster)
		if err != nil {
			v.Error = err.Error()
		} else {
			v.Source, groups = "namesrv", g
		}
	}
	if v.Source == "self" {
		groups = []BrokerGroup{{Name: a.o.Broker, Brokers: []BrokerState{{Addr: self}}}}
		if self == "" {
			groups[0].Brokers[0].Error = "no remoting broker runs on this node"
		}
	}
	var wg sync.WaitGroup
	for gi := range groups {
		for bi := range groups[gi].Brokers {
			b := &groups[gi].Brokers[bi]
			b.Self = groups[gi].Name == a.o.Broker && isLocal(b.Addr, bound)
			if b.Addr == "" {
				continue
			}
			wg.Go(func() { b.fill(ctx) })
		}
	}
	wg.Wait()
	for gi := range groups {
		for bi := range groups[gi].Brokers {
			b := &groups[gi].Brokers[bi]
			if b.Role == "" {
				b.Role = "replica"
				if b.ID == wire.MasterID {
					b.Role = "master"
				}
				if v.Source == "self" && a.o.Role != nil {
					if r := a.o.Role(); r != "" {
						b.Role = r
					}
				}
			}
		}
	}
	v.Groups = groups
	return v
}

// dialableAddr turns a listener's address into one to dial: an
// unspecified or missing host becomes the loopback.
func dialableAddr(a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return a
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// isLocal reports whether addr, as the name servers know a broker, is
// the broker listening on bound: the same address, or, for a listener on
// every interface, its port on one of this host's addresses (a broker
// registers the address it advertises, not the one it binds).
func isLocal(addr, bound string) bool {
	if addr == "" || bound == "" {
		return false
	}
	if addr == bound || addr == dialableAddr(bound) {
		return true
	}
	host, port, err := net.SplitHostPort(addr)
	bhost, bport, berr := net.SplitHostPort(bound)
	if err != nil || berr != nil || port != bport {
		return false
	}
	if ip := net.ParseIP(bhost); bhost != "" && (ip == nil || !ip.IsUnspecified()) {
		return false // bound to one address, which addr is not
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range ifs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// clusterInfo is the body of GET_BROKER_CLUSTER_INFO (Java ClusterInfo).
type clusterInfo struct {
	BrokerAddrTable  map[string]wire.BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string        `json:"clusterAddrTable"`
}

var errNoNameServer = errors.New("no name server answered")

// clusterGroups asks the name servers in turn for the broker groups of
// cluster, sorted by name, each with its brokers by id.
func clusterGroups(ctx context.Context, nameServers []string, cluster string) ([]BrokerGroup, error) {
	var errs []error
	for _, ns := range nameServers {
		resp, err := invokeOnce(ctx, ns, nameServerTimeout, wire.NewRequest(wire.GetBrokerClusterInfo, nil))
		if err == nil && resp.ResponseCode() != wire.Success {
			err = fmt.Errorf("answered %s: %s", resp.ResponseCode(), resp.Remark)
		}
		var ci clusterInfo
		if err == nil && len(resp.Body) > 0 {
			err = wire.DecodeJSONBody(resp.Body, &ci)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("name server %s: %w", ns, err))
			continue
		}
		var groups []BrokerGroup
		for _, name := range ci.ClusterAddrTable[cluster] {
			bd, ok := ci.BrokerAddrTable[name]
			if !ok {
				continue
			}
			g := BrokerGroup{Name: name}
			for id, addr := range bd.BrokerAddrs {
				g.Brokers = append(g.Brokers, BrokerState{ID: id, Addr: addr})
			}
			slices.SortFunc(g.Brokers, func(a, b BrokerState) int { return int(a.ID - b.ID) })
			groups = append(groups, g)
		}
		slices.SortFunc(groups, func(a, b BrokerGroup) int { return strings.Compare(a.Name, b.Name) })
		return groups, nil
	}
	return nil, fmt.Errorf("%w: %w", errNoNameServer, errors.Join(errs...))
}

// fill asks the broker for its runtime information and sets what it
// says of its replication; a broker that does not answer is marked
// unreachable.
func (b *BrokerState) fill(ctx context.Context) {
	resp, err := invokeOnce(ctx, b.Addr, brokerTimeout, wire.NewRequest(wire.GetBrokerRuntimeInfo, nil))
	if err == nil && resp.ResponseCode() != wire.Success {
		// It answered, so it is up, but says nothing of itself (a
		// signature required, say).
		b.Reachable, b.Error = true, fmt.Sprintf("runtime information refused: %s %s", resp.ResponseCode(), resp.Remark)
		return
	}
	var kv wire.KVTable
	if err == nil {
		err = wire.DecodeJSONBody(resp.Body, &kv)
	}
	if err != nil {
		b.Error = err.Error()
		return
	}
	b.Reachable = true
	tab := kv.Table
	b.Version = tab["brokerVersionDesc"]
	b.Role = tab[ha.InfoRole]
	if s, ok := tab[ha.InfoMasterEpoch]; ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			b.Epoch = &n
		}
	}
	if s := tab[ha.InfoInSync]; s != "" {
		b.InSync = strings.Split(s, ",")
	}
	if s, ok := tab[ha.InfoLag]; ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			b.LagBytes = &n
		}
	}
	if s := tab[ha.InfoReplicaLag]; s != "" {
		var m map[string]int64
		if json.Unmarshal([]byte(s), &m) == nil && len(m) > 0 {
			b.ReplicaLagBytes = m
		}
	}
	b.Master = tab[ha.InfoMaster]
}

// invokeOnce dials addr, sends req and closes the connection, all within
// timeout. The view is refreshed at most once per clusterTTL, so a kept
// connection would save little and need closing when the server stops.
func invokeOnce(ctx context.Context, addr string, timeout time.Duration, req *wire.Command) (*wire.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := peer.Dial(ctx, addr, peer.Options{DialTimeout: timeout, RequestTimeout: timeout})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Invoke(ctx, req)
}
