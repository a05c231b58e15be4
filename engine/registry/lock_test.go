package registry

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func q(id int32) Queue { return Queue{Topic: "T", Broker: "broker-a", ID: id} }

func TestLockTable(t *testing.T) {
	type step struct {
		op     string // lock, unlock, advance, expire
		client ClientID
		group  string // default "g"; "none" means the empty group name
		qs     []Queue
		d      time.Duration
		want   []Queue // lock result
		// holders in group g after the step: queue id → client ("" = free)
		holders map[int32]ClientID
	}
	steps := []step{
		{op: "lock", client: "A", qs: []Queue{q(0), q(1)}, want: []Queue{q(0), q(1)},
			holders: map[int32]ClientID{0: "A", 1: "A", 2: ""}},
		{op: "lock", client: "B", qs: []Queue{q(1), q(2)}, want: []Queue{q(2)},
			holders: map[int32]ClientID{0: "A", 1: "A", 2: "B"}},
		{op: "lock", client: "A", group: "other", qs: []Queue{q(2)}, want: []Queue{q(2)},
			holders: map[int32]ClientID{2: "B"}}, // groups are independent
		{op: "advance", d: 40 * time.Second},
		{op: "lock", client: "A", qs: []Queue{q(0)}, want: []Queue{q(0)}}, // renews q0 only
		{op: "advance", d: 21 * time.Second},                              // q1, q2 unrenewed for 61 s
		{op: "lock", client: "B", qs: []Queue{q(0), q(1)}, want: []Queue{q(1)},
			holders: map[int32]ClientID{0: "A", 1: "B", 2: ""}},
		{op: "lock", client: "B", qs: []Queue{q(2)}, want: []Queue{q(2)}, // its own expired lock
			holders: map[int32]ClientID{2: "B"}},
		{op: "unlock", client: "A", qs: []Queue{q(1), q(2)}, // not A's: no effect
			holders: map[int32]ClientID{0: "A", 1: "B", 2: "B"}},
		{op: "unlock", client: "B", qs: []Queue{q(1)},
			holders: map[int32]ClientID{0: "A", 1: "", 2: "B"}},
		{op: "lock", client: "C", qs: []Queue{q(1), q(1)}, want: []Queue{q(1), q(1)}, // duplicates echoed
			holders: map[int32]ClientID{1: "C"}},
		{op: "advance", d: 61 * time.Second},
		{op: "expire", holders: map[int32]ClientID{0: "", 1: "", 2: ""}},
		{op: "lock", client: "", qs: []Queue{q(0)}},
		{op: "lock", client: "A", group: "none", qs: []Queue{q(0)}},
		{op: "lock", client: "A"},
	}
	clock := newFakeClock()
	r := newTestRegistry(clock)
	for i, st := range steps {
		name := fmt.Sprintf("step %d (%s %s)", i, st.op, st.client)
		group := st.group
		switch group {
		case "":
			group = "g"
		case "none":
			group = ""
		}
		switch st.op {
		case "lock":
			got := r.Lock(group, st.client, st.qs)
			if !slices.Equal(got, st.want) {
				t.Fatalf("%s: locked %v, want %v", name, got, st.want)
			}
		case "unlock":
			r.Unlock(group, st.client, st.qs)
		case "advance":
			clock.Advance(st.d)
		case "expire":
			r.Expire()
		}
		for id, want := range st.holders {
			got, ok := r.LockedBy("g", q(id))
			if want == "" && ok || want != "" && got != want {
				t.Fatalf("%s: q%d held by %q %v, want %q", name, id, got, ok, want)
			}
		}
	}
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	if len(r.locks) != 0 || len(r.owned) != 0 {
		t.Fatalf("lock table after expiry: %v %v", r.locks, r.owned)
	}
}

func TestLockExpiryBoundary(t *testing.T) {
	clock := newFakeClock()
	r := New(Options{LockExpiry: 10 * time.Second, Now: clock.Now})
	r.Lock("g", "A", []Queue{q(0)})
	clock.Advance(10 * time.Second)
	if got := r.Lock("g", "B", []Queue{q(0)}); got != nil {
		t.Fatalf("lock taken at exactly LockExpiry: %v", got)
	}
	clock.Advance(time.Nanosecond)
	if _, ok := r.LockedBy("g", q(0)); ok {
		t.Fatal("expired lock still reported")
	}
	if got := r.Lock("g", "B", []Queue{q(0)}); len(got) != 1 {
		t.Fatal("expired lock not granted")
	}
	if holder, _ := r.LockedBy("g", q(0)); holder != "B" {
		t.Fatalf("holder %q", holder)
	}
	// The queue's broker name is part of its identity.
	other := Queue{Topic: "T", Broker: "broker-b", ID: 0}
	if got := r.Lock("g", "A", []Queue{other}); !slices.Equal(got, []Queue{other}) {
		t.Fatalf("lock on another broker's queue: %v", got)
	}
}

func TestLocksReleasedWhenHolderLeaves(t *testing.T) {
	clock := newFakeClock()
	// Locks outlive every step below unless their holder goes.
	r := New(Options{LockExpiry: time.Hour, Now: clock.Now})
	ca, cb := &testConn{"a"}, &testConn{"b"}
	r.Heartbeat(Heartbeat{Client: "A", Conn: ca, Consumers: []Consumer{{Group: "g"}, {Group: "h"}}})
	r.Heartbeat(consumerHB("B", cb, "g"))
	r.Lock("g", "A", []Queue{q(0), q(1)})
	r.Lock("h", "A", []Queue{q(0)})
	r.Lock("g", "B", []Queue{q(2)})

	held := func(group string, id int32) ClientID {
		c, _ := r.LockedBy(group, q(id))
		return c
	}

	// Leaving a group through a heartbeat releases that group's locks only.
	r.Heartbeat(consumerHB("A", ca, "g"))
	if held("h", 0) != "" || held("g", 0) != "A" {
		t.Fatalf("after A left h: h/0=%q g/0=%q", held("h", 0), held("g", 0))
	}
	// A disconnected client keeps its locks until they expire.
	r.Disconnect(ca)
	if held("g", 0) != "A" || held("g", 2) != "B" {
		t.Fatal("A's locks were released by its disconnect")
	}
	if got := r.Lock("g", "B", []Queue{q(0)}); len(got) != 0 {
		t.Fatal("B took A's queue while A's lock was live")
	}
	r.Unlock("g", "A", []Queue{q(0), q(1)})
	if got := r.Lock("g", "B", []Queue{q(0)}); len(got) != 1 {
		t.Fatal("B cannot take over A's queue once it is free")
	}

	// Unregistering releases; so does expiry of the client.
	r.Heartbeat(consumerHB("C", nil, "g"))
	r.Lock("g", "C", []Queue{q(5)})
	r.Unregister("C", "", "g")
	if held("g", 5) != "" {
		t.Fatal("unregistered client keeps its lock")
	}
	clock.Advance(30 * time.Second)
	r.Heartbeat(consumerHB("D", nil, "g"))
	clock.Advance(100 * time.Second) // B silent 130 s, D 100 s
	wantGroups(t, "expire", r.Expire(), "g")
	if held("g", 0) != "" || held("g", 2) != "" {
		t.Fatal("expired client keeps its locks")
	}
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	if len(r.locks) != 0 || len(r.owned) != 0 {
		t.Fatalf("lock table not empty: %v %v", r.locks, r.owned)
	}
}
