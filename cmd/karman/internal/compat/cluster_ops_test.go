//go:build !race && unix

package compat

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// noMQTT turns the MQTT listeners off for tests that do not use them.
var noMQTT = []string{"--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off"}

// clusterList is "karman admin cluster list --json" as the tests read it.
type clusterList struct {
	Brokers []struct {
		Cluster string `json:"cluster"`
		Name    string `json:"brokerName"`
		ID      int64  `json:"brokerId"`
		Addr    string `json:"address"`
		Status  *struct {
			Replication *struct {
				Role            string           `json:"role"`
				BrokerID        string           `json:"brokerId"`
				Controlled      bool             `json:"controlled"`
				MasterEpoch     int64            `json:"masterEpoch"`
				InSync          []string         `json:"inSync"`
				LagBytes        *int64           `json:"lagBytes"`
				ReplicaLagBytes map[string]int64 `json:"replicaLagBytes"`
				Master          string           `json:"master"`
			} `json:"replication"`
		} `json:"status"`
	} `json:"brokers"`
}

// A master and two replicas without a controller, each a karman binary:
// the replicas register with the name server under their own ids (one
// given with --ha-broker-id, one derived from its address), and "admin
// cluster list" shows each broker's role, the master epoch, the master's
// in-sync set and every replica's lag.
func TestClusterListReplicasWithoutController(t *testing.T) {
	t.Parallel()
	ha := freeAddr(t)
	a := startBinary(t, slices.Concat(noMQTT, []string{"--ha-role", "master", "--ha-addr", ha, "--ha-replication", "async"})...)
	b := startBinary(t, slices.Concat(noMQTT, []string{"--ha-role", "replica", "--ha-master", ha, "--broker-namesrv", a.namesrv, "--ha-broker-id", "2"})...)
	c := startBinary(t, slices.Concat(noMQTT, []string{"--ha-role", "replica", "--ha-master", ha, "--broker-namesrv", a.namesrv})...)
	a.createTopic("ClusterListTopic", 2)
	p := a.producer()
	for i := range 20 {
		p.send(primitive.NewMessage("ClusterListTopic", []byte(fmt.Sprint("m", i))))
	}

	var cl clusterList
	pollUntil(t, "three brokers in sync with no lag", 30*time.Second, func() bool {
		cl = clusterList{}
		a.adminCLI(&cl, "cluster", "list")
		if len(cl.Brokers) != 3 {
			return false
		}
		for _, br := range cl.Brokers {
			if br.Status == nil || br.Status.Replication == nil {
				return false
			}
			r := br.Status.Replication
			if r.Role == "master" && (len(r.InSync) != 3 || len(r.ReplicaLagBytes) != 2) {
				return false
			}
			for _, lag := range r.ReplicaLagBytes {
				if lag != 0 {
					return false
				}
			}
			if r.Role == "replica" && (r.LagBytes == nil || *r.LagBytes != 0) {
				return false
			}
		}
		return true
	})
	ids := map[int64]string{}
	var master []string
	for _, br := range cl.Brokers {
		r := br.Status.Replication
		if prev, dup := ids[br.ID]; dup {
			t.Fatalf("%s and %s share broker id %d: %+v", prev, br.Addr, br.ID, cl)
		}
		ids[br.ID] = br.Addr
		switch br.Addr {
		case a.broker:
			if br.ID != 0 || r.Role != "master" || r.MasterEpoch != 1 || r.Controlled {
				t.Errorf("master: id %d, %+v", br.ID, *r)
			}
			master = r.InSync
		case b.broker:
			if br.ID != 2 || r.Role != "replica" || r.BrokerID != "2" || r.Master != ha || r.MasterEpoch != 1 {
				t.Errorf("replica with --ha-broker-id 2: id %d, %+v", br.ID, *r)
			}
		case c.broker:
			if br.ID < 1 || br.ID == 2 || r.Role != "replica" || r.BrokerID != strconv.FormatInt(br.ID, 10) {
				t.Errorf("replica with a derived id: id %d, %+v", br.ID, *r)
			}
		default:
			t.Errorf("unknown broker %s", br.Addr)
		}
	}
	slices.Sort(master)
	want := []string{"0", "2"}
	for id := range ids {
		if id != 0 && id != 2 {
			want = append(want, strconv.FormatInt(id, 10))
		}
	}
	slices.Sort(want)
	if !slices.Equal(master, want) {
		t.Errorf("in-sync set %v, want %v (the master and both replicas by their name-server ids)", master, want)
	}

	// The table shows the same.
	out := a.adminTable("cluster", "list")
	for _, s := range []string{"ROLE", "EPOCH", "IN SYNC", "LAG", "replica(2)"} {
		if !strings.Contains(out, s) {
			t.Errorf("cluster list table lacks %q:\n%s", s, out)
		}
	}
}

