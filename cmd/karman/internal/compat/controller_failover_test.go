//go:build !race && unix

package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// startAux runs the karman binary with args (a command other than serve)
// until it prints "karman: ready", and returns the addresses it announced
// by name. The process is killed when the test ends.
func startAux(t *testing.T, args ...string) map[string]string {
	t.Helper()
	addrs, _ := startAuxProc(t, args...)
	return addrs
}

// startAuxProc is startAux that also returns the process, for a test to
// kill.
func startAuxProc(t *testing.T, args ...string) (map[string]string, *exec.Cmd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, karmanBinary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KARMAN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = 10 * time.Second
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); cancel() })
	addrs := map[string]string{}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := strings.TrimPrefix(lines.Text(), "karman: ")
		if name, addr, ok := strings.Cut(line, " listening on "); ok {
			addrs[name] = addr
		}
		if line == "ready" {
			go io.Copy(io.Discard, stdout)
			return addrs, cmd
		}
	}
	t.Fatalf("karman %s did not start\nstderr:\n%s", args[0], stderr.String())
	return nil, nil
}

// controllerGroup asks each controller in turn for its copy of a group.
func controllerGroup(apis []string, name string) (controller.Group, bool) {
	for _, a := range apis {
		resp, err := http.Get("http://" + a + "/v1/groups")
		if err != nil {
			continue
		}
		var gs []controller.Group
		err = json.NewDecoder(resp.Body).Decode(&gs)
		resp.Body.Close()
		if err != nil {
			continue
		}
		for _, g := range gs {
			if g.Name == name {
				return g, true
			}
		}
	}
	return controller.Group{}, false
}

// Three controllers, a name server, and two brokers of one group in sync
// replication that take their roles from the controllers, each a karman
// process. The Go producer sends until the master is killed with
// SIGKILL; the replica becomes master on its own within a few seconds, a
// Go consumer finds every acknowledged message on it, and the old
// master, started again, returns as its replica so that sync sends are
// acknowledged again.
func TestControllerFailoverLosesNoAcknowledgedMessage(t *testing.T) {
	t.Parallel()
	const topic, group = "CtlFailoverTopic", "ctl-failover-consumer"
	ns := startAux(t, "namesrv", "--addr", "127.0.0.1:0", "--log-level", "warn")["namesrv"]
	var peers, apis []string
	raft := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	for i, r := range raft {
		peers = append(peers, fmt.Sprintf("c%d=%s", i+1, r))
		apis = append(apis, freeAddr(t))
	}
	for i := range raft {
		startAux(t, "controller", "--controller-id", fmt.Sprintf("c%d", i+1), "--controller-peers", strings.Join(peers, ","),
			"--controller-addr", apis[i], "--data", t.TempDir(), "--broker-heartbeat-timeout", "2s", "--log-level", "warn")
	}
	dirA := t.TempDir()
	broker := func(id string, data string) []string {
		return []string{"--data", data, "--broker-namesrv", ns,
			"--ha-controller", strings.Join(apis, ","), "--ha-broker-id", id, "--ha-addr", freeAddr(t),
			"--ha-heartbeat-interval", "500ms", "--ha-controller-lease", "1s", "--ha-replication", "sync"}
	}
	a := startBinary(t, broker("1", dirA)...)
	pollUntil(t, "broker 1 master", 30*time.Second, func() bool {
		g, ok := controllerGroup(apis, "broker-a")
		return ok && g.MasterID == 1
	})
	b := startBinary(t, broker("2", t.TempDir())...)
	// Clients and the test's route checks go to the shared name server.
	a.namesrv, b.namesrv = ns, ns
	a.createTopic(topic, 4)
	pollUntil(t, "broker 2 in sync", 30*time.Second, func() bool {
		g, ok := controllerGroup(apis, "broker-a")
		return ok && fmt.Sprint(g.SyncStateSet) == "[1 2]"
	})
	pollUntil(t, "the topic on the replica", 30*time.Second, func() bool {
		resp := b.invoke(wire.GetAllTopicConfig, nil, nil)
		return resp.ResponseCode() == wire.Success && strings.Contains(string(resp.Body), `"`+topic+`"`)
	})

	var killed time.Time
	acked, failed := sendUntilKilled(t, ns, "ctl-failover-producer", topic, func() {
		a.kill()
		killed = time.Now()
	})
	pollUntil(t, "broker 2 elected master", 15*time.Second, func() bool {
		g, ok := controllerGroup(apis, "broker-a")
		return ok && g.MasterID == 2 && g.MasterEpoch == 2
	})
	failover := time.Since(killed)
	nAcked := len(acked)

	// A consumer that asks the name server now is routed to the new
	// master and finds every acknowledged message there.
	got := newReceived()
	c := b.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	got.waitFor(t, "every acknowledged message on the new master", time.Minute, func() bool {
		for body := range acked {
			if got.count(body) == 0 {
				return false
			}
		}
		return true
	})
	c.Shutdown()
	t.Logf("failover %v after the kill; %d acknowledged before it, %d failed, %d consumed from the new master",
		failover.Round(time.Millisecond), nAcked, failed, got.distinct())

	// The old master returns as a replica; once it is in sync, sync
	// sends to the new master are acknowledged again.
	startBinary(t, broker("1", dirA)...)
	pollUntil(t, "broker 1 in sync with broker 2", time.Minute, func() bool {
		g, ok := controllerGroup(apis, "broker-a")
		return ok && g.MasterID == 2 && fmt.Sprint(g.SyncStateSet) == "[1 2]"
	})
	bp := b.producer()
	bp.send(primitive.NewMessage(topic, []byte("after the failover")))
}
