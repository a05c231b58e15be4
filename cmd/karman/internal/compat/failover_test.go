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

	p, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{a.namesrv}),
		producer.WithInstanceName(instance("producer")),
		producer.WithGroupName("failover-producer"),
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
	var mu sync.Mutex
	acked := map[string]bool{}
	var failed int
	sent := make(chan int, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			body := fmt.Sprintf("order-%05d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
			cancel()
			mu.Lock()
			if err == nil && res.Status == primitive.SendOK {
				acked[body] = true
			} else {
				failed++
			}
			n, f := len(acked), failed
			mu.Unlock()
			select {
			case sent <- n:
			default:
			}
			if f >= 3 { // the master is gone
				return
			}
		}
	}()
	// Kill the master after a few hundred acknowledged sends.
	for n := range sent {
		if n >= 300 {
			break
		}
	}
	a.kill()
	<-done
	mu.Lock()
	nAcked := len(acked)
	mu.Unlock()
	if nAcked < 300 {
		t.Fatalf("only %d sends acknowledged before the kill", nAcked)
	}

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
		mu.Lock()
		defer mu.Unlock()
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