// adminTable runs "karman admin ARGS" (the binary, table output) against
// k's name server and returns what it printed.
func (k *karman) adminTable(args ...string) string {
	k.t.Helper()
	out, err := exec.Command(karmanBinary(k.t), slices.Concat([]string{"admin", "--namesrv", k.namesrv, "--timeout", "10s"}, args)...).CombinedOutput()
	if err != nil {
		k.t.Fatalf("karman admin %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// metricsText returns k's /metrics, "" when it does not answer.
func (k *karman) metricsText() string {
	resp, err := http.Get("http://" + k.http + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// hasSeries reports whether a /metrics text holds the series with the
// value: "name{labels} value".
func hasSeries(text, series, value string) bool {
	return slices.Contains(strings.Split(text, "\n"), series+" "+value)
}

// Three controllers and three brokers of one group taking their roles from
// them, each a karman binary. The replicas register at the name server as
// 2 and 3 (their controller ids), the master as 0; "admin cluster list"
// shows the master epoch, the controller's in-sync set and each replica's
// lag; /metrics of brokers and controllers have the roles, epochs, lags
// and, after the master's kill -9, the promotion and the election, made
// as soon as the master's watch connection closed, well before the
// heartbeat timeout.
func TestClusterOpsWithController(t *testing.T) {
	t.Parallel()
	ns := startAux(t, "namesrv", "--addr", "127.0.0.1:0", "--log-level", "warn")["namesrv"]
	var peers, apis []string
	raft := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	for i, r := range raft {
		peers = append(peers, fmt.Sprintf("c%d=%s", i+1, r))
		apis = append(apis, freeAddr(t))
	}
	for i := range raft {
		startAux(t, "controller", "--controller-id", fmt.Sprintf("c%d", i+1), "--controller-peers", strings.Join(peers, ","),
			"--controller-addr", apis[i], "--data", t.TempDir(), "--broker-heartbeat-timeout", "10s", "--log-level", "warn")
	}
	broker := func(id string) []string {
		return slices.Concat(noMQTT, []string{"--broker-namesrv", ns, "--broker-name", "broker-x", "--broker-cluster", "OpsCluster",
			"--ha-controller", strings.Join(apis, ","), "--ha-broker-id", id, "--ha-addr", freeAddr(t),
			"--ha-heartbeat-interval", "500ms", "--ha-controller-lease", "1s"})
	}
	b1 := startBinary(t, broker("1")...)
	pollUntil(t, "broker 1 master", 30*time.Second, func() bool {
		g, ok := controllerGroup(apis, "broker-x")
		return ok && g.MasterID == 1
	})
	b2 := startBinary(t, broker("2")...)
	b3 := startBinary(t, broker("3")...)
	procs := map[string]*karmanProcess{"1": b1, "2": b2, "3": b3}
	for _, p := range procs {
		p.namesrv = ns
	}
	b1.createTopic("OpsTopic", 2)
	p := b1.producer()
	for i := range 10 {
		p.send(primitive.NewMessage("OpsTopic", []byte(fmt.Sprint("m", i))))
	}

	var cl clusterList
	pollUntil(t, "the group in sync at epoch 1 in cluster list", 30*time.Second, func() bool {
		cl = clusterList{}
		b1.adminCLI(&cl, "cluster", "list")
		if len(cl.Brokers) != 3 {
			return false
		}
		for _, br := range cl.Brokers {
			if br.Status == nil || br.Status.Replication == nil {
				return false
			}
			r := br.Status.Replication
			if strings.Join(r.InSync, ",") != "1,2,3" || r.MasterEpoch != 1 {
				return false
			}
			if r.Role == "replica" && (r.LagBytes == nil || *r.LagBytes != 0) {
				return false
			}
			if r.Role == "master" && (len(r.ReplicaLagBytes) != 2 || r.ReplicaLagBytes["2"] != 0 || r.ReplicaLagBytes["3"] != 0) {
				return false
			}
		}
		return true
	})
	for _, br := range cl.Brokers {
		r := br.Status.Replication
		if br.Cluster != "OpsCluster" || br.Name != "broker-x" || !r.Controlled {
			t.Errorf("broker %s: cluster %q name %q controlled %v", br.Addr, br.Cluster, br.Name, r.Controlled)
		}
		k := procs[r.BrokerID]
		if k == nil || k.broker != br.Addr {
			t.Fatalf("broker %s reports id %q", br.Addr, r.BrokerID)
		}
		wantID := map[string]int64{"1": 0, "2": 2, "3": 3}[r.BrokerID]
		wantRole := map[bool]string{true: "master", false: "replica"}[r.BrokerID == "1"]
		if br.ID != wantID || r.Role != wantRole {
			t.Errorf("controller id %s: name-server id %d role %s, want %d %s", r.BrokerID, br.ID, r.Role, wantID, wantRole)
		}
		if r.Role == "master" && (r.ReplicaLagBytes["2"] != 0 || r.ReplicaLagBytes["3"] != 0 || len(r.ReplicaLagBytes) != 2) {
			t.Errorf("master's view of its replicas: %v", r.ReplicaLagBytes)
		}
	}

	for id, k := range procs {
		master := map[bool]string{true: "1", false: "0"}[id == "1"]
		pollUntil(t, "broker "+id+"'s replication metrics", 15*time.Second, func() bool {
			m := k.metricsText()
			ok := hasSeries(m, "karman_ha_master", master) && hasSeries(m, "karman_ha_master_epoch", "1") &&
				hasSeries(m, "karman_ha_in_sync_members", "3") && hasSeries(m, "karman_ha_promotions_total", master) &&
				hasSeries(m, "karman_ha_demotions_total", "0")
			if id == "1" {
				return ok && hasSeries(m, `karman_ha_replica_lag_bytes{replica="2"}`, "0") && hasSeries(m, `karman_ha_replica_lag_bytes{replica="3"}`, "0") &&
					hasSeries(m, `karman_ha_replica_in_sync{replica="2"}`, "1") && hasSeries(m, `karman_ha_replica_lag_seconds{replica="3"}`, "0")
			}
			return ok && hasSeries(m, "karman_ha_lag_bytes", "0")
		})
	}

	// The master dies: a replica is promoted at epoch 2 and counts it; the
	// controller leader counts one election for the lost heartbeat.
	b1.kill()
	killed := time.Now()
	var g controller.Group
	pollUntil(t, "a new master", 20*time.Second, func() bool {
		var ok bool
		g, ok = controllerGroup(apis, "broker-x")
		return ok && g.MasterID != 1 && g.MasterEpoch == 2
	})
	// The killed master's watch connection closed: the leader did not
	// wait for the 10 s heartbeat timeout.
	if took := time.Since(killed); took > 5*time.Second {
		t.Errorf("new master elected %v after the kill; the closed connection went unnoticed", took)
	} else {
		t.Logf("new master elected %v after the kill (heartbeat timeout 10s)", took.Round(time.Millisecond))
	}
	nm := procs[strconv.FormatInt(g.MasterID, 10)]
	pollUntil(t, "the new master's metrics", 15*time.Second, func() bool {
		m := nm.metricsText()
		return hasSeries(m, "karman_ha_master", "1") && hasSeries(m, "karman_ha_master_epoch", "2") && hasSeries(m, "karman_ha_promotions_total", "1")
	})
	pollUntil(t, "the controller leader's election count", 15*time.Second, func() bool {
		for _, a := range apis {
			resp, err := http.Get("http://" + a + "/metrics")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			m := string(b)
			if hasSeries(m, "karman_controller_leader", "1") && hasSeries(m, `karman_controller_elections_total{group="broker-x",trigger="heartbeat"}`, "1") &&
				hasSeries(m, `karman_controller_master_epoch{group="broker-x"}`, "2") {
				return true
			}
		}
		return false
	})
	pollUntil(t, "cluster list at epoch 2", 30*time.Second, func() bool {
		cl = clusterList{}
		nm.adminCLI(&cl, "cluster", "list")
		for _, br := range cl.Brokers {
			if br.ID == 0 && br.Addr == nm.broker && br.Status != nil && br.Status.Replication != nil &&
				br.Status.Replication.Role == "master" && br.Status.Replication.MasterEpoch == 2 {
				return true
			}
		}
		return false
	})
}

// Two name servers and a broker registered with both, each a karman
// binary; a Go producer and push consumer are given both. One name server
// is killed with SIGKILL: the clients go on sending and consuming, a
// producer started afterwards finds its routes on the live one, and the
// broker's registration of a topic created after the kill reaches it.
func TestTwoNameServersOneKilled(t *testing.T) {
	t.Parallel()
	const topic, group = "TwoNsTopic", "two-ns-consumer"
	ns1, kill1 := startAuxProc(t, "namesrv", "--addr", "127.0.0.1:0", "--log-level", "warn")
	ns2 := startAux(t, "namesrv", "--addr", "127.0.0.1:0", "--log-level", "warn")["namesrv"]
	both := []string{ns1["namesrv"], ns2}
	b := startBinary(t, slices.Concat(noMQTT, []string{"--broker-namesrv", strings.Join(both, ",")})...)
	b.namesrv = both[0] // createTopic waits for the route there
	b.createTopic(topic, 4)
	b.namesrv = ns2
	b.waitRoute(topic)

	p := b.producer(producer.WithNameServer(both), producer.WithRetry(2))
	got := newReceived()
	b.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	}, consumer.WithNameServer(both))
	for i := range 10 {
		p.send(primitive.NewMessage(topic, []byte(fmt.Sprint("before-", i))))
	}
	got.waitFor(t, "the messages sent before the kill", 30*time.Second, func() bool { return got.distinct() == 10 })

	if err := kill1.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	kill1.Wait()
	for i := range 10 {
		p.send(primitive.NewMessage(topic, []byte(fmt.Sprint("after-", i))))
	}
	got.waitFor(t, "the messages sent after the kill", 30*time.Second, func() bool { return got.distinct() == 20 })

	// A topic created now is registered with the live name server, and a
	// producer that starts now, given the dead one first, finds it there.
	const later = "TwoNsLater"
	b.createTopic(later, 2) // and waits for its route on ns2
	p2 := b.producer(producer.WithNameServer(both), producer.WithRetry(2))
	res := p2.send(primitive.NewMessage(later, []byte("later")))
	if res.MessageQueue.BrokerName != "broker-a" {
		t.Fatalf("send after the kill went to %+v", res.MessageQueue)
	}
}

// Two broker groups (broker-a and broker-b, each a karman binary) serving
// one topic and registered with one name server: the gRPC front-end of
// either answers QueryRoute with both groups' queues, each naming its own
// group's gRPC endpoint, and QueryAssignment with an assignment per
// group, as RocketMQ's proxy does in cluster mode. A Node.js producer
// given broker-a's endpoint alone sends to both groups, and a Go consumer
// receives every message.
func TestGRPCRouteAcrossBrokerGroups(t *testing.T) {
	t.Parallel()
	const topic, group = "GroupsTopic", "groups-consumer"
	ns := startAux(t, "namesrv", "--addr", "127.0.0.1:0", "--log-level", "warn")["namesrv"]
	a := startBinary(t, slices.Concat(noMQTT, []string{"--broker-namesrv", ns, "--broker-name", "broker-a"})...)
	b := startBinary(t, slices.Concat(noMQTT, []string{"--broker-namesrv", ns, "--broker-name", "broker-b"})...)
	a.namesrv, b.namesrv = ns, ns
	a.createTypedTopic(topic, 2, "NORMAL")
	b.createTypedTopic(topic, 3, "NORMAL")
	nsPeer, err := peer.Dial(context.Background(), ns, peer.Options{RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer nsPeer.Close()
	pollUntil(t, "both groups in the name server's route", 15*time.Second, func() bool {
		req := wire.NewRequest(wire.GetRouteInfoByTopic, nil)
		req.EncodeHeader(&wire.GetRouteInfoRequestHeader{Topic: topic})
		resp, err := nsPeer.Invoke(context.Background(), req)
		return err == nil && resp.ResponseCode() == wire.Success && strings.Contains(string(resp.Body), "broker-b") && strings.Contains(string(resp.Body), "broker-a")
	})

	for _, k := range []*karmanProcess{a, b} {
		conn, err := grpc.NewClient(k.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		cli := rmqpb.NewMessagingServiceClient(conn)
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", instance("route-check")), 10*time.Second)
		defer cancel()
		route, err := cli.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: topic}})
		if err != nil {
			t.Fatal(err)
		}
		queues := map[string][]string{} // broker -> "id@endpoint"
		for _, mq := range route.GetMessageQueues() {
			ad := mq.GetBroker().GetEndpoints().GetAddresses()[0]
			queues[mq.GetBroker().GetName()] = append(queues[mq.GetBroker().GetName()], fmt.Sprintf("%d@%s:%d", mq.GetId(), ad.GetHost(), ad.GetPort()))
		}
		want := map[string][]string{
			"broker-a": {"0@" + a.grpc, "1@" + a.grpc},
			"broker-b": {"0@" + b.grpc, "1@" + b.grpc, "2@" + b.grpc},
		}
		if route.GetStatus().GetCode() != rmqpb.Code_OK || fmt.Sprint(queues) != fmt.Sprint(want) {
			t.Fatalf("QueryRoute at %s: %v %v, want %v", k.grpc, route.GetStatus(), queues, want)
		}
		as, err := cli.QueryAssignment(ctx, &rmqpb.QueryAssignmentRequest{Topic: &rmqpb.Resource{Name: topic}, Group: &rmqpb.Resource{Name: group}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range as.GetAssignments() {
			ad := x.GetMessageQueue().GetBroker().GetEndpoints().GetAddresses()[0]
			got = append(got, fmt.Sprintf("%s@%s:%d", x.GetMessageQueue().GetBroker().GetName(), ad.GetHost(), ad.GetPort()))
		}
		slices.Sort(got)
		if w := []string{"broker-a@" + a.grpc, "broker-b@" + b.grpc}; !slices.Equal(got, w) {
			t.Fatalf("QueryAssignment at %s: %v %v, want %v", k.grpc, as.GetStatus(), got, w)
		}
	}

	requireNode(t)
	var out []outMessage
	for i := range 30 {
		out = append(out, outMessage{Body: fmt.Sprint("across-", i)})
	}
	a.nodeSend(topic, out)
	stored := func(k *karmanProcess, queues int32) int64 {
		var n int64
		for q := range queues {
			n += k.maxOffset(topic, q)
		}
		return n
	}
	na, nb := stored(a, 2), stored(b, 3)
	if na+nb != 30 || na == 0 || nb == 0 {
		t.Fatalf("broker-a stored %d, broker-b %d; want the 30 messages spread over both", na, nb)
	}
	got := newReceived()
	a.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	got.waitFor(t, "every message from both groups", 30*time.Second, func() bool { return got.distinct() == 30 })
}
