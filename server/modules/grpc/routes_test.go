package grpc

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"

	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/server"
	rserver "github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// fakeCluster is a name server and the brokers it routes to on one
// remoting listener: the route of "T" names broker-a (this group),
// broker-b (whose broker names its gRPC endpoint), broker-c (whose broker
// does not) and broker-d (no master); "Missing" has no route.
func fakeCluster(t *testing.T) (addr string, routeCalls *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	routeCalls = new(atomic.Int32)
	mux := rserver.NewMux()
	mux.HandleFunc(wire.GetRouteInfoByTopic, rserver.KindDefault, func(_ context.Context, _ *rserver.Conn, req *wire.Command) *wire.Command {
		routeCalls.Add(1)
		var h wire.GetRouteInfoRequestHeader
		if err := req.DecodeHeader(&h); err != nil || h.Topic != "T" {
			return wire.NewResponse(req, wire.TopicNotExist, "no route")
		}
		rd := wire.TopicRouteData{
			QueueDatas: []wire.QueueData{
				{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
				{BrokerName: "broker-b", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6},
				{BrokerName: "broker-c", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4},
				{BrokerName: "broker-d", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6},
			},
			BrokerDatas: []wire.BrokerData{
				{BrokerName: "broker-a", BrokerAddrs: wire.BrokerAddrs{0: "10.0.0.1:10911"}},
				{BrokerName: "broker-b", BrokerAddrs: wire.BrokerAddrs{0: addr}},
				{BrokerName: "broker-c", BrokerAddrs: wire.BrokerAddrs{0: "127.0.0.2:1"}}, // nothing listens: no runtime info
				{BrokerName: "broker-d", BrokerAddrs: wire.BrokerAddrs{1: "10.0.0.4:10911"}},
			},
		}
		resp := wire.NewResponse(req, wire.Success, "")
		resp.Body, _ = rd.Encode()
		return resp
	})
	mux.HandleFunc(wire.GetBrokerRuntimeInfo, rserver.KindDefault, func(_ context.Context, _ *rserver.Conn, req *wire.Command) *wire.Command {
		resp := wire.NewResponse(req, wire.Success, "")
		resp.Body, _ = wire.EncodeJSONBody(wire.KVTable{Table: map[string]string{InfoEndpoint: "10.0.0.2:8081"}})
		return resp
	})
	srv := rserver.New(mux, rserver.Options{})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return addr, routeCalls
}

func TestClusterRoutes(t *testing.T) {
	ns, calls := fakeCluster(t)
	// The first name server is down: the second answers.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	c := newClusterRoutes([]string{deadAddr, ns}, "broker-a", "10.0.0.1:9081", slog.New(slog.DiscardHandler))
	defer c.close()
	ctx := context.Background()

	want := fmt.Sprint([]server.GroupRoute{
		{BrokerName: "broker-b", ReadQueues: 2, WriteQueues: 2, Perm: meta.PermRW, Endpoint: "10.0.0.2:8081"},
		// No runtime info: its host at this front-end's port.
		{BrokerName: "broker-c", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRead, Endpoint: "127.0.0.2:9081"},
	})
	if got := fmt.Sprint(c.Groups(ctx, "T")); got != want {
		t.Fatalf("groups of T:\n got %s\nwant %s", got, want)
	}
	// Cached: asked again within the interval, the name server is not.
	before := calls.Load()
	c.Groups(ctx, "T")
	if calls.Load() != before {
		t.Fatal("a cached route was asked again")
	}
	// No route: no other group, and the answer is cached too.
	if g := c.Groups(ctx, "Missing"); g != nil {
		t.Fatalf("groups of a topic without a route: %v", g)
	}
	before = calls.Load()
	c.Groups(ctx, "Missing")
	if calls.Load() != before {
		t.Fatal("a missing route was asked again at once")
	}
}
