package console

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// The history keeps the latest samples of each group, and forgets a
// group that is gone.
func TestLagHistory(t *testing.T) {
	e, err := engine.Open(t.TempDir(), &engine.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	open := true
	h := NewLagHistory(func(visit func(*engine.Engine)) bool {
		if open {
			visit(e)
		}
		return open
	}, time.Hour, 3)
	if err := e.CreateTopic(meta.Topic{Name: "T", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"G", "H"} {
		if err := e.CreateGroup(meta.Group{Name: g}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for i := range 5 {
		if _, err := e.Send(ctx, &message.Message{Topic: "T", Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitDispatched(ctx); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := e.CommitOffset("G", "T", 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		h.Sample()
	}
	got := h.Of("G")
	if len(got) != 3 || got[0].Lag != 3 || got[1].Lag != 4 || got[2].Lag != 5 || got[0].At > got[2].At {
		t.Fatalf("samples of G: %+v, want lags 3, 4, 5", got)
	}
	if got := h.Of("H"); len(got) != 3 || got[2].Lag != 0 {
		t.Fatalf("samples of H (no offsets, no subscription): %+v", got)
	}
	if err := e.DeleteGroup("H"); err != nil {
		t.Fatal(err)
	}
	h.Sample()
	if got := h.Of("H"); len(got) != 0 {
		t.Fatalf("a deleted group keeps samples: %+v", got)
	}
	if got := h.Of("G"); len(got) != 3 || got[2].Lag != 5 {
		t.Fatalf("samples of G after a fourth round: %+v", got)
	}
	// While the engine is closed, nothing is sampled and nothing lost.
	open = false
	h.Sample()
	if got := h.Of("G"); len(got) != 3 {
		t.Fatalf("samples of G with the engine closed: %+v", got)
	}
	// Run samples at once and stops with its context.
	run := NewLagHistory(func(visit func(*engine.Engine)) bool { visit(e); return true }, time.Hour, 0)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); run.Run(rctx) }()
	for deadline := time.Now().Add(10 * time.Second); len(run.Of("G")) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("Run took no sample")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

// BenchmarkLagSample is one round of the lag history over 1,000 groups,
// each with offsets in its own topic of 4 queues: what the server spends
// every 5 s.
func BenchmarkLagSample(b *testing.B) {
	e, err := engine.Open(b.TempDir(), &engine.Options{SegmentSize: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for i := range 1000 {
		topic, group := "topic-"+strconv.Itoa(i), "group-"+strconv.Itoa(i)
		if err := e.CreateTopic(meta.Topic{Name: topic, ReadQueues: 4, WriteQueues: 4, Perm: meta.PermRW}); err != nil {
			b.Fatal(err)
		}
		if err := e.CreateGroup(meta.Group{Name: group}); err != nil {
			b.Fatal(err)
		}
		for q := range int32(4) {
			if err := e.CommitOffset(group, topic, q, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	h := NewLagHistory(func(visit func(*engine.Engine)) bool { visit(e); return true }, 0, 0)
	b.ReportAllocs()
	for b.Loop() {
		h.Sample()
	}
}
