package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// confirmAt is a Replicator whose replicas hold the log below at.
type confirmAt struct{ at atomic.Int64 }

func (c *confirmAt) CheckWrite() error                           { return nil }
func (c *confirmAt) WaitReplicated(context.Context, int64) error { return nil }
func (c *confirmAt) Confirmed(end int64) int64                   { return min(end, c.at.Load()) }

// A master that waits for replicas lets consumers read only what they
// hold: a message read is one the next master has. A demoted master keeps
// its unconfirmed tail unread; promoted again, its log is the group's.
func TestMasterReadsOnlyWhatReplicasHold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &confirmAt{}
	e := openTest(t, t.TempDir(), &Options{Replicator: r})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	readable := func() int64 {
		t.Helper()
		// One dispatch round now, so the answer is not a race with the
		// dispatcher's goroutine.
		if err := e.disp.dispatchLocked(); err != nil {
			t.Fatal(err)
		}
		n, err := e.MaxOffset("T", 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	confirmAll := func() {
		_, end := e.LogRange()
		r.at.Store(end)
		e.ReplicasAcked()
	}

	if _, err := e.Send(ctx, newMsg("T", "held by the replicas")); err != nil {
		t.Fatal(err)
	}
	if n := readable(); n != 0 {
		t.Fatalf("%d messages readable before any replica holds them", n)
	}
	confirmAll()
	if err := e.WaitForArrival(ctx, "T", 0, 0); err != nil {
		t.Fatalf("the confirmed message never became readable: %v", err)
	}

	if _, err := e.Send(ctx, newMsg("T", "on the master alone")); err != nil {
		t.Fatal(err)
	}
	if n := readable(); n != 1 {
		t.Fatalf("queue end %d with the second message unconfirmed, want 1", n)
	}
	res, err := e.Pull(ctx, "T", 0, 1, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 0 {
		t.Fatalf("pulled %d unconfirmed messages", len(res.Records))
	}

	// Demoted with the tail unconfirmed: still unread.
	if err := e.Demote(); err != nil {
		t.Fatal(err)
	}
	if n := readable(); n != 1 {
		t.Fatalf("queue end %d on the demoted master, want 1", n)
	}
	// Promoted again (the group elected it), its whole log counts.
	if err := e.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := readable(); n != 2 {
		t.Fatalf("queue end %d after promotion, want 2", n)
	}
}

// waiting is a Replicator that says whether it waits.
type waiting struct {
	confirmAt
	waits bool
}

func (w *waiting) Waits() bool { return w.waits }

// Front-ends hand a send off to another goroutine only when the
// Replicator may make it wait: not without one, not for one that says it
// never waits (an async master), and for one that says nothing.
func TestWaitsForReplicas(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Replicator
		want bool
	}{
		{"none", nil, false},
		{"silent", &confirmAt{}, true},
		{"never waits", &waiting{waits: false}, false},
		{"waits", &waiting{waits: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openTest(t, t.TempDir(), &Options{Replicator: tc.r})
			defer e.Close()
			if got := e.WaitsForReplicas(); got != tc.want {
				t.Fatalf("WaitsForReplicas() = %v, want %v", got, tc.want)
			}
		})
	}
}
