package ha_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/server"
)

// quorum starts three controllers in-process on loopback ports picked at
// run time and returns their request addresses and a function that stops
// them all.
func quorum(t *testing.T, hbTimeout time.Duration) ([]string, func()) {
	t.Helper()
	peers := map[string]string{}
	var lns []net.Listener
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		peers[fmt.Sprintf("c%d", i+1)] = ln.Addr().String()
	}
	var (
		apis  []string
		stops []func()
	)
	for i := range 3 {
		c, err := controller.Open(controller.Options{ID: fmt.Sprintf("c%d", i+1), Peers: peers, Dir: t.TempDir(),
			Listener: lns[i], HeartbeatTimeout: hbTimeout, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		api, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: c.Handler()}
		go srv.Serve(api)
		var once sync.Once
		stop := func() { once.Do(func() { srv.Close(); c.Close() }) }
		t.Cleanup(stop)
		stops = append(stops, stop)
		apis = append(apis, api.Addr().String())
	}
	return apis, func() {
		for _, s := range stops {
			s()
		}
	}
}

func startUnmanaged(t *testing.T, args ...string) *server.Server {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "off", "--namesrv-addr", "off",
		"--broker-addr", "127.0.0.1:0", "--grpc-addr", "off", "--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off", "--log-level", "error"}
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
	return srv
}

