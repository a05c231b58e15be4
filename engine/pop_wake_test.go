package engine

import (
	"context"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/meta"
)

// A pop already waiting when a message's invisible time is cut short must
// deliver the message when the new, earlier deadline passes, not when the
// deadline it saw before it started waiting does.
func TestPopWaitingSeesShortenedDeadline(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	sendN(t, e, 1)
	ctx := context.Background()
	got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("pop: %+v %v", got, err)
	}

	type result struct {
		ms  []PoppedMessage
		err error
	}
	waiting := make(chan result, 1)
	go func() {
		ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute, Wait: 30 * time.Second})
		waiting <- result{ms, err}
	}()
	// Give the second pop time to find nothing and start waiting; if it
	// has not yet, it sees the new deadline anyway.
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if _, err := e.ChangeInvisible(ctx, "G", got[0].Handle, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-waiting:
		if r.err != nil || len(r.ms) != 1 || r.ms[0].Attempt != 2 {
			t.Fatalf("redelivery: %+v %v", r.ms, r.err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("redelivered after %v, want about 200ms", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting pop slept through the shortened deadline")
	}
}
