package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/registry"
)

func halfMsg(body string) *message.Message {
	return newMsg("T", body, message.PropertyTransactionPrepared, "true", message.PropertyProducerGroup, "PG", message.PropertyKeys, "k-"+body)
}

// testConn is a registry.Conn for a producer the tests pretend is connected.
type testConn struct{ addr string }

func (c *testConn) RemoteAddr() string { return c.addr }

func txnEngine(t *testing.T, o *Options) *Engine {
	t.Helper()
	e := openTest(t, t.TempDir(), o)
	mustTopic(t, e, "T", 1)
	return e
}

func TestTransactionCommitAndRollback(t *testing.T) {
	e := txnEngine(t, nil)
	defer e.Close()
	ctx := context.Background()
	commit, err := e.Send(ctx, halfMsg("commit"))
	if err != nil {
		t.Fatal(err)
	}
	rollback, _ := e.Send(ctx, halfMsg("rollback"))
	e.WaitDispatched(ctx)
	if max, _ := e.MaxOffset("T", 0); max != 0 {
		t.Fatalf("half messages visible: %d", max)
	}
	req := EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: commit.CommitLogOffset, QueueOffset: commit.QueueOffset, Decision: Commit}
	if err := e.EndTransaction(ctx, req); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := e.EndTransaction(ctx, req); !errors.Is(err, ErrTransactionResolved) {
		t.Fatalf("second commit: %v", err)
	}
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "other", CommitLogOffset: rollback.CommitLogOffset, QueueOffset: -1, Decision: Commit}); !errors.Is(err, ErrTransactionGroup) {
		t.Fatalf("commit by another group: %v", err)
	}
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", MsgID: rollback.MsgID, QueueOffset: -1, Decision: Rollback}); err != nil {
		t.Fatalf("rollback by id: %v", err)
	}
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: 12345, QueueOffset: -1, Decision: Commit}); !errors.Is(err, ErrTransactionNotFound) {
		t.Fatalf("commit of nothing: %v", err)
	}
	got := waitMessages(t, e, "T", 0, 1, time.Second)
	m := got[0]
	if string(m.Body) != "commit" || m.UniqKey() != commit.MsgID || m.Keys()[0] != "k-commit" || m.Properties[message.PropertyTransactionPrepared] != "" {
		t.Fatalf("committed message: %+v", m)
	}
	time.Sleep(50 * time.Millisecond)
	if max, _ := e.MaxOffset("T", 0); max != 1 {
		t.Fatalf("rolled-back message delivered: queue holds %d", max)
	}
}

func TestTransactionChecks(t *testing.T) {
	e := txnEngine(t, &Options{TransactionTimeout: 50 * time.Millisecond, TransactionCheckInterval: 50 * time.Millisecond, TransactionCheckMax: 3, TransactionScanInterval: 10 * time.Millisecond})
	defer e.Close()
	ctx := context.Background()
	var mu sync.Mutex
	checks := map[string]int{}
	answers := map[string]Decision{"to-commit": Commit, "to-rollback": Rollback}
	e.SetTransactionChecker("test", func(ctx context.Context, p registry.ClientInfo, h HalfMessage) error {
		m, _, err := message.DecodeStored(h.Record)
		if err != nil || m.Topic != "T" {
			t.Errorf("check carries %v, %v", m, err)
			return err
		}
		mu.Lock()
		checks[string(m.Body)]++
		mu.Unlock()
		if d, ok := answers[string(m.Body)]; ok {
			go e.EndTransaction(context.Background(), EndTransactionRequest{ProducerGroup: h.ProducerGroup, CommitLogOffset: h.CommitLogOffset, QueueOffset: h.QueueOffset, Decision: d, FromCheck: true})
		}
		return nil
	})
	e.Clients().Heartbeat(registry.Heartbeat{Client: "producer-1", Protocol: "test", Conn: &testConn{"p1"}, Producers: []string{"PG"}})
	for _, b := range []string{"to-commit", "to-rollback", "silent"} {
		if _, err := e.Send(ctx, halfMsg(b)); err != nil {
			t.Fatal(err)
		}
	}
	got := waitMessages(t, e, "T", 0, 1, 5*time.Second)
	if string(got[0].Body) != "to-commit" {
		t.Fatalf("delivered %q", got[0].Body)
	}
	// The silent one is discarded after 3 checks and recorded.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if max, _ := e.MaxOffset(message.TopicTransCheckMaxTime, 0); max == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unanswered half message not discarded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if checks["silent"] != 3 {
		t.Fatalf("silent half message checked %d times, want 3", checks["silent"])
	}
	if checks["to-rollback"] < 1 {
		t.Fatal("to-rollback never checked")
	}
	if max, _ := e.MaxOffset("T", 0); max != 1 {
		t.Fatalf("queue holds %d", max)
	}
}

func TestMessageTypeCheck(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		typ  meta.MessageType
		m    *message.Message
		okay bool
	}{
		{meta.MessageTypeNormal, newMsg("N", "x"), true},
		{meta.MessageTypeNormal, newMsg("N", "x", message.PropertyDelayLevel, "1"), false},
		{meta.MessageTypeDelay, newMsg("D", "x", message.PropertyDelayLevel, "1"), true},
		{meta.MessageTypeDelay, newMsg("D", "x"), false},
		{meta.MessageTypeFIFO, newMsg("F", "x", message.PropertyShardingKey, "g"), true},
		{meta.MessageTypeFIFO, newMsg("F", "x"), false},
		{meta.MessageTypeTransaction, newMsg("X", "x", message.PropertyTransactionPrepared, "true", message.PropertyProducerGroup, "PG"), true},
		{meta.MessageTypeTransaction, newMsg("X", "x"), false},
		{meta.MessageTypeMixed, newMsg("M", "x", message.PropertyDelayLevel, "1"), true},
		{meta.MessageTypeUnspecified, newMsg("U", "x", message.PropertyShardingKey, "g"), true},
	} {
		e.CreateTopic(meta.Topic{Name: tt.m.Topic, ReadQueues: 1, WriteQueues: 1, MessageType: tt.typ})
		_, err := e.Send(ctx, tt.m)
		if tt.okay != (err == nil) || (err != nil && !errors.Is(err, ErrMessageTypeMismatch)) {
			t.Errorf("%s topic, props %v: %v", tt.typ, tt.m.Properties, err)
		}
	}
	if _, err := e.Send(ctx, newMsg("X", "x", message.PropertyTransactionPrepared, "true")); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("half message without a producer group: %v", err)
	}
}
