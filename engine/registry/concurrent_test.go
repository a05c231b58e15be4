package registry

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Heartbeats, locks, disconnects, expiry, queries and a watcher all at
// once; run with -race. Afterwards the lock table and the per-client index
// must agree, and every group must list exactly its members.
func TestConcurrentUse(t *testing.T) {
	clock := newFakeClock()
	r := newTestRegistry(clock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := r.Watch(ctx)
	go func() {
		for range watch {
		}
	}()

	const workers, rounds = 8, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := &testConn{fmt.Sprintf("w%d", w)}
			for i := range rounds {
				id := ClientID(fmt.Sprintf("c%d-%d", w, i%5))
				group := fmt.Sprintf("g%d", i%3)
				r.Heartbeat(Heartbeat{
					Client: id, Conn: conn, Producers: []string{"pg"},
					Consumers: []Consumer{{Group: group, Subscriptions: []Subscription{
						tagSub("T", fmt.Sprintf("tag%d", i%4), int64(i)),
					}}},
				})
				r.Lock(group, id, []Queue{q(int32(i % 8)), q(int32((i + 1) % 8))})
				if i%7 == 0 {
					r.Unlock(group, id, []Queue{q(int32(i % 8))})
				}
				if i%50 == 49 {
					r.Disconnect(conn)
				}
				r.ConsumerIDs(group)
				r.Consumers(group)
				r.Subscription(group, "T")
				r.ProducerConn("pg")
				r.LockedBy(group, q(0))
				r.ConsumerGroupsOf("T")
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 100 {
			clock.Advance(time.Second)
			r.Expire()
		}
	}()
	wg.Wait()

	r.mu.RLock()
	defer r.mu.RUnlock()
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	for k, e := range r.locks {
		if _, ok := r.owned[e.owner][k]; !ok {
			t.Fatalf("lock %v of %s missing from the index", k, e.owner)
		}
	}
	for id, set := range r.owned {
		for k := range set {
			if r.locks[k].owner != id {
				t.Fatalf("index says %s holds %v", id, k)
			}
		}
	}
	for name, g := range r.consumers {
		for id, m := range g.members {
			if r.clients[id] == nil || r.clients[id].consumers[name] != m {
				t.Fatalf("group %s lists %s, which is not a member", name, id)
			}
		}
	}
	for id, c := range r.clients {
		for name, m := range c.consumers {
			if r.consumers[name] == nil || r.consumers[name].members[id] != m {
				t.Fatalf("client %s is in %s, which does not list it", id, name)
			}
		}
		if c.conn != nil {
			if _, ok := r.conns[c.conn][id]; !ok {
				t.Fatalf("client %s missing from its connection's index", id)
			}
		}
	}
}

// Many clients race for the same queues at the same instant: each queue
// goes to exactly one of them.
func TestConcurrentLockExclusive(t *testing.T) {
	r := newTestRegistry(newFakeClock())
	qs := make([]Queue, 64)
	for i := range qs {
		qs[i] = q(int32(i))
	}
	const clients = 16
	results := make([][]Queue, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := ClientID(fmt.Sprint(c))
			for i := range qs {
				// Each client walks the queues from a different start.
				got := r.Lock("g", id, []Queue{qs[(i+c*4)%len(qs)]})
				results[c] = append(results[c], got...)
			}
		}()
	}
	wg.Wait()
	owner := map[Queue]int{}
	for c, got := range results {
		for _, q := range got {
			if prev, ok := owner[q]; ok {
				t.Fatalf("%v granted to %d and %d", q, prev, c)
			}
			owner[q] = c
		}
	}
	if len(owner) != len(qs) {
		t.Fatalf("%d of %d queues granted", len(owner), len(qs))
	}
}
