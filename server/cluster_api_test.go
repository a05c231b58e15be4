package server_test

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/console"
	"github.com/karmanmq/karman/server/modules/ha"
)

// startNode starts a server with the broker and args, MQTT and gRPC off.
func startNode(t *testing.T, args ...string) *server.Server {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0",
		"--grpc-addr", "off", "--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off", "--log-level", "error"}
	if err := opts.Flags.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	return srv
}

func clusterOf(t *testing.T, srv *server.Server) console.ClusterView {
	t.Helper()
	c := call(t, "GET", "http://"+srv.Addr("http").String()+"/api/v1/cluster", nil)
	if c.status != 200 {
		t.Fatalf("GET /cluster: %d %s", c.status, c.body)
	}
	var v console.ClusterView
	if err := json.Unmarshal(c.body, &v); err != nil {
		t.Fatalf("GET /cluster: %v in %s", err, c.body)
	}
	return v
}

// TestClusterAPI: a master running its own name server, its replica
// registered there, and a broker registered there that does not run.
// GET /cluster lists the group with both brokers, their roles, the
// epoch, the in-sync set and the lag, and marks the dead broker.
func TestClusterAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	master := startNode(t, "--namesrv-addr", "127.0.0.1:0", "--ha-role", "master", "--ha-addr", "127.0.0.1:0")
	var haAddr string
	for _, m := range master.Modules() {
		if h, ok := m.(*ha.Module); ok {
			haAddr = h.Addr().String()
		}
	}
	ns := master.Addr("namesrv").String()
	replica := startNode(t, "--namesrv-addr", "off", "--broker-namesrv", ns, "--ha-role", "replica", "--ha-master", haAddr)

	// A broker group whose only broker is gone: its address takes no
	// connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	reg, err := namesrv.NewRegistrar(namesrv.RegistrarOptions{NameServers: []string{ns}, Cluster: "DefaultCluster", BrokerName: "broker-gone",
		BrokerAddr: dead, Topics: func() []namesrv.TopicConfig { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := reg.RegisterAll(ctx); err != nil {
		t.Fatal(err)
	}

	// A message, so that the replica's log holds the master's epoch.
	if err := master.Engine().CreateTopic(meta.Topic{Name: "shop", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	if _, err := master.Engine().Send(ctx, &message.Message{Topic: "shop", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}

	masterAddr, replicaAddr := master.Addr("broker").String(), replica.Addr("broker").String()
	var v console.ClusterView
	deadline := time.Now().Add(20 * time.Second)
	for first := true; ; first = false {
		start := time.Now()
		v = clusterOf(t, master)
		if first {
			t.Logf("GET /cluster, asking the name server and 3 brokers (one gone): %v", time.Since(start))
		}
		if len(v.Groups) == 2 && len(v.Groups[0].Brokers) == 2 && v.Groups[0].Brokers[1].LagBytes != nil && *v.Groups[0].Brokers[1].LagBytes == 0 &&
			len(v.Groups[0].Brokers[0].InSync) == 2 && deref(v.Groups[0].Brokers[1].Epoch) == deref(v.Groups[0].Brokers[0].Epoch) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster view never showed the master, its replica in sync and the gone broker: %+v", v)
		}
		time.Sleep(200 * time.Millisecond) // polling a view the server caches for seconds
	}
	if v.Source != "namesrv" || v.Cluster != "DefaultCluster" || !slices.Equal(v.NameServers, []string{ns}) || v.Error != "" {
		t.Errorf("view %+v, want from name server %s", v, ns)
	}
	a, gone := v.Groups[0], v.Groups[1]
	if a.Name != "broker-a" || gone.Name != "broker-gone" {
		t.Fatalf("groups %q, %q; want broker-a, broker-gone", a.Name, gone.Name)
	}
	m, r := a.Brokers[0], a.Brokers[1]
	if m.ID != 0 || m.Addr != masterAddr || !m.Self || m.Role != "master" || !m.Reachable || m.Epoch == nil || *m.Epoch < 1 ||
		!slices.Contains(m.InSync, "0") || m.ReplicaLagBytes == nil {
		t.Errorf("master %+v", m)
	}
	if r.ID == 0 || r.Addr != replicaAddr || r.Self || r.Role != "replica" || !r.Reachable || r.Master != haAddr || r.Epoch == nil || *r.Epoch != *m.Epoch {
		t.Errorf("replica %+v (epoch %v, master epoch %v), want of %s", r, deref(r.Epoch), deref(m.Epoch), haAddr)
	}
	if len(gone.Brokers) != 1 || gone.Brokers[0].Reachable || gone.Brokers[0].Error == "" || gone.Brokers[0].Addr != dead || gone.Brokers[0].Role != "master" {
		t.Errorf("the gone broker %+v, want unreachable with the reason", gone.Brokers)
	}

	// The replica's view comes from the same name server and marks the
	// replica as itself.
	rv := clusterOf(t, replica)
	if rv.Source != "namesrv" || len(rv.Groups) != 2 || len(rv.Groups[0].Brokers) != 2 || rv.Groups[0].Brokers[0].Self || !rv.Groups[0].Brokers[1].Self {
		t.Errorf("the replica's view %+v", rv)
	}

	// Answered from the cache within the 200 ms the console allows.
	start := time.Now()
	clusterOf(t, master)
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("a cached GET /cluster took %v", d)
	}
}

// TestClusterAPIAlone: a broker that registers with no name server is
// shown alone, from its own runtime information.
func TestClusterAPIAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	srv := startNode(t, "--namesrv-addr", "off")
	v := clusterOf(t, srv)
	if v.Source != "self" || len(v.NameServers) != 0 || len(v.Groups) != 1 || len(v.Groups[0].Brokers) != 1 {
		t.Fatalf("view %+v, want this broker alone", v)
	}
	b := v.Groups[0].Brokers[0]
	if v.Groups[0].Name != "broker-a" || !b.Self || !b.Reachable || b.Role != "master" || b.Addr != srv.Addr("broker").String() || b.Version == "" {
		t.Errorf("broker %+v", b)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
