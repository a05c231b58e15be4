package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type node struct {
	c   *Controller
	api string
	srv *http.Server
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// quorum starts n controllers on loopback ports picked at run time, each
// with its request API served.
func quorum(t *testing.T, n int, hbTimeout time.Duration) []*node {
	t.Helper()
	peers := map[string]string{}
	var lns []net.Listener
	for i := range n {
		ln := listen(t)
		lns = append(lns, ln)
		peers[fmt.Sprintf("c%d", i+1)] = ln.Addr().String()
	}
	var nodes []*node
	for i := range n {
		c, err := Open(Options{ID: fmt.Sprintf("c%d", i+1), Peers: peers, Dir: t.TempDir(), Listener: lns[i],
			HeartbeatTimeout: hbTimeout, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		api := listen(t)
		srv := &http.Server{Handler: c.Handler()}
		go srv.Serve(api)
		nd := &node{c: c, api: api.Addr().String(), srv: srv}
		nodes = append(nodes, nd)
		t.Cleanup(func() { nd.stop(t) })
	}
	return nodes
}

func (n *node) stop(t *testing.T) {
	n.srv.Close()
	if err := n.c.Close(); err != nil {
		t.Errorf("close %s: %v", n.c.opts.ID, err)
	}
}

// leader waits for the node that leads and answers requests.
func leader(t *testing.T, nodes []*node) *node {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			// ready: it leads and has applied the log, so it answers.
			if n.c.ready() {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader within 15s")
	return nil
}

func apis(nodes []*node) []string {
	var a []string
	for _, n := range nodes {
		a = append(a, n.api)
	}
	return a
}

// waitGroup polls a node's copy of a group until ok holds.
func waitGroup(t *testing.T, c *Client, within time.Duration, what string, ok func(Group) bool) Group {
	t.Helper()
	deadline := time.Now().Add(within)
	var (
		g   Group
		err error
	)
	for time.Now().Before(deadline) {
		// A heartbeat from an unknown id fails; the group comes with
		// a member's.
		g, err = c.Heartbeat(context.Background(), HeartbeatRequest{Group: "broker-a", BrokerID: 3, Epoch: 1, MaxOffset: 900})
		if err == nil && ok(g) {
			return g
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v: last %+v, %v", what, within, g, err)
	return g
}

// beater sends a broker's heartbeats until stopped.
type beater struct {
	stop chan struct{}
	once sync.Once
	done sync.WaitGroup
}

func heartbeats(c *Client, r HeartbeatRequest) *beater {
	b := &beater{stop: make(chan struct{})}
	b.done.Add(1)
	go func() {
		defer b.done.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			c.Heartbeat(context.Background(), r)
			select {
			case <-b.stop:
				return
			case <-t.C:
			}
		}
	}()
	return b
}

func (b *beater) halt() { b.once.Do(func() { close(b.stop) }); b.done.Wait() }

func TestQuorumRegisterElectFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	nodes := quorum(t, 3, time.Second)
	lead := leader(t, nodes)
	cl := NewClient(apis(nodes))
	ctx := context.Background()

	// A follower refuses writes; the client finds the leader itself.
	for _, n := range nodes {
		if n != lead {
			_, err := n.c.Register(RegisterRequest{Cluster: "C", Group: "broker-a", BrokerID: 1, Addr: "h:1", HAAddr: "h:2"})
			if !errors.Is(err, ErrNotLeader) {
				t.Fatalf("follower %s answered a register with %v", n.c.opts.ID, err)
			}
		}
	}
	for id := int64(1); id <= 3; id++ {
		g, err := cl.Register(ctx, RegisterRequest{Cluster: "C", Group: "broker-a", BrokerID: id,
			Addr: fmt.Sprintf("10.0.0.%d:10911", id), HAAddr: fmt.Sprintf("10.0.0.%d:10912", id)})
		if err != nil {
			t.Fatal(err)
		}
		if g.MasterID != 1 || g.MasterEpoch != 1 {
			t.Fatalf("after registering %d: master %d epoch %d, want 1 at 1", id, g.MasterID, g.MasterEpoch)
		}
	}
	if _, err := cl.Register(ctx, RegisterRequest{Cluster: "D", Group: "broker-a", BrokerID: 4, Addr: "h:1", HAAddr: "h:2"}); !errors.Is(err, ErrMismatch) {
		t.Fatalf("a broker of another cluster: %v, want ErrMismatch", err)
	}
	b1 := heartbeats(cl, HeartbeatRequest{Group: "broker-a", BrokerID: 1, Epoch: 1, MaxOffset: 500})
	b2 := heartbeats(cl, HeartbeatRequest{Group: "broker-a", BrokerID: 2, Epoch: 1, MaxOffset: 400})
	defer b2.halt()
	if g, err := cl.AlterSyncStateSet(ctx, AlterSyncStateSetRequest{Group: "broker-a", MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{1, 2}}); err != nil || g.SyncStateSetEpoch != 2 {
		t.Fatalf("master's in-sync report: %+v, %v", g, err)
	}
	// The master dies: its heartbeats stop. Broker 3 has the longest log
	// but is not in sync; 2 is elected, at epoch 2.
	b1.halt()
	stopped := time.Now()
	g := waitGroup(t, cl, 5*time.Second, "failover to 2", func(g Group) bool { return g.MasterID == 2 })
	if g.MasterEpoch != 2 || fmt.Sprint(g.SyncStateSet) != "[2]" {
		t.Fatalf("after failover: %+v, want master 2 at epoch 2 with in-sync set [2]", g)
	}
	if took := time.Since(stopped); took < time.Second {
		t.Fatalf("failover %v after the last heartbeat, before the 1s timeout", took)
	}
	// The old master, back, is fenced: it cannot report for epoch 1.
	if _, err := cl.AlterSyncStateSet(ctx, AlterSyncStateSetRequest{Group: "broker-a", MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{1, 2}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale master's report: %v, want ErrFenced", err)
	}
	// 3 is not in sync, so a manual election keeps 2 (at a new epoch).
	if g, err := cl.Elect(ctx, ElectRequest{Group: "broker-a", BrokerID: 3}); err != nil || g.MasterID != 2 || g.MasterEpoch != 3 {
		t.Fatalf("elect preferring out-of-sync 3: %+v, %v; want 2 at epoch 3", g, err)
	}

	// The leader counted one election for the lost heartbeat and one
	// asked for; the followers none.
	if m := lead.c.Metrics(); !m.Leader || fmt.Sprint(m.Elections) != "[{broker-a heartbeat 1} {broker-a request 1}]" {
		t.Fatalf("leader's metrics %+v, want one election by heartbeat and one by request", m)
	}
	for _, n := range nodes {
		if m := n.c.Metrics(); n != lead && (m.Leader || len(m.Elections) != 0) {
			t.Fatalf("follower %s's metrics %+v", n.c.opts.ID, m)
		}
	}

	// The controller leader goes away; the two others elect a leader and
	// carry on with the same record.
	lead.stop(t)
	var rest []*node
	for _, n := range nodes {
		if n != lead {
			rest = append(rest, n)
		}
	}
	newLead := leader(t, rest)
	if newLead == lead {
		t.Fatal("the stopped leader still leads")
	}
	g = waitGroup(t, cl, 10*time.Second, "the record on the new leader", func(g Group) bool { return true })
	if g.MasterID != 2 || g.MasterEpoch != 3 || len(g.Members) != 3 {
		t.Fatalf("on the new leader: %+v, want master 2 at epoch 3 and 3 members", g)
	}
	if _, err := cl.AlterSyncStateSet(ctx, AlterSyncStateSetRequest{Group: "broker-a", MasterID: 2, MasterEpoch: 3, SyncStateSet: []int64{2, 3}}); err != nil {
		t.Fatal(err)
	}
	// Master 2 dies too: the new leader replaces it with 3, now in sync.
	b2.halt()
	g = waitGroup(t, cl, 5*time.Second, "failover to 3", func(g Group) bool { return g.MasterID == 3 })
	if g.MasterEpoch != 4 {
		t.Fatalf("second failover: %+v, want epoch 4", g)
	}
	if m := newLead.c.Metrics(); fmt.Sprint(m.Elections) != "[{broker-a heartbeat 1}]" {
		t.Fatalf("new leader's metrics %+v, want the one election it made", m)
	}
	for _, n := range rest {
		deadline := time.Now().Add(5 * time.Second)
		for {
			g, err := n.c.Group("broker-a")
			if err == nil && g.MasterEpoch == 4 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s holds %+v, %v", n.c.opts.ID, g, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// A controller restarted on its directory keeps its record; one started
// with a peer list other than the stored one is refused.
func TestRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	dir := t.TempDir()
	ln := listen(t)
	addr := ln.Addr().String()
	open := func(ln net.Listener, peers map[string]string) (*Controller, error) {
		return Open(Options{ID: "c1", Peers: peers, Dir: dir, Listener: ln, Logger: quiet()})
	}
	c, err := open(ln, map[string]string{"c1": addr})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = c.Register(RegisterRequest{Cluster: "C", Group: "broker-a", BrokerID: 1, Addr: "h:1", HAAddr: "h:2"})
		if err == nil || !errors.Is(err, ErrNotLeader) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	// One group is in a snapshot, the other only in the log after it.
	if err := c.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(RegisterRequest{Cluster: "C", Group: "broker-b", BrokerID: 2, Addr: "h:3", HAAddr: "h:4"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	ln = listen(t)
	if _, err := open(ln, map[string]string{"c1": addr, "c2": "127.0.0.1:1"}); !errors.Is(err, ErrPeers) {
		t.Fatalf("restart with another peer list: %v, want ErrPeers", err)
	}
	ln.Close()

	c, err = open(nil, map[string]string{"c1": addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Raft applies the log again once the quorum (here: itself) commits.
	var g Group
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if g, err = c.Group("broker-a"); err == nil {
			break
		}
	}
	if err != nil || g.MasterID != 1 || g.MasterEpoch != 1 {
		t.Fatalf("after restart: %+v, %v", g, err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if g, err = c.Group("broker-b"); err == nil {
			break
		}
	}
	if err != nil || g.MasterID != 2 {
		t.Fatalf("broker-b after restart: %+v, %v", g, err)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"no id", Options{Peers: map[string]string{"c1": "127.0.0.1:1"}, Dir: "d"}},
		{"id not a peer", Options{ID: "c9", Peers: map[string]string{"c1": "127.0.0.1:1"}, Dir: "d"}},
		{"bad address", Options{ID: "c1", Peers: map[string]string{"c1": "nowhere"}, Dir: "d"}},
		{"shared address", Options{ID: "c1", Peers: map[string]string{"c1": "127.0.0.1:1", "c2": "127.0.0.1:1"}, Dir: "d"}},
	} {
		if _, err := Open(tc.opts); !errors.Is(err, ErrPeers) {
			t.Errorf("%s: %v, want ErrPeers", tc.name, err)
		}
	}
}

// A master whose watch connection closes counts as dead at once: the
// leader elects its in-sync replica long before the heartbeat timeout. A
// watch the leader ends itself (it stops leading, or the watch's time is
// up) changes nothing.
func TestWatchClosedFailsOverAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	nodes := quorum(t, 3, 20*time.Second)
	lead := leader(t, nodes)
	cl := NewClient(apis(nodes))
	ctx := context.Background()
	for id := int64(1); id <= 3; id++ { // 3: the one waitGroup beats for
		if _, err := cl.Register(ctx, RegisterRequest{Cluster: "C", Group: "broker-a", BrokerID: id,
			Addr: fmt.Sprintf("10.0.0.%d:10911", id), HAAddr: fmt.Sprintf("10.0.0.%d:10912", id)}); err != nil {
			t.Fatal(err)
		}
	}
	b1 := heartbeats(cl, HeartbeatRequest{Group: "broker-a", BrokerID: 1, Epoch: 1, MaxOffset: 500})
	b2 := heartbeats(cl, HeartbeatRequest{Group: "broker-a", BrokerID: 2, Epoch: 1, MaxOffset: 500})
	defer b2.halt()
	if _, err := cl.AlterSyncStateSet(ctx, AlterSyncStateSetRequest{Group: "broker-a", MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Watch(ctx, WatchRequest{Group: "broker-a", BrokerID: 9}); !errors.Is(err, ErrUnknownBroker) {
		t.Fatalf("watch of an unknown broker: %v, want ErrUnknownBroker", err)
	}

	wctx, cancel := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- cl.Watch(wctx, WatchRequest{Group: "broker-a", BrokerID: 1}) }()
	key := beatKey{"broker-a", 1}
	deadline := time.Now().Add(5 * time.Second)
	for {
		lead.c.mu.Lock()
		n := lead.c.watches[key]
		lead.c.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader never held the watch")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The master's process dies: its heartbeats stop and its connection
	// closes.
	b1.halt()
	cancel()
	closed := time.Now()
	g := waitGroup(t, cl, 5*time.Second, "failover to 2", func(g Group) bool { return g.MasterID == 2 })
	if g.MasterEpoch != 2 {
		t.Fatalf("after the watch closed: %+v, want 2 at epoch 2", g)
	}
	took := time.Since(closed)
	if err := <-watched; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled watch returned %v", err)
	}
	t.Logf("failover %v after the watch closed (heartbeat timeout 20s)", took.Round(time.Millisecond))

	// A heartbeat after the closure counts: broker 1, alive after all,
	// may be elected again.
	b1 = heartbeats(cl, HeartbeatRequest{Group: "broker-a", BrokerID: 1, Epoch: 2, MaxOffset: 600})
	defer b1.halt()
	if _, err := cl.AlterSyncStateSet(ctx, AlterSyncStateSetRequest{Group: "broker-a", MasterID: 2, MasterEpoch: 2, SyncStateSet: []int64{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if g, err := cl.Elect(ctx, ElectRequest{Group: "broker-a", BrokerID: 1}); err != nil || g.MasterID != 1 {
		t.Fatalf("electing 1 after its heartbeat resumed: %+v, %v", g, err)
	}
}

// A controller started with a peer list that differs from its quorum's
// (here c3 has another address for c2) learns the quorum's list from the
// leader, logs the difference once, says it in its status and refuses
// brokers' requests with ErrPeers; the leader goes on serving.
func TestPeerListMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	lns := []net.Listener{listen(t), listen(t), listen(t)}
	peers := map[string]string{}
	for i, ln := range lns {
		peers[fmt.Sprintf("c%d", i+1)] = ln.Addr().String()
	}
	wrong := maps.Clone(peers)
	stray := listen(t) // an address nobody serves raft on
	wrong["c2"] = stray.Addr().String()
	stray.Close()

	var logs syncBuffer
	var nodes []*node
	start := func(i int, p map[string]string, log *slog.Logger) *node {
		c, err := Open(Options{ID: fmt.Sprintf("c%d", i+1), Peers: p, Dir: t.TempDir(), Listener: lns[i], Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		api := listen(t)
		srv := &http.Server{Handler: c.Handler()}
		go srv.Serve(api)
		nd := &node{c: c, api: api.Addr().String(), srv: srv}
		t.Cleanup(func() { nd.stop(t) })
		return nd
	}
	// c1 and c2 agree and elect a leader between them; c3 joins later.
	nodes = append(nodes, start(0, peers, quiet()), start(1, peers, quiet()))
	lead := leader(t, nodes)
	c3 := start(2, wrong, slog.New(slog.NewTextHandler(&logs, nil)))

	deadline := time.Now().Add(15 * time.Second)
	for c3.c.peersErr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("c3 never noticed its peer list differs from the quorum's")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := strings.Count(logs.String(), "peer lists do not match"); n != 1 {
		t.Fatalf("the difference is logged %d times, want once:\n%s", n, logs.String())
	}
	resp, err := http.Get("http://" + c3.api + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || !strings.Contains(st.PeersMismatch, "c2="+peers["c2"]) {
		t.Fatalf("c3's status %+v (%v) does not name the quorum's list", st, err)
	}
	// c3 refuses brokers' requests, with the reason, through the client.
	if _, err := NewClient([]string{c3.api}).Heartbeat(context.Background(), HeartbeatRequest{Group: "broker-a", BrokerID: 1}); !errors.Is(err, ErrPeers) && !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a heartbeat to c3: %v, want ErrPeers or ErrNotLeader", err)
	}
	if _, err := c3.c.Register(RegisterRequest{Cluster: "C", Group: "broker-a", BrokerID: 1, Addr: "h:1", HAAddr: "h:2"}); !errors.Is(err, ErrPeers) && !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a registration at c3: %v", err)
	}
	// The leader, whose list is the quorum's, serves.
	if lead.c.peersErr() != nil {
		t.Fatalf("the leader refuses: %v", lead.c.peersErr())
	}
	if _, err := lead.c.Register(RegisterRequest{Cluster: "C", Group: "broker-a", BrokerID: 1, Addr: "h:1", HAAddr: "h:2"}); err != nil {
		t.Fatalf("a registration at the leader: %v", err)
	}
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
