package karmancmd

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/server"
)

func TestParsePeers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
		err  string
	}{
		{in: "c1=h1:1, c2=h2:2", want: map[string]string{"c1": "h1:1", "c2": "h2:2"}},
		{in: "", err: "none given"},
		{in: "c1", err: "want id=host:port"},
		{in: "=h:1", err: "want id=host:port"},
		{in: "c1=h:1,c1=h:2", err: "given twice"},
	} {
		got, err := parsePeers(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%q: %v, %v", tc.in, got, err)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: %s=%s, want %s", tc.in, k, got[k], v)
			}
		}
	}
}

// A one-node quorum started as "karman controller", or inside "karman
// namesrv --controller", answers brokers on its request address; a peer
// list without its own id is refused at start.
func TestControllerCommand(t *testing.T) {
	t.Run("controller", func(t *testing.T) { testControllerCommand(t, "controller") })
	t.Run("namesrv", func(t *testing.T) { testControllerCommand(t, "namesrv", "--controller", "--addr", "127.0.0.1:0") })
}

func testControllerCommand(t *testing.T, command ...string) {
	if testing.Short() {
		t.Skip("runs an election")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := ln.Addr().String()
	ln.Close() // the command binds it again

	reg := &server.Registry{}
	if command[0] == "namesrv" {
		reg = server.Default // with the standard modules, which admin_e2e_test.go imports
	}
	root := New(reg)
	root.SetOut(new(strings.Builder))
	root.SetErr(new(strings.Builder))
	root.SetArgs(append(slices.Clone(command), "--controller-id", "c9", "--controller-peers", "c1="+raftAddr, "--controller-addr", "127.0.0.1:0", "--data", t.TempDir()))
	if err := root.Execute(); !errors.Is(err, controller.ErrPeers) {
		t.Fatalf("an id outside the peers: %v, want ErrPeers", err)
	}

	r := startCommand(t, reg, append(slices.Clone(command), "--controller-id", "c1", "--controller-peers", "c1="+raftAddr,
		"--controller-addr", "127.0.0.1:0", "--data", t.TempDir(), "--broker-heartbeat-timeout", "2s", "--log-level", "warn")...)
	if command[0] == "namesrv" && r.addrs["namesrv"] == "" {
		t.Fatalf("no name server announced: %v", r.addrs)
	}
	cl := controller.NewClient([]string{r.addrs["controller"]})
	var g controller.Group
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err = cl.Register(context.Background(), controller.RegisterRequest{Cluster: "C", Group: "broker-a", BrokerID: 1, Addr: "h:1", HAAddr: "h:2"})
		if err == nil || !errors.Is(err, controller.ErrNotLeader) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || g.MasterID != 1 || g.MasterEpoch != 1 {
		t.Fatalf("register: %+v, %v", g, err)
	}
	for {
		// The new leader answers elections once it applied its log.
		g, err = cl.Elect(context.Background(), controller.ElectRequest{Group: "broker-a", BrokerID: 1})
		if err == nil || !errors.Is(err, controller.ErrNotLeader) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || g.MasterEpoch != 2 {
		t.Fatalf("elect: %+v, %v", g, err)
	}
	// A broker's watch connection, held until the node shuts down.
	watched := make(chan error, 1)
	go func() {
		watched <- cl.Watch(context.Background(), controller.WatchRequest{Group: "broker-a", BrokerID: 1})
	}()
	// GET /metrics on the request address: the node leads, holds the
	// watch, made one election on request, and holds the group at epoch 2.
	var body []byte
	deadline = time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + r.addrs["controller"] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "karman_controller_watches 1\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		"karman_controller_watches 1\n",
		"karman_controller_leader 1\n",
		`karman_controller_elections_total{group="broker-a",trigger="request"} 1` + "\n",
		`karman_controller_master_epoch{group="broker-a"} 2` + "\n",
		`karman_controller_in_sync_members{group="broker-a"} 1` + "\n",
		`karman_controller_members{group="broker-a"} 1` + "\n",
		"go_goroutines ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	// A graceful stop ends the watch instead of waiting for it.
	stopping := time.Now()
	if err := r.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if took := time.Since(stopping); took > 5*time.Second {
		t.Errorf("stopping with a watch open took %v", took)
	}
	if err := <-watched; err != nil {
		t.Errorf("the watch ended with %v, want nil (ended by the controller)", err)
	}
}

func TestNamesrvControllerFlagsNeedController(t *testing.T) {
	root := New(server.Default)
	root.SetOut(new(strings.Builder))
	root.SetErr(new(strings.Builder))
	root.SetArgs([]string{"namesrv", "--addr", "127.0.0.1:0", "--controller-id", "c1"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "add --controller") {
		t.Fatalf("a controller flag without --controller: %v", err)
	}
}
