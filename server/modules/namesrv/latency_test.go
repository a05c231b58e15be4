package namesrv

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	karman "github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// The name server's requests land in rocketmq_rpc_latency with node_type
// "nameserver", by request and answer, once each.
func TestRPCLatency(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lat := metrics.NewRPCLatency("C", "n")
	reg := prometheus.NewRegistry()
	reg.MustRegister(lat)
	stop, err := Start(context.Background(), karman.Host{Listener: ln, Logger: slog.New(slog.DiscardHandler), RPCLatency: lat})
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())

	p, err := peer.Dial(context.Background(), ln.Addr().String(), peer.Options{RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 2 {
		req := wire.NewRequest(wire.GetRouteInfoByTopic, nil)
		req.EncodeHeader(&wire.GetRouteInfoRequestHeader{Topic: "Nope"})
		resp, err := p.Invoke(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ResponseCode() != wire.TopicNotExist {
			t.Fatalf("route of an unknown topic answered %s", resp.ResponseCode())
		}
	}
	if _, err := p.Invoke(context.Background(), wire.NewRequest(wire.GetBrokerClusterInfo, nil)); err != nil {
		t.Fatal(err)
	}

	// The observation is made after the answer is written: poll for it.
	want := map[[3]string]uint64{
		{"nameserver", "get_routeinfo_by_topic", "topic_not_exist"}: 2,
		{"nameserver", "get_broker_cluster_info", "success"}:        1,
	}
	var got map[[3]string]uint64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = counts(t, reg)
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rocketmq_rpc_latency counts %v, want %v", got, want)
		}
	}
}

// counts reads the sample counts of rocketmq_rpc_latency by node type,
// request and answer.
func counts(t *testing.T, reg *prometheus.Registry) map[[3]string]uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[[3]string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "rocketmq_rpc_latency" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["cluster"] != "C" || l["node_id"] != "n" || l["protocol_type"] != "remoting" {
				t.Errorf("labels %v", l)
			}
			out[[3]string{l["node_type"], l["request_code"], l["response_code"]}] = m.GetHistogram().GetSampleCount()
		}
	}
	return out
}
