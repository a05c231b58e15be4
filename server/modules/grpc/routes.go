package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/server"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// InfoEndpoint is the key of the gRPC endpoint in the remoting broker's
// runtime information (GET_BROKER_RUNTIME_INFO), where the gRPC
// front-ends of other broker groups find it.
const InfoEndpoint = "grpcEndpoint"

// How long a topic's route and a broker's gRPC endpoint are kept before
// they are asked again.
const (
	routeTTL    = 3 * time.Second
	endpointTTL = 30 * time.Second
	callTimeout = 3 * time.Second
)

// clusterRoutes answers server.Options.Groups: the broker groups besides
// this one that serve a topic, from the name servers' route, with each
// master's gRPC endpoint, which that broker names in its runtime
// information (else its host with this front-end's port, as RocketMQ's
// proxy assumes in local mode).
type clusterRoutes struct {
	nameServers []string
	self        string // this broker group's name
	port        string // this front-end's advertised port
	log         *slog.Logger

	mu        sync.Mutex
	routes    map[string]cachedRoute
	endpoints map[string]cachedEndpoint
	peers     map[string]*peer.Peer
	next      int // the name server to ask first
	closed    bool
}

type cachedRoute struct {
	at     time.Time
	groups []server.GroupRoute
}

type cachedEndpoint struct {
	at       time.Time
	endpoint string
}

func newClusterRoutes(nameServers []string, self, advertise string, log *slog.Logger) *clusterRoutes {
	_, port, _ := net.SplitHostPort(advertise)
	return &clusterRoutes{nameServers: nameServers, self: self, port: port, log: log,
		routes: map[string]cachedRoute{}, endpoints: map[string]cachedEndpoint{}, peers: map[string]*peer.Peer{}}
}

// Groups returns the other groups serving topic; none when the name
// servers do not answer (the route then holds this group alone).
func (c *clusterRoutes) Groups(ctx context.Context, topic string) []server.GroupRoute {
	c.mu.Lock()
	r, ok := c.routes[topic]
	c.mu.Unlock()
	if ok && time.Since(r.at) < routeTTL {
		return r.groups
	}
	route, err := c.route(ctx, topic)
	if err != nil {
		if !errors.Is(err, errNoRoute) {
			c.log.Warn("grpc: the name servers' route of a topic", "topic", topic, "err", err)
		}
		// Kept like an answer, so that name servers that are down
		// delay one route query per topic and interval, not each.
		c.remember(topic, nil)
		return nil
	}
	masters := map[string]string{}
	for _, b := range route.BrokerDatas {
		if a, ok := b.BrokerAddrs[wire.MasterID]; ok {
			masters[b.BrokerName] = a
		}
	}
	var groups []server.GroupRoute
	for _, q := range route.QueueDatas {
		addr, ok := masters[q.BrokerName]
		if q.BrokerName == c.self || !ok {
			continue // this group is answered from the engine; a group without a master takes no sends
		}
		groups = append(groups, server.GroupRoute{BrokerName: q.BrokerName, ReadQueues: q.ReadQueueNums, WriteQueues: q.WriteQueueNums,
			Perm: meta.Perm(q.Perm), Endpoint: c.endpoint(ctx, addr)})
	}
	c.remember(topic, groups)
	return groups
}

// remember caches the groups of topic for routeTTL.
func (c *clusterRoutes) remember(topic string, groups []server.GroupRoute) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routes[topic] = cachedRoute{at: time.Now(), groups: groups}
	if len(c.routes) > 10000 { // bound the cache: forget every expired route
		for t, r := range c.routes {
			if time.Since(r.at) >= routeTTL {
				delete(c.routes, t)
			}
		}
	}
}

var errNoRoute = errors.New("no route")

// route asks the name servers in turn for topic's route.
func (c *clusterRoutes) route(ctx context.Context, topic string) (*wire.TopicRouteData, error) {
	c.mu.Lock()
	start := c.next
	c.mu.Unlock()
	var last error
	for i := range c.nameServers {
		n := (start + i) % len(c.nameServers)
		req := wire.NewRequest(wire.GetRouteInfoByTopic, nil)
		req.EncodeHeader(&wire.GetRouteInfoRequestHeader{Topic: topic})
		resp, err := c.invoke(ctx, c.nameServers[n], req)
		if err != nil {
			last = err
			continue
		}
		c.mu.Lock()
		c.next = n
		c.mu.Unlock()
		switch resp.ResponseCode() {
		case wire.Success:
			return wire.DecodeTopicRouteData(resp.Body)
		case wire.TopicNotExist:
			return nil, errNoRoute
		default:
			return nil, fmt.Errorf("name server %s answered %s: %s", c.nameServers[n], resp.ResponseCode(), resp.Remark)
		}
	}
	return nil, last
}

// endpoint returns the gRPC endpoint of the broker at addr (remoting).
func (c *clusterRoutes) endpoint(ctx context.Context, addr string) string {
	c.mu.Lock()
	e, ok := c.endpoints[addr]
	c.mu.Unlock()
	if ok && time.Since(e.at) < endpointTTL {
		return e.endpoint
	}
	endpoint := ""
	resp, err := c.invoke(ctx, addr, wire.NewRequest(wire.GetBrokerRuntimeInfo, nil))
	if err == nil && resp.ResponseCode() == wire.Success {
		var kv wire.KVTable
		if wire.DecodeJSONBody(resp.Body, &kv) == nil {
			endpoint = kv.Table[InfoEndpoint]
		}
	}
	if endpoint == "" {
		// A broker that does not say (a Java broker, or one without a
		// gRPC front-end): its host and this front-end's port.
		host, _, herr := net.SplitHostPort(addr)
		if herr != nil || c.port == "" {
			return ""
		}
		endpoint = net.JoinHostPort(host, c.port)
	}
	c.mu.Lock()
	c.endpoints[addr] = cachedEndpoint{at: time.Now(), endpoint: endpoint}
	c.mu.Unlock()
	return endpoint
}

// invoke sends req to addr over a kept connection, dialling one when
// needed.
func (c *clusterRoutes) invoke(ctx context.Context, addr string, req *wire.Command) (*wire.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("grpc: stopped")
	}
	p := c.peers[addr]
	c.mu.Unlock()
	if p != nil {
		select {
		case <-p.Done():
			p = nil
		default:
		}
	}
	if p == nil {
		np, err := peer.Dial(ctx, addr, peer.Options{RequestTimeout: callTimeout})
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			np.Close()
			return nil, errors.New("grpc: stopped")
		}
		if old := c.peers[addr]; old != nil {
			old.Close()
		}
		c.peers[addr] = np
		c.mu.Unlock()
		p = np
	}
	resp, err := p.Invoke(ctx, req)
	if err != nil {
		p.Close()
	}
	return resp, err
}

// close closes the kept connections.
func (c *clusterRoutes) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for a, p := range c.peers {
		p.Close()
		delete(c.peers, a)
	}
}
