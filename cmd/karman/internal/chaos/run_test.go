//go:build !race && unix

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// binaryEnv names a karman binary for the tests to run instead of
// building one.
const binaryEnv = "KARMAN_CHAOS_BINARY"

var built struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// karmanBinary returns the karman binary under test, built once per run
// unless binaryEnv names one.
func karmanBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(binaryEnv); bin != "" {
		return bin
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "karman-chaos-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "karman")
		if out, err := exec.Command("go", "build", "-o", built.path, "../..").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build karman: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// netns reports whether the tests run the cluster in namespaces: as root
// with ip they must (a failure to make them fails the test); otherwise
// they run on loopback.
func netns(t *testing.T) bool {
	err := NetnsSupport()
	if err != nil {
		t.Logf("loopback: %v", err)
	}
	return err == nil
}

// run runs one fault for a short while with sync replication and checks
// the goals: nothing acknowledged is lost, nothing is stored out of
// order, and the group serves writes again within maxFailover.
func run(t *testing.T, fault string, maxFailover time.Duration) *Result {
	t.Helper()
	cfg := Config{
		Fault:    fault,
		Cluster:  ClusterOptions{Binary: karmanBinary(t), Netns: netns(t), Replication: "sync", Log: t.Logf},
		Duration: 6 * time.Second,
	}
	if err := CheckFault(fault, cfg.Cluster.Netns); errors.Is(err, ErrNoNetns) {
		t.Skipf("%v (not root here, so no namespaces)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *res)
	if res.Acked < 100 {
		t.Errorf("only %d sends acknowledged", res.Acked)
	}
	if res.Lost != 0 || res.LostFinal != 0 {
		t.Errorf("%d acknowledged messages never consumed, %d not in the final read", res.Lost, res.LostFinal)
	}
	if res.OrderViolations != 0 {
		t.Errorf("%d per-key order violations", res.OrderViolations)
	}
	if res.FailoverMS < 0 || time.Duration(res.FailoverMS)*time.Millisecond > maxFailover {
		t.Errorf("failover %d ms, want at most %s", res.FailoverMS, maxFailover)
	}
	if res.RecoveryMS < 0 {
		t.Errorf("no send to %s acknowledged after the fault", Groups[0])
	}
	return res
}

// A master killed with SIGKILL: its replica is elected, the old master
// returns as its replica, and every acknowledged message is consumed.
func TestKillMaster(t *testing.T) { run(t, "kill-master", 5*time.Second) }

// A master stopped with SIGSTOP past the heartbeat timeout is replaced;
// resumed, it must not acknowledge what the group does not hold.
func TestPauseMaster(t *testing.T) { run(t, "pause-master", 10*time.Second) }

// A master cut off from the controllers and its replica stops
// acknowledging writes and is replaced.
func TestPartitionMaster(t *testing.T) { run(t, "partition-master", 10*time.Second) }

// The controller leader's process killed: the others elect a leader and
// the groups serve writes again.
func TestKillControllerLeader(t *testing.T) { run(t, "kill-controller-leader", 10*time.Second) }

// A replica whose commit log lost its tail returns shorter, copies what
// it lacks from the master, and nothing acknowledged is lost.
func TestTruncateReplica(t *testing.T) { run(t, "truncate-replica", 5*time.Second) }

// On loopback (every process on 127.0.0.1, as without root), a replica
// killed and restarted: the master acknowledges nothing while it is gone
// (two members must hold each message), and everything acknowledged
// before and after is consumed.
func TestKillReplicaOnLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Fault:    "kill-replica",
		Cluster:  ClusterOptions{Binary: karmanBinary(t), Replication: "sync", Log: t.Logf},
		Duration: 6 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *res)
	if res.Network != "loopback" || res.Acked < 100 || res.Lost != 0 || res.LostFinal != 0 || res.OrderViolations != 0 || res.RecoveryMS < 0 || res.FailoverMS < 0 {
		t.Errorf("want a loopback run with at least 100 sends acknowledged, none lost or out of order, and the group writable again")
	}
}

// Every chunk of the replication stream held 20 ms in the master's
// proxy: sync sends wait the longer, and nothing acknowledged is lost.
func TestDelayReplication(t *testing.T) {
	res := run(t, "delay-replication", 5*time.Second)
	if res.ProxiedLinks == 0 {
		t.Error("no replication connection went through the proxies")
	}
}

// The replication stream stalled and reset at random: the replica
// reconnects and catches up, and nothing acknowledged is lost.
func TestLossyReplication(t *testing.T) {
	res := run(t, "lossy-replication", 10*time.Second)
	if res.ProxiedLinks == 0 || res.Stalls+res.Resets == 0 {
		t.Errorf("%d links proxied, %d stalls and %d resets: want the faults injected", res.ProxiedLinks, res.Stalls, res.Resets)
	}
}
