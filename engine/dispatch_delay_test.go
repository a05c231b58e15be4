package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// An append after a quiet spell is indexed at once; one that follows a
// dispatch closely waits DispatchDelay for others. A close cuts the wait
// short and indexes what was appended.
func TestDispatchDelay(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, &Options{DispatchDelay: time.Hour})
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	if _, err := e.Send(ctx, newMsg("T", "a")); err != nil {
		t.Fatal(err)
	}
	quiet, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.WaitDispatched(quiet); err != nil {
		t.Fatalf("the first append after a quiet spell was not indexed at once: %v", err)
	}
	// The dispatch that indexed it reads on to the end of the log: let
	// it end, so that the next append comes after it, not during it.
	e.disp.runMu.Lock()
	e.disp.runMu.Unlock()
	if _, err := e.Send(ctx, newMsg("T", "b")); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := e.WaitDispatched(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitDispatched during the delay: %v, want a timeout", err)
	}
	start := time.Now()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Close took %v", d)
	}
	e = openTest(t, dir, &Options{DispatchDelay: -1})
	defer e.Close()
	if got := pullAll(t, e, "T", 0, 0, nil); len(got) != 2 || string(got[1].Body) != "b" {
		t.Fatalf("after reopening: %v", got)
	}
	if _, err := e.Send(ctx, newMsg("T", "c")); err != nil {
		t.Fatal(err)
	}
	if got := pullAll(t, e, "T", 0, 0, nil); len(got) != 3 {
		t.Fatalf("without a delay: %d messages", len(got))
	}
}

// A replica gathers replicated records for replicaDispatchDelay even
// when its DispatchDelay is shorter (the default): the first transfer
// after a quiet spell is indexed at once, the next waits; a close cuts
// the wait short.
func TestReplicaDispatchDelay(t *testing.T) {
	defer func(d time.Duration) { replicaDispatchDelay = d }(replicaDispatchDelay)
	replicaDispatchDelay = time.Hour
	ctx := context.Background()
	master := openTest(t, t.TempDir(), &Options{})
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mustTopic(t, master, "T", 1)
	replica := openTest(t, t.TempDir(), &Options{Replica: true})
	if _, err := master.Send(ctx, newMsg("T", "a")); err != nil {
		t.Fatal(err)
	}
	copyLog(t, master, replica) // waits until indexed
	replica.disp.runMu.Lock()   // let that dispatch end
	replica.disp.runMu.Unlock()
	if _, err := master.Send(ctx, newMsg("T", "b")); err != nil {
		t.Fatal(err)
	}
	if err := copyFrames(master, replica, nil); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := replica.WaitDispatched(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitDispatched on the replica during the delay: %v, want a timeout", err)
	}
	start := time.Now()
	if err := replica.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Close took %v", d)
	}
}
