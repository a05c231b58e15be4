//go:build !race && unix

package compat

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A master and a replica in sync replication, each a karman binary; the
// Go producer sends until the master is killed with SIGKILL; the replica
// is started again as the master (a failover by hand, without a
// controller; TestControllerFailoverLosesNoAcknowledgedMessage has the
// automatic one), and a Go consumer finds every acknowledged message on it.
// The old master then returns as a replica of the new one and copies its
// log, cutting back whatever only it held.
func TestFailoverByHandLosesNoAcknowledgedMessage(t *testing.T) {
	t.Parallel()
	const topic, group = "FailoverTopic", "failover-consumer"
	dirA, dirB := t.TempDir(), t.TempDir()
	haA, haB := freeAddr(t), freeAddr(t)
	a := startBinary(t, "--data", dirA, "--ha-role", "master", "--ha-addr", haA, "--ha-replication", "sync")
	b := startBinary(t, "--data", dirB, "--ha-role", "replica", "--ha-master", haA, "--broker-namesrv", a.namesrv)
	a.createTopic(topic, 4)
	// The replica learns it from its master's metadata, sent every second.
	pollUntil(t, "the topic on the replica", 30*time.Second, func() bool {
		resp := b.invoke(wire.GetAllTopicConfig, nil, nil)
		return resp.ResponseCode() == wire.Success && strings.Contains(string(resp.Body), `"`+topic+`"`)
	})

	acked, failed := sendUntilKilled(t, a.namesrv, "failover-producer", topic, a.kill)
	nAcked := len(acked)

	// The replica becomes the master.
	b.stop()
	b = startBinary(t, "--data", dirB, "--ha-role", "master", "--ha-addr", haB)
	b.waitRoute(topic)
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
	t.Logf("%d acknowledged before the kill, %d failed, %d consumed from the new master", nAcked, failed, got.distinct())

	// The new master takes writes; the old one returns as its replica
	// and ends up with the same queues.
	bp := b.producer()
	for i := range 50 {
		bp.send(primitive.NewMessage(topic, fmt.Appendf(nil, "after-%d", i)))
	}
	a = startBinary(t, "--data", dirA, "--ha-role", "replica", "--ha-master", haB, "--broker-namesrv", b.namesrv)
	// The new master's ends are read on each poll: an acknowledged send
	// is in the commit log, and its queue entry follows a moment later.
	var newEnds, oldEnds []int64
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("queue ends: new master %v, old master %v", newEnds, oldEnds)
		}
	})
	pollUntil(t, "the old master holding the new master's queues", time.Minute, func() bool {
		newEnds, oldEnds = b.queueEnds(topic, 4), a.queueEnds(topic, 4)
		for q := range newEnds {
			if oldEnds[q] != newEnds[q] {
				return false
			}
		}
		return true
	})
	t.Logf("queue ends on both: %v", newEnds)
	resp := a.invoke(wire.SendMessage, &wire.SendMessageRequestHeader{ProducerGroup: "g", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, BornTimestamp: time.Now().UnixMilli()}, []byte("to the old master"))
	if resp.ResponseCode() != wire.ServiceNotAvailable {
		t.Fatalf("a send to the old master, now a replica: %s %q, want SERVICE_NOT_AVAILABLE", resp.ResponseCode(), resp.Remark)
	}
}

// sendUntilKilled sends numbered messages to topic with a Go producer of
// group (no retries) until three sends fail, calling kill, beside the
// sends, once 300 were acknowledged; it returns, once kill did too, the
// bodies acknowledged and the failures.
func sendUntilKilled(t *testing.T, namesrv, group, topic string, kill func()) (acked map[string]bool, failed int) {
	t.Helper()
	p, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{namesrv}),
		producer.WithInstanceName(instance("producer")),
		producer.WithGroupName(group),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(2*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	acked = map[string]bool{}
	var killing sync.WaitGroup
	defer killing.Wait()
	killed := false
	for i := 0; failed < 3; i++ {
		if !killed && len(acked) >= 300 {
			// While sends go on, so that one may be in flight at the kill.
			killing.Go(kill)
			killed = true
		}
		body := fmt.Sprintf("order-%05d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		cancel()
		if err == nil && res.Status == primitive.SendOK {
			acked[body] = true
		} else {
			failed++
		}
	}
	if len(acked) < 300 {
		t.Fatalf("only %d sends acknowledged before the kill", len(acked))
	}
	return acked, failed
}
