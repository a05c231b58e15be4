package registry

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

func recv(t *testing.T, ch <-chan Change) Change {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no change delivered")
	}
	panic("unreachable")
}

// drain reads until the channel has been quiet for a while.
func drain(ch <-chan Change) []Change {
	var out []Change
	for {
		select {
		case c := <-ch:
			out = append(out, c)
		case <-time.After(100 * time.Millisecond):
			return out
		}
	}
}

func TestWatchDeliversChanges(t *testing.T) {
	clock := newFakeClock()
	r := newTestRegistry(clock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.Watch(ctx)

	ca := &testConn{"a"}
	r.Heartbeat(consumerHB("A", ca, "g", tagSub("T", "*", 1)))
	r.Heartbeat(consumerHB("A", ca, "g", tagSub("T", "*", 1))) // no change
	clock.Advance(time.Minute)
	r.Heartbeat(consumerHB("B", nil, "g", tagSub("T", "*", 1)))
	r.Heartbeat(consumerHB("B", nil, "g", tagSub("T", "x", 2)))
	r.Disconnect(ca)
	clock.Advance(121 * time.Second)
	r.Expire()

	want := []Change{
		{Group: "g", Kind: Joined, Client: "A"},
		{Group: "g", Kind: SubscriptionChanged, Client: "A", Topic: "T"},
		{Group: "g", Kind: Joined, Client: "B"},
		{Group: "g", Kind: SubscriptionChanged, Client: "B", Topic: "T"},
		{Group: "g", Kind: Left, Client: "A"},
		{Group: "g", Kind: Left, Client: "B"},
	}
	for i, w := range want {
		if got := recv(t, ch); got != w {
			t.Fatalf("change %d: %v, want %v", i, got, w)
		}
	}
	if extra := drain(ch); len(extra) != 0 {
		t.Fatalf("unexpected changes: %v", extra)
	}
}

func TestWatchNeverBlocks(t *testing.T) {
	const backlog = 8
	r := New(Options{WatchBacklog: backlog, Now: newFakeClock().Now})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.Watch(ctx) // nobody reads for now

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3000 {
			group := fmt.Sprintf("g%d", i%3)
			r.Heartbeat(consumerHB(ClientID(fmt.Sprint(i)), nil, group))
			r.Unregister(ClientID(fmt.Sprint(i)), "", "")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("registry blocked on a watcher that does not read")
	}

	// The backlog (plus the one change the watcher's goroutine may hold)
	// arrives as is, then one Resync per group, then nothing.
	plain := 0
	c := recv(t, ch)
	for ; c.Kind != Resync; c = recv(t, ch) {
		plain++
	}
	if plain < backlog || plain > backlog+1 {
		t.Fatalf("%d changes before the first Resync, want %d or %d", plain, backlog, backlog+1)
	}
	resyncs := map[string]int{c.Group: 1}
	for len(resyncs) < 3 {
		c := recv(t, ch)
		if c.Kind != Resync || c.Client != "" || resyncs[c.Group] != 0 {
			t.Fatalf("after overflow: %v (resyncs so far %v)", c, resyncs)
		}
		resyncs[c.Group]++
	}
	if extra := drain(ch); len(extra) != 0 {
		t.Fatalf("after the resyncs: %v", extra)
	}

	// Once drained, changes flow one by one again.
	r.Heartbeat(consumerHB("late", nil, "g1"))
	if c := recv(t, ch); c != (Change{Group: "g1", Kind: Joined, Client: "late"}) {
		t.Fatalf("after drain: %v", c)
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	r := newTestRegistry(newFakeClock())
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	chs := []<-chan Change{r.Watch(ctx), r.Watch(ctx)}
	r.Heartbeat(consumerHB("A", nil, "g")) // one change pending in each
	cancel()
	for _, ch := range chs {
		for range ch { // closed after ctx is done; pending changes may or may not arrive
		}
	}
	r.mu.RLock()
	n := len(r.watchers)
	r.mu.RUnlock()
	if n != 0 {
		t.Fatalf("%d watchers left registered", n)
	}
	r.Heartbeat(consumerHB("B", nil, "g")) // publishing with no watchers is fine

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("goroutines: %d before, %d after", before, g)
	}

	done, stop := context.WithCancel(context.Background())
	stop()
	if _, ok := <-r.Watch(done); ok {
		t.Fatal("watch of a done context delivered")
	}
}
