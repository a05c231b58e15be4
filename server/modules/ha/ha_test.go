package ha_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/modules/ha"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

func start(t *testing.T, args ...string) *server.Server {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "off", "--namesrv-addr", "127.0.0.1:0",
		"--broker-addr", "127.0.0.1:0", "--grpc-addr", "off", "--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off", "--log-level", "error"}
	if err := opts.Flags.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return srv
}

func module(t *testing.T, srv *server.Server) *ha.Module {
	t.Helper()
	for _, m := range srv.Modules() {
		if h, ok := m.(*ha.Module); ok {
			return h
		}
	}
	t.Fatal("no cluster.ha module")
	return nil
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A master in sync replication with a replica, both karman servers, and
// the real Go producer: sends are refused until the replica is in sync,
// then each acknowledged message is on the replica; the replica's broker
// refuses sends with SERVICE_NOT_AVAILABLE.
func TestSyncReplicationWithGoProducer(t *testing.T) {
	master := start(t, "--namesrv-addr", "127.0.0.1:0", "--ha-role", "master", "--ha-addr", "127.0.0.1:0",
		"--ha-replication", "sync", "--ha-ack-timeout", "2s")
	nsAddr := master.Addr("namesrv").String()
	rlog.SetLogLevel("error")
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		producer.WithGroupName("ha-test"),
		producer.WithSendMsgTimeout(3*time.Second),
		producer.WithRetry(1),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	ctx := context.Background()
	if err := master.Engine().CreateTopic(meta.Topic{Name: "Orders", ReadQueues: 4, WriteQueues: 4, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the topic's route", func() bool {
		_, err := p.SendSync(ctx, primitive.NewMessage("Orders", []byte("probe")))
		return err != nil && !isNoRoute(err)
	})
	// Alone, the master acknowledges nothing.
	_, end := master.Engine().LogRange()
	if res, err := p.SendSync(ctx, primitive.NewMessage("Orders", []byte("alone"))); err == nil {
		t.Fatalf("a sync master with no replica acknowledged a send: %v", res)
	}
	if _, now := master.Engine().LogRange(); now != end {
		t.Fatalf("the refused send stored %d bytes", now-end)
	}

	replica := start(t, "--namesrv-addr", "off", "--broker-namesrv", nsAddr,
		"--ha-role", "replica", "--ha-master", module(t, master).Addr().String())
	eventually(t, "the topic on the replica", func() bool {
		_, err := replica.Engine().Topic("Orders")
		return err == nil
	})
	eventually(t, "sends acknowledged", func() bool {
		res, err := p.SendSync(ctx, primitive.NewMessage("Orders", []byte("first")))
		return err == nil && res.Status == primitive.SendOK
	})
	want := map[string]bool{}
	for i := range 100 {
		body := fmt.Sprintf("order-%d", i)
		res, err := p.SendSync(ctx, primitive.NewMessage("Orders", []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
		want[body] = true
	}
	// Every acknowledged message is on the replica, indexed there.
	re := replica.Engine()
	if err := re.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	for q := range int32(4) {
		for off := int64(0); ; {
			r, err := re.Pull(ctx, "Orders", q, off, 32, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range r.Records {
				m, _, err := message.DecodeStored(rec)
				if err != nil {
					t.Fatal(err)
				}
				delete(want, string(m.Body))
			}
			if r.NextOffset == off {
				break
			}
			off = r.NextOffset
		}
	}
	if len(want) > 0 {
		t.Fatalf("%d acknowledged messages are not on the replica", len(want))
	}
	if re.Role() != engine.RoleReplica {
		t.Fatalf("the replica's engine is a %s", re.Role())
	}

	// The replica's broker refuses sends with the code producers retry
	// elsewhere.
	c, err := peer.Dial(ctx, replica.Addr("broker").String(), peer.Options{RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := wire.NewRequest(wire.SendMessage, nil)
	req.EncodeHeader(&wire.SendMessageRequestHeader{ProducerGroup: "g", Topic: "Orders", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli()})
	req.Body = []byte("to the replica")
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if wire.ResponseCode(resp.Code) != wire.ServiceNotAvailable {
		t.Fatalf("a send to the replica: %v %q, want SERVICE_NOT_AVAILABLE", wire.ResponseCode(resp.Code), resp.Remark)
	}
}

func isNoRoute(err error) bool {
	return err != nil && (contains(err.Error(), "route") || contains(err.Error(), "No route"))
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestOverview: the API's overview of a master and of its replica says
// each one's role, the master's replicas with their lag, and the
// replica's master and lag.
func TestOverview(t *testing.T) {
	master := start(t, "--namesrv-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--ha-role", "master", "--ha-addr", "127.0.0.1:0")
	if err := master.Engine().CreateTopic(meta.Topic{Name: "Orders", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	haAddr := module(t, master).Addr().String()
	replica := start(t, "--namesrv-addr", "off", "--broker-namesrv", master.Addr("namesrv").String(), "--http-addr", "127.0.0.1:0",
		"--ha-role", "replica", "--ha-master", haAddr)

	type overview struct {
		Role   string
		Status struct {
			HA *ha.Status `json:"cluster.ha"`
		}
	}
	get := func(srv *server.Server) overview {
		t.Helper()
		resp, err := http.Get("http://" + srv.Addr("http").String() + "/api/v1/overview")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var o overview
		if err := json.NewDecoder(resp.Body).Decode(&o); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("overview: %d %v", resp.StatusCode, err)
		}
		return o
	}
	eventually(t, "the replica in sync on the master's overview", func() bool {
		o := get(master)
		return o.Status.HA != nil && len(o.Status.HA.Replicas) == 1 && o.Status.HA.Replicas[0].InSync
	})
	o := get(master)
	if o.Role != "master" || o.Status.HA.Role != "master" || o.Status.HA.Replicas[0].Addr == "" || o.Status.HA.Replicas[0].Since == 0 {
		t.Errorf("master's overview: %+v %+v", o, o.Status.HA)
	}
	if st := o.Status.HA; st.Epoch != 1 || len(st.InSync) != 2 || st.InSync[0] != "0" || st.InSync[1] != st.Replicas[0].ID {
		t.Errorf("master's overview: epoch %d, in sync %v; want epoch 1 and the master with its replica %s", st.Epoch, st.InSync, st.Replicas[0].ID)
	}
	eventually(t, "the replica's overview with no lag", func() bool {
		o := get(replica)
		return o.Status.HA != nil && o.Status.HA.Lag != nil && *o.Status.HA.Lag == 0
	})
	o = get(replica)
	if o.Role != "replica" || o.Status.HA.Role != "replica" || o.Status.HA.Master != haAddr || o.Status.HA.Replicas != nil {
		t.Errorf("replica's overview: %+v %+v", o, o.Status.HA)
	}
}

// Provision takes the group, cluster and advertised address from the
// broker module's flags, which are not in the module's own flag set.
func TestProvisionReadsBrokerFlags(t *testing.T) {
	flags := map[string]string{"broker-name": "broker-b", "broker-cluster": "C1", "broker-advertise-addr": "10.0.0.1:10911"}
	m := ha.New()
	if err := m.Provision(server.ProvisionContext{Flag: func(n string) (string, bool) { v, ok := flags[n]; return v, ok }}); err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.BrokerName != "broker-b" || c.Cluster != "C1" || c.BrokerAddr != "10.0.0.1:10911" {
		t.Fatalf("after Provision: name %q cluster %q addr %q", c.BrokerName, c.Cluster, c.BrokerAddr)
	}
	m = ha.New()
	if err := m.Provision(server.ProvisionContext{}); err != nil || m.Config.BrokerName != "broker-a" {
		t.Fatalf("without flags: %v, name %q", err, m.Config.BrokerName)
	}
}

// Pop state reaches a replica over the replication link: once the master
// is gone and the replica promoted (a failover by hand), a pop consumer
// acknowledges with a handle the master issued and is handed only what
// the master had not handed out.
func TestPopStateFollowsFailover(t *testing.T) {
	ctx := context.Background()
	master := startUnmanaged(t, "--ha-role", "master", "--ha-addr", "127.0.0.1:0")
	replica := start(t, "--namesrv-addr", "off", "--ha-role", "replica", "--ha-master", module(t, master).Addr().String())
	me := master.Engine()
	if err := me.CreateTopic(meta.Topic{Name: "PopT", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	if err := me.CreateGroup(meta.Group{Name: "pop-g", MaxAttempts: 5}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := me.Send(ctx, &message.Message{Topic: "PopT", Body: []byte(fmt.Sprint("m", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := me.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	popped, err := me.Pop(ctx, engine.PopOptions{Group: "pop-g", Topic: "PopT", Max: 3, Invisible: time.Minute})
	if err != nil || len(popped) != 3 {
		t.Fatalf("pop: %d, %v", len(popped), err)
	}
	if err := me.Ack(ctx, "pop-g", popped[0].Handle); err != nil {
		t.Fatal(err)
	}
	want, err := me.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the master's pop state on the replica", func() bool {
		got, err := replica.Engine().Metadata()
		return err == nil && fmt.Sprint(got.PopStates) == fmt.Sprint(want.PopStates) && string(got.PopHandleKey) == string(want.PopHandleKey)
	})
	if _, end := replica.Engine().LogRange(); end == 0 {
		t.Fatal("the replica holds no log")
	}
	if err := master.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	re := replica.Engine()
	if err := re.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := re.Ack(ctx, "pop-g", popped[1].Handle); err != nil {
		t.Fatalf("the master's receipt handle on the promoted replica: %v", err)
	}
	again, err := re.Pop(ctx, engine.PopOptions{Group: "pop-g", Topic: "PopT", Max: 10, Invisible: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, p := range again {
		offs = append(offs, p.Offset)
	}
	if fmt.Sprint(offs) != "[3 4]" {
		t.Fatalf("the promoted replica handed out offsets %v, want [3 4]", offs)
	}
}
