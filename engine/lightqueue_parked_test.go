package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
)

// TestLightQueuesOfParkedMessages checks that a half or timer message
// naming light queues reaches them once, when it becomes visible in its
// topic (committed, or due), and not while it waits.
func TestLightQueuesOfParkedMessages(t *testing.T) {
	e := txnEngine(t, nil)
	defer e.Close()
	ctx := context.Background()

	half := halfMsg("half")
	half.SetProperty(message.PropertyInnerMultiDispatch, "%LMQ%half")
	res, err := e.Send(ctx, half)
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(300 * time.Millisecond)
	if _, err := e.Send(ctx, newMsg("T", "timer", message.PropertyTimerDeliverMS, strconv.FormatInt(due.UnixMilli(), 10),
		message.PropertyInnerMultiDispatch, "%LMQ%timer")); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	for _, lmq := range []string{"%LMQ%half", "%LMQ%timer"} {
		if n, err := e.MaxOffset(lmq, 0); err == nil && n != 0 {
			t.Fatalf("%s holds %d messages before its message is visible", lmq, n)
		}
	}

	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: res.CommitLogOffset, QueueOffset: res.QueueOffset, Decision: Commit}); err != nil {
		t.Fatal(err)
	}
	waitMessages(t, e, "T", 0, 2, 5*time.Second) // the committed one and the timer one
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	for lmq, body := range map[string]string{"%LMQ%half": "half", "%LMQ%timer": "timer"} {
		got := pullAll(t, e, lmq, 0, 0, nil)
		if len(got) != 1 || string(got[0].Body) != body {
			t.Errorf("%s holds %d messages, want %q once", lmq, len(got), body)
		}
	}
}

// Reading light queues that never held a message, by names nobody
// writes to, leaves no state behind; waiting on one keeps its state, so
// that the waiter hears of the first message.
func TestLightQueueLookupsLeaveNothing(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	for i := range 100 {
		name := fmt.Sprintf("%%LMQ%%nobody-%d", i)
		if max, err := e.MaxOffset(name, 0); err != nil || max != 0 {
			t.Fatalf("MaxOffset(%s) = %d, %v", name, max, err)
		}
		if res, err := e.Pull(context.Background(), name, 0, 0, 32, nil); err != nil || len(res.Records) != 0 {
			t.Fatalf("Pull(%s) = %v", name, err)
		}
	}
	n := 0
	e.lmqs.Range(func(_, _ any) bool { n++; return true })
	if n != 0 {
		t.Fatalf("%d light-queue states kept after lookups", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := e.WaitForArrival(ctx, "%LMQ%waited", 0, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForArrival = %v", err)
	}
	if _, ok := e.lmqs.Load("%LMQ%waited"); !ok {
		t.Fatal("the state a reader waited on was not kept")
	}
}