// Two brokers take their roles from a controller quorum: the first is
// promoted, the second replicates it and is reported in sync; sync sends
// are acknowledged; the master stops, and within the heartbeat timeout
// the replica is master of a new epoch holding every acknowledged
// message, and takes sends.
func TestControllerPromotesReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	ctls, _ := quorum(t, time.Second)
	flags := func(id string) []string {
		return []string{"--ha-controller", ctls[0] + "," + ctls[1] + "," + ctls[2], "--ha-broker-id", id, "--ha-addr", "127.0.0.1:0",
			"--ha-heartbeat-interval", "100ms", "--ha-replication", "sync", "--ha-ack-timeout", "3s"}
	}
	m := startUnmanaged(t, flags("1")...)
	mStopped := false
	defer func() {
		if !mStopped {
			m.Stop(context.Background())
		}
	}()
	eventually(t, "broker 1 master", func() bool { return m.Engine().Role() == engine.RoleMaster })
	r := start(t, flags("2")...)
	cl := controller.NewClient(ctls)
	ctx := context.Background()
	eventually(t, "broker 2 in the in-sync set", func() bool {
		g, err := cl.Heartbeat(ctx, controller.HeartbeatRequest{Group: "broker-a", BrokerID: 2})
		return err == nil && slices.Equal(g.SyncStateSet, []int64{1, 2})
	})
	if r.Engine().Role() != engine.RoleReplica {
		t.Fatal("broker 2 is not a replica")
	}
	if err := m.Engine().CreateTopic(meta.Topic{Name: "Orders", ReadQueues: 2, WriteQueues: 2, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	var acked []int64
	for i := range 50 {
		res, err := m.Engine().Send(ctx, &message.Message{Topic: "Orders", Body: fmt.Appendf(nil, "m-%d", i)})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		acked = append(acked, res.CommitLogOffset)
	}
	_, end := m.Engine().LogRange()

	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mStopped = true
	stopped := time.Now()
	eventually(t, "broker 2 master", func() bool { return r.Engine().Role() == engine.RoleMaster })
	t.Logf("failover %v after the master stopped", time.Since(stopped).Round(time.Millisecond))
	eps := r.Engine().Epochs()
	if last := eps[len(eps)-1]; last.Epoch != 2 || last.Start < end {
		t.Fatalf("broker 2's epochs %v: want epoch 2 starting at or past the old master's end %d", eps, end)
	}
	for i, off := range acked {
		msg, err := r.Engine().MessageAt(off)
		if err != nil || string(msg.Body) != fmt.Sprintf("m-%d", i) {
			t.Fatalf("acknowledged message %d (offset %d) is not on the new master: %v, %v", i, off, msg, err)
		}
	}
	// Alone in sync, the new master refuses sync sends (min 2 members).
	if _, err := r.Engine().Send(ctx, &message.Message{Topic: "Orders", Body: []byte("after")}); err == nil {
		t.Fatal("the new master acknowledged a sync send with no replica")
	}
}

// A master that hears nothing from the controller quorum for its lease
// stops taking writes, since the quorum may be electing another.
func TestControlledMasterStopsWithoutController(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	ctls, stopAll := quorum(t, 3*time.Second)
	m := start(t, "--ha-controller", strings.Join(ctls, ","), "--ha-broker-id", "1", "--ha-addr", "127.0.0.1:0",
		"--ha-heartbeat-interval", "100ms", "--ha-controller-lease", "1s")
	eventually(t, "broker 1 master", func() bool { return m.Engine().Role() == engine.RoleMaster })
	if err := m.Engine().CreateTopic(meta.Topic{Name: "T", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Engine().Send(context.Background(), &message.Message{Topic: "T", Body: []byte("x")}); err != nil {
		t.Fatalf("send to the master: %v", err)
	}
	// The lease runs from the last answered heartbeat, sent at most one
	// interval (100ms) before the controllers began to stop. Stopping
	// them takes a while under load, and the quorum may stop answering
	// when its first node goes: the time counts from the start.
	stopping := time.Now()
	stopAll()
	eventually(t, "broker 1 demoted", func() bool { return m.Engine().Role() == engine.RoleReplica })
	if took := time.Since(stopping); took < 900*time.Millisecond {
		t.Fatalf("demoted %v after the controllers began to stop, before the 1s lease", took)
	}
	if _, err := m.Engine().Send(context.Background(), &message.Message{Topic: "T", Body: []byte("y")}); !errors.Is(err, engine.ErrNotMaster) {
		t.Fatalf("send after the lease: %v, want ErrNotMaster", err)
	}
}

// A master that stops closes its watch connection: the controller
// replaces it at once, long before the heartbeat timeout (10 s here).
// Restarted, the old master returns as the new master's replica and is
// in sync again at the new epoch.
func TestControlledMasterRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	ctls, _ := quorum(t, 10*time.Second)
	dir := t.TempDir()
	flags := func(id string) []string {
		return []string{"--ha-controller", strings.Join(ctls, ","), "--ha-broker-id", id, "--ha-addr", "127.0.0.1:0",
			"--ha-heartbeat-interval", "100ms"}
	}
	m := startUnmanaged(t, append(flags("1"), "--data", dir)...)
	eventually(t, "broker 1 master", func() bool { return m.Engine().Role() == engine.RoleMaster })
	r := start(t, flags("2")...)
	cl := controller.NewClient(ctls)
	inSync := func(master int64, epoch int32) func() bool {
		return func() bool {
			g, err := cl.Heartbeat(context.Background(), controller.HeartbeatRequest{Group: "broker-a", BrokerID: 2})
			return err == nil && g.MasterID == master && g.MasterEpoch == epoch && slices.Equal(g.SyncStateSet, []int64{1, 2})
		}
	}
	eventually(t, "broker 2 in sync at epoch 1", inSync(1, 1))
	if err := m.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	eventually(t, "broker 2 master", func() bool { return r.Engine().Role() == engine.RoleMaster })
	if took := time.Since(stopped); took > 5*time.Second {
		t.Fatalf("broker 2 master %v after broker 1 stopped: the closed watch was not noticed", took)
	}
	m = startUnmanaged(t, append(flags("1"), "--data", dir)...)
	defer m.Stop(context.Background())
	var last controller.Group
	var lastErr error
	defer func() {
		if t.Failed() {
			t.Logf("last group %+v, %v", last, lastErr)
		}
	}()
	eventually(t, "broker 1 in sync with broker 2 at epoch 2", func() bool {
		last, lastErr = cl.Heartbeat(context.Background(), controller.HeartbeatRequest{Group: "broker-a", BrokerID: 1})
		return lastErr == nil && last.MasterID == 2 && last.MasterEpoch == 2 && slices.Equal(last.SyncStateSet, []int64{1, 2})
	})
	if m.Engine().Role() != engine.RoleReplica {
		t.Fatal("broker 1 is not a replica")
	}
}

// A group's only broker restarted finds its log already at the recorded
// epoch (nobody could replace it): it asks for a new election and is
// master again at the next epoch.
func TestControlledOnlyBrokerRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	ctls, _ := quorum(t, 10*time.Second)
	dir := t.TempDir()
	flags := []string{"--ha-controller", strings.Join(ctls, ","), "--ha-broker-id", "1", "--ha-addr", "127.0.0.1:0",
		"--ha-heartbeat-interval", "100ms", "--data", dir}
	m := startUnmanaged(t, flags...)
	eventually(t, "broker 1 master", func() bool { return m.Engine().Role() == engine.RoleMaster })
	if err := m.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	m = startUnmanaged(t, flags...)
	defer m.Stop(context.Background())
	eventually(t, "broker 1 master again", func() bool { return m.Engine().Role() == engine.RoleMaster })
	if eps := m.Engine().Epochs(); eps[len(eps)-1].Epoch != 2 {
		t.Fatalf("restarted master's epochs %v, want the last 2", eps)
	}
}
