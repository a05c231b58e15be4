package raftstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func entry(i uint64) *raft.Log {
	l := &raft.Log{Index: i, Term: 1 + i/10, Type: raft.LogCommand, Data: fmt.Appendf(nil, "cmd-%d", i)}
	if i%3 == 0 {
		l.Extensions = []byte{byte(i)}
		l.AppendedAt = time.Unix(1700000000, int64(i)).UTC()
	}
	return l
}

// The store answers as raft's in-memory store does, step by step.
func TestLogStoreAgreesWithInmem(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	ref := raft.NewInmemStore()
	check := func(step string) {
		t.Helper()
		for _, f := range []struct {
			name string
			get  func(raft.LogStore) (uint64, error)
		}{{"FirstIndex", raft.LogStore.FirstIndex}, {"LastIndex", raft.LogStore.LastIndex}} {
			got, err1 := f.get(s)
			want, err2 := f.get(ref)
			if got != want || err1 != nil || err2 != nil {
				t.Fatalf("%s: %s = %d (%v), in-memory %d (%v)", step, f.name, got, err1, want, err2)
			}
		}
		for i := uint64(0); i <= 40; i++ {
			var a, b raft.Log
			err1, err2 := s.GetLog(i, &a), ref.GetLog(i, &b)
			if !errors.Is(err1, err2) && !(err1 == nil && err2 == nil) {
				t.Fatalf("%s: GetLog(%d) = %v, in-memory %v", step, i, err1, err2)
			}
			if err1 == nil && !sameLog(&a, &b) {
				t.Fatalf("%s: GetLog(%d) = %+v, in-memory %+v", step, i, a, b)
			}
		}
	}
	both := func(f func(raft.LogStore) error) {
		t.Helper()
		if err := f(s); err != nil {
			t.Fatal(err)
		}
		if err := f(ref); err != nil {
			t.Fatal(err)
		}
	}
	check("empty")
	both(func(st raft.LogStore) error { return st.StoreLog(entry(1)) })
	check("one")
	var batch []*raft.Log
	for i := uint64(2); i <= 30; i++ {
		batch = append(batch, entry(i))
	}
	both(func(st raft.LogStore) error { return st.StoreLogs(batch) })
	check("thirty")
	both(func(st raft.LogStore) error { return st.DeleteRange(1, 10) }) // compaction
	check("compacted")
	both(func(st raft.LogStore) error { return st.DeleteRange(25, 30) }) // conflict
	check("suffix cut")
	both(func(st raft.LogStore) error { return st.StoreLogs([]*raft.Log{entry(25), entry(26)}) })
	check("rewritten")
	both(func(st raft.LogStore) error { return st.DeleteRange(0, 20) })
	check("compacted again")
	// Emptied, it says so (the in-memory store remembers a first index).
	if err := s.DeleteRange(0, 100); err != nil {
		t.Fatal(err)
	}
	first, err1 := s.FirstIndex()
	last, err2 := s.LastIndex()
	if first != 0 || last != 0 || err1 != nil || err2 != nil {
		t.Fatalf("emptied: first %d, last %d (%v, %v); want 0, 0", first, last, err1, err2)
	}
}

func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type && bytes.Equal(a.Data, b.Data) &&
		bytes.Equal(a.Extensions, b.Extensions) && a.AppendedAt.Equal(b.AppendedAt)
}

func TestStableStoreAndReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.Get([]byte("vote")); err == nil || err.Error() != "not found" {
		t.Fatalf("Get of a missing key: %v, want raft's \"not found\"", err)
	}
	if v, err := s.GetUint64([]byte("term")); v != 0 || err != nil {
		t.Fatalf("GetUint64 of a missing key: %d, %v", v, err)
	}
	if err := s.Set([]byte("vote"), []byte("node-2")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("term"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs([]*raft.Log{entry(1), entry(2), entry(3)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	if v, err := s.Get([]byte("vote")); err != nil || string(v) != "node-2" {
		t.Fatalf("vote after reopen: %q, %v", v, err)
	}
	if v, err := s.GetUint64([]byte("term")); err != nil || v != 7 {
		t.Fatalf("term after reopen: %d, %v", v, err)
	}
	var l raft.Log
	if err := s.GetLog(3, &l); err != nil || !sameLog(&l, entry(3)) {
		t.Fatalf("entry 3 after reopen: %+v, %v", l, err)
	}
	if err := s.Set([]byte("bad"), []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("bad")); err == nil {
		t.Fatal("GetUint64 of a 3-byte value succeeded")
	}
}

func FuzzDecodeLog(f *testing.F) {
	for _, i := range []uint64{1, 3, 12} {
		f.Add(encodeLog(nil, entry(i)))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		if err := decodeLog(b, &l); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		var again raft.Log
		if err := decodeLog(encodeLog(nil, &l), &again); err != nil || !reflect.DeepEqual(l, again) {
			t.Fatalf("re-encoding changed the entry: %+v → %+v (%v)", l, again, err)
		}
	})
}

// counter is a raft FSM that records the commands it applied.
type counter struct {
	mu   sync.Mutex
	cmds []string
}

func (c *counter) Apply(l *raft.Log) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cmds = append(c.cmds, string(l.Data))
	return len(c.cmds)
}

func (c *counter) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots here") }
func (c *counter) Restore(io.ReadCloser) error         { return errors.New("no snapshots here") }

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cmds)
}

// Three raft nodes on these stores elect a leader and replicate
// commands; stopped and started again on the same directories, they
// come back with their logs, elect again and go on.
func TestRaftOnTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs elections")
	}
	ids := []raft.ServerID{"c1", "c2", "c3"}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var cfg raft.Configuration
	for _, id := range ids {
		cfg.Servers = append(cfg.Servers, raft.Server{ID: id, Address: raft.ServerAddress(id)})
	}
	type node struct {
		r     *raft.Raft
		fsm   *counter
		store *Store
	}
	run := func(boot bool) []node {
		trans := make([]*raft.InmemTransport, len(ids))
		for i, id := range ids {
			_, trans[i] = raft.NewInmemTransport(raft.ServerAddress(id))
		}
		for i := range trans {
			for j := range trans {
				if i != j {
					trans[i].Connect(trans[j].LocalAddr(), trans[j])
				}
			}
		}
		var nodes []node
		for i, id := range ids {
			st := open(t, dirs[i])
			conf := raft.DefaultConfig()
			conf.LocalID = id
			conf.HeartbeatTimeout = 500 * time.Millisecond
			conf.ElectionTimeout = 500 * time.Millisecond
			conf.LeaderLeaseTimeout = 250 * time.Millisecond
			conf.CommitTimeout = 10 * time.Millisecond
			conf.Logger = hclog.NewNullLogger()
			snaps := raft.NewDiscardSnapshotStore()
			if boot {
				if err := raft.BootstrapCluster(conf, st, st, snaps, trans[i], cfg); err != nil {
					t.Fatal(err)
				}
			}
			fsm := &counter{}
			r, err := raft.NewRaft(conf, fsm, st, st, snaps, trans[i])
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, node{r, fsm, st})
		}
		return nodes
	}
	stop := func(nodes []node) {
		for _, n := range nodes {
			if err := n.r.Shutdown().Error(); err != nil {
				t.Fatal(err)
			}
			if err := n.store.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	leader := func(nodes []node) *raft.Raft {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			for _, n := range nodes {
				if n.r.State() == raft.Leader {
					return n.r
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no leader elected")
		return nil
	}
	apply := func(nodes []node, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			for try := 0; ; try++ {
				err := leader(nodes).Apply(fmt.Appendf(nil, "cmd-%d", i), 5*time.Second).Error()
				if err == nil {
					break
				}
				// A leader change leaves the outcome unknown: send again
				// (the counts below allow a command applied twice).
				if try == 5 || !(errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrNotLeader)) {
					t.Fatalf("apply %d: %v", i, err)
				}
			}
		}
	}
	applied := func(nodes []node, n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for _, nd := range nodes {
			for nd.fsm.count() < n {
				if time.Now().After(deadline) {
					t.Fatalf("a node applied %d commands, want %d", nd.fsm.count(), n)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}

	nodes := run(true)
	apply(nodes, 0, 50)
	applied(nodes, 50)
	stop(nodes)

	nodes = run(false)
	defer stop(nodes)
	for i, n := range nodes {
		if last, err := n.store.LastIndex(); err != nil || last < 50 {
			t.Fatalf("node %d came back with its log ending at %d (%v)", i, last, err)
		}
	}
	apply(nodes, 50, 60)
	applied(nodes, 60) // the log replayed from the store, then the new commands
}
