//go:build !race && unix

package compat

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// localTransactions answers for each message by its body: "commit" and
// "rollback" decide at once; "unknown-commit" and "unknown-rollback" leave
// it open and decide when the broker checks; "silent" never decides.
type localTransactions struct {
	mu     sync.Mutex
	checks map[string]int
}

func (l *localTransactions) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch string(m.Body) {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *localTransactions) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[string(m.Body)]++
	l.mu.Unlock()
	switch string(m.Body) {
	case "unknown-commit":
		return primitive.CommitMessageState
	case "unknown-rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *localTransactions) checked(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[body]
}

func TestTransactions(t *testing.T) {
	k := startKarman(t, "--transaction-timeout", "300ms", "--transaction-check-interval", "300ms", "--transaction-check-max", "3")
	const topic = "Transactions"
	k.createTopic(topic, 2)
	got := newReceived()
	k.pushConsumer("txn-consumer", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	local := &localTransactions{checks: map[string]int{}}
	tp, err := producer.NewTransactionProducer(local, producer.WithNameServer([]string{k.namesrv}),
		producer.WithGroupName("txn-producer"), producer.WithInstanceName(instance("txn")), producer.WithRetry(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown() })
	for _, body := range []string{"commit", "rollback", "unknown-commit", "unknown-rollback", "silent"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := tp.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)).WithKeys([]string{"k-" + body}))
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
	}
	got.waitFor(t, "the committed and the checked-then-committed messages", time.Minute, func() bool {
		return got.count("commit") == 1 && got.count("unknown-commit") == 1
	})
	// The silent one is checked at most --transaction-check-max times (a
	// check made before the producer's first heartbeat reaches nobody but
	// still counts), then discarded and recorded in
	// TRANS_CHECK_MAX_TIME_TOPIC; the rolled-back ones never arrive.
	deadline := time.Now().Add(time.Minute)
	for !discarded(k) {
		if time.Now().After(deadline) {
			t.Fatal("the silent transaction was never discarded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := local.checked("silent"); n < 1 || n > 3 {
		t.Fatalf("the silent transaction was checked %d times, want 1 to 3", n)
	}
	if local.checked("unknown-rollback") == 0 {
		t.Fatal("unknown-rollback was never checked")
	}
	// A normal message sent last proves nothing else is on its way.
	k.producer().send(primitive.NewMessage(topic, []byte("last")))
	got.waitFor(t, "the last message", time.Minute, func() bool { return got.count("last") == 1 })
	for _, body := range []string{"rollback", "unknown-rollback", "silent"} {
		if got.count(body) != 0 {
			t.Errorf("%s was delivered", body)
		}
	}
	if got.count("commit") != 1 || got.count("unknown-commit") != 1 {
		t.Errorf("committed messages delivered %d and %d times", got.count("commit"), got.count("unknown-commit"))
	}
	for _, m := range got.msgs {
		if strings.HasPrefix(string(m.Body), "k-") || (string(m.Body) != "last" && m.GetKeys() != "k-"+string(m.Body)) {
			t.Errorf("message %s lost its keys: %q", m.Body, m.GetKeys())
		}
	}
}

// discarded reports whether the broker has recorded one discarded half
// message.
func discarded(k *karman) bool {
	resp := k.invoke(wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: "TRANS_CHECK_MAX_TIME_TOPIC", Committed: true}, nil)
	return resp.ResponseCode() == wire.Success && resp.ExtFields["offset"] == "1"
}

func TestDelayLevels(t *testing.T) {
	k := startKarman(t)
	const topic = "Delayed"
	k.createTopic(topic, 1)
	got := newReceived()
	arrived := map[string]time.Time{}
	var mu sync.Mutex
	k.pushConsumer("delay-consumer", topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		mu.Lock()
		for _, m := range msgs {
			arrived[string(m.Body)] = time.Now()
		}
		mu.Unlock()
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	p := k.producer()
	delays := map[string]time.Duration{"level-1": time.Second, "level-2": 5 * time.Second, "level-3": 10 * time.Second}
	sent := map[string]time.Time{}
	for level, body := range []string{"level-1", "level-2", "level-3"} {
		sent[body] = time.Now()
		p.send(primitive.NewMessage(topic, []byte(body)).WithDelayTimeLevel(level + 1))
	}
	got.waitFor(t, "the delayed messages", time.Minute, func() bool { return got.distinct() == 3 })
	mu.Lock()
	defer mu.Unlock()
	for body, d := range delays {
		took := arrived[body].Sub(sent[body])
		if took < d {
			t.Errorf("%s arrived after %s, before its %s delay", body, took, d)
		}
		if took > d+3*time.Second {
			t.Errorf("%s arrived after %s, long after its %s delay", body, took, d)
		}
	}
}
