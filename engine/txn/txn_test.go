package txn

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kvtest"
)

// apply adds and then resolves half messages in one committed batch.
func apply(t testing.TB, db *pebble.DB, add, resolve []int64) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	var w Writer
	for _, off := range add {
		if err := w.Add(b, off); err != nil {
			t.Fatal(err)
		}
	}
	for _, off := range resolve {
		if err := w.Resolve(b, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
}

func TestPendingAndList(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	if got, err := s.List(0, 10, nil); err != nil || len(got) != 0 {
		t.Fatalf("List on an empty index = %v, %v", got, err)
	}
	apply(t, db, []int64{500, 0, 100, 255, 256, 1 << 40, math.MaxInt64}, nil)
	// Keys of other indexes in the same database, on either side.
	for _, k := range []string{"g", "h", "hx", "i", "q\x01T"} {
		if err := db.Set([]byte(k), nil, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	all := []int64{0, 100, 255, 256, 500, 1 << 40, math.MaxInt64}
	tests := []struct {
		name  string
		from  int64
		limit int
		want  []int64
	}{
		{"all", 0, 100, all},
		{"limit", 0, 3, all[:3]},
		{"limit zero", 0, 0, nil},
		{"from inclusive", 256, 100, all[3:]},
		{"from between", 257, 2, all[4:6]},
		{"negative from", -1, 2, all[:2]},
		{"from max", math.MaxInt64, 10, all[6:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.List(tt.from, tt.limit, nil)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("List(%d, %d) = %v, %v; want %v", tt.from, tt.limit, got, err, tt.want)
			}
		})
	}
	if got, _ := s.List(0, 1, []int64{-9}); !slices.Equal(got, []int64{-9, 0}) {
		t.Fatalf("List does not append to dst: %v", got)
	}

	// Resolve removes one half message; resolving an unknown one is
	// harmless; a batch can resolve what it adds.
	apply(t, db, []int64{7}, []int64{100, 12345, 7})
	for _, tt := range []struct {
		off  int64
		want bool
	}{{0, true}, {100, false}, {255, true}, {7, false}, {12345, false}, {math.MaxInt64, true}, {1, false}} {
		if got, err := s.Pending(tt.off); err != nil || got != tt.want {
			t.Errorf("Pending(%d) = %v, %v; want %v", tt.off, got, err, tt.want)
		}
	}
	if got, err := s.List(0, 100, nil); err != nil || !slices.Equal(got, []int64{0, 255, 256, 500, 1 << 40, math.MaxInt64}) {
		t.Fatalf("List after resolve = %v, %v", got, err)
	}
}

func TestChecksGetSet(t *testing.T) {
	c := NewChecks()
	var inits int
	init := func() Check { inits++; return Check{Count: 0, Next: 1000} }
	if got := c.Get(1, init); got != (Check{0, 1000}) || inits != 1 {
		t.Fatalf("first Get = %+v (%d inits)", got, inits)
	}
	if got := c.Get(1, init); got != (Check{0, 1000}) || inits != 1 {
		t.Fatalf("second Get = %+v (%d inits); init must run once", got, inits)
	}
	c.Set(1, Check{Count: 3, Next: 5000})
	if got := c.Get(1, init); got != (Check{3, 5000}) || inits != 1 {
		t.Fatalf("Get after Set = %+v (%d inits)", got, inits)
	}
	// Set without a prior Get.
	c.Set(2, Check{Count: 1, Next: 7})
	if got := c.Get(2, init); got != (Check{1, 7}) || inits != 1 {
		t.Fatalf("Get(2) = %+v (%d inits)", got, inits)
	}
	// The returned value is a copy.
	got := c.Get(1, init)
	got.Count = 99
	if again := c.Get(1, init); again.Count != 3 {
		t.Fatalf("changing a returned Check changed the state: %+v", again)
	}
}

// step is one call of TestResolveClaims.
type step struct {
	op       string // "begin" or "end"
	off      int64
	arg      int64 // begin: indexed position; end: record offset
	wantFree bool  // begin: the claim is granted
}

func TestResolveClaims(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"first claim granted", []step{
			{"begin", 10, 0, true},
		}},
		{"second claim refused while resolving", []step{
			{"begin", 10, 0, true},
			{"begin", 10, 0, false},
			{"begin", 10, 1 << 40, false}, // no record yet: the dispatcher position does not free it
		}},
		{"other half messages independent", []step{
			{"begin", 10, 0, true},
			{"begin", 11, 0, true},
			{"begin", 9, 0, true},
		}},
		{"failed decision frees the claim", []step{
			{"begin", 10, 0, true},
			{"end", 10, -1, false},
			{"begin", 10, 0, true},
		}},
		{"recorded decision holds until indexed", []step{
			{"begin", 10, 0, true},
			{"end", 10, 500, false},
			{"begin", 10, 0, false},
			{"begin", 10, 499, false},
			{"begin", 10, 500, false}, // the record at 500 is not indexed until the position passes it
			{"begin", 10, 501, true},
			{"begin", 10, 501, false}, // and the new claim holds
		}},
		{"indexing releases every recorded decision", []step{
			{"begin", 10, 0, true},
			{"begin", 20, 0, true},
			{"begin", 30, 0, true},
			{"end", 10, 100, false},
			{"end", 20, 200, false},
			{"begin", 40, 150, true}, // releases 10 only
			{"begin", 10, 150, true},
			{"begin", 20, 150, false},
			{"begin", 30, 1000, false}, // still resolving, no record
		}},
		{"decisions recorded out of log order", []step{
			{"end", 10, 200, false},
			{"end", 20, 100, false},
			{"begin", 30, 150, true},
			{"begin", 10, 150, false},
			// 20 may be kept behind 10 until the index passes 200.
			{"begin", 20, 201, true},
			{"begin", 10, 201, true},
		}},
		{"many decisions forgotten as the index passes them", manySteps()},
		{"record at offset zero", []step{
			{"begin", 10, 0, true},
			{"end", 10, 0, false},
			{"begin", 10, 0, false},
			{"begin", 10, 1, true},
		}},
		{"end without begin", []step{
			{"end", 10, 300, false},
			{"begin", 10, 300, false},
			{"begin", 10, 301, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChecks()
			for i, s := range tt.steps {
				switch s.op {
				case "begin":
					if got := c.BeginResolve(s.off, s.arg); got != s.wantFree {
						t.Fatalf("step %d: BeginResolve(%d, indexed %d) = %v, want %v", i, s.off, s.arg, got, s.wantFree)
					}
				case "end":
					c.EndResolve(s.off, s.arg)
				}
			}
		})
	}
}

// manySteps records 3,000 decisions and lets the index pass them in three
// steps, checking that what the index passed is forgotten and the rest is
// not.
func manySteps() []step {
	var steps []step
	for i := range int64(3000) {
		steps = append(steps, step{"begin", i, 0, true}, step{"end", i, 10_000 + i, false})
	}
	for _, passed := range []int64{999, 1999, 2999} {
		steps = append(steps,
			step{"begin", passed, 10_000 + passed, false}, // its record is not indexed yet
			step{"begin", passed, 10_000 + passed + 1, true},
			step{"begin", passed - 1, 10_000 + passed + 1, true})
		if passed+1 < 3000 {
			steps = append(steps, step{"begin", passed + 1, 10_000 + passed + 1, false})
		}
	}
	return steps
}

func TestEndResolveForgetsChecks(t *testing.T) {
	c := NewChecks()
	c.Set(10, Check{Count: 4, Next: 100})
	c.Set(11, Check{Count: 2, Next: 200})

	// A failed decision keeps the check state.
	if !c.BeginResolve(10, 0) {
		t.Fatal("claim refused")
	}
	c.EndResolve(10, -1)
	if got := c.Get(10, func() Check { return Check{} }); got.Count != 4 {
		t.Fatalf("a failed decision dropped the check state: %+v", got)
	}

	// A recorded one drops it: the half message is settled.
	if !c.BeginResolve(10, 0) {
		t.Fatal("claim refused")
	}
	c.EndResolve(10, 50)
	if got := c.Get(10, func() Check { return Check{Count: -1} }); got.Count != -1 {
		t.Fatalf("check state kept after the decision was recorded: %+v", got)
	}
	if got := c.Get(11, func() Check { return Check{} }); got.Count != 2 {
		t.Fatalf("another half message lost its check state: %+v", got)
	}
}

func TestBeginResolveConcurrent(t *testing.T) {
	c := NewChecks()
	const workers = 8
	var granted atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range workers {
		wg.Go(func() {
			<-start
			if c.BeginResolve(42, 0) {
				granted.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := granted.Load(); n != 1 {
		t.Fatalf("%d of %d concurrent claims granted, want exactly 1", n, workers)
	}
}

func TestKeyLayout(t *testing.T) {
	if got, want := key(nil, 0x0102), []byte{'h', 0, 0, 0, 0, 0, 0, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("key = %x, want %x", got, want)
	}
}

func TestResolving(t *testing.T) {
	c := NewChecks()
	if c.Resolving(10, 0) {
		t.Fatal("a half message nobody decided is resolving")
	}
	c.BeginResolve(10, 0)
	if !c.Resolving(10, 1<<40) {
		t.Fatal("a decision under way is not resolving")
	}
	c.EndResolve(10, 500)
	if !c.Resolving(10, 500) {
		t.Fatal("a decision recorded at 500 is not resolving while the index is at 500")
	}
	if c.Resolving(10, 501) {
		t.Fatal("a decision the index took is still resolving")
	}
	c.BeginResolve(11, 0)
	c.EndResolve(11, -1)
	if c.Resolving(11, 0) {
		t.Fatal("a failed decision is resolving")
	}
}
