package timer

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kvtest"
)

// delivery is one entry handed to the DeliverFunc.
type delivery struct {
	Entry
	at    time.Time // wall clock when delivered
	clock int64     // the Scheduler's clock when delivered, ms
}

// sink is a DeliverFunc that behaves as the engine must: it delivers only
// pending entries and deletes them from the index before returning.
type sink struct {
	t     testing.TB
	db    *pebble.DB
	store *Store
	now   func() time.Time

	mu       sync.Mutex
	got      []delivery
	calls    int
	maxBatch int
	fail     int // deliveries to fail before succeeding
	arrived  chan struct{}
}

func newSink(t testing.TB, db *pebble.DB, now func() time.Time) *sink {
	return &sink{t: t, db: db, store: New(db), now: now, arrived: make(chan struct{}, 1)}
}

var errInjected = errors.New("injected delivery failure")

func (k *sink) deliver(ctx context.Context, due []Entry) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	k.maxBatch = max(k.maxBatch, len(due))
	if !slices.IsSortedFunc(due, compareEntries) {
		k.t.Errorf("batch not in due order: %v", due)
	}
	for _, e := range due {
		ok, err := k.store.Has(e)
		if err != nil {
			return err
		}
		if !ok {
			k.t.Errorf("entry %v delivered after it was removed", e)
		}
	}
	if k.fail > 0 {
		k.fail--
		return errInjected
	}
	b := k.db.NewBatch()
	defer b.Close()
	var w Writer
	for _, e := range due {
		if err := w.Delete(b, e); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	now, clock := time.Now(), k.now().UnixMilli()
	for _, e := range due {
		k.got = append(k.got, delivery{Entry: e, at: now, clock: clock})
	}
	select {
	case k.arrived <- struct{}{}:
	default:
	}
	return nil
}

func compareEntries(a, b Entry) int {
	if a.Due != b.Due {
		return int(min(max(a.Due-b.Due, -1), 1))
	}
	return int(min(max(a.Offset-b.Offset, -1), 1))
}

func (k *sink) deliveries() []delivery {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.got)
}

// wait waits until n entries were delivered, failing the test after
// timeout.
func (k *sink) wait(n int, timeout time.Duration) []delivery {
	k.t.Helper()
	deadline := time.After(timeout)
	for {
		if got := k.deliveries(); len(got) >= n {
			return got
		}
		select {
		case <-k.arrived:
		case <-deadline:
			got := k.deliveries()
			k.t.Fatalf("%d of %d entries delivered after %s: %v", len(got), n, timeout, got)
		}
	}
}

// start runs s until the test ends.
func start(t testing.TB, s *Scheduler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
}

// schedule commits entries to the index and tells s, as the dispatcher
// does.
func schedule(t testing.TB, db *pebble.DB, s *Scheduler, entries ...Entry) {
	t.Helper()
	apply(t, db, entries, nil)
	for _, e := range entries {
		s.Scheduled(e.Due)
	}
}

// fakeClock is a settable clock for the Scheduler.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

const slack = 2 * time.Second // generous bound for "promptly", under -race on a busy machine

func TestSchedulerDeliversWhenDue(t *testing.T) {
	db := kvtest.OpenDB(t)
	k := newSink(t, db, time.Now)
	s := NewScheduler(New(db), k.deliver, SchedulerOptions{})
	start(t, s)
	time.Sleep(20 * time.Millisecond) // let it go to sleep with nothing pending

	now := time.Now().UnixMilli()
	entries := []Entry{{now + 150, 3}, {now + 50, 1}, {now + 100, 2}, {now + 100, 1}, {now - 1000, 9}}
	schedule(t, db, s, entries...)
	got := k.wait(len(entries), 5*time.Second)
	want := slices.SortedFunc(slices.Values(entries), compareEntries)
	for i, d := range got {
		if d.Entry != want[i] {
			t.Fatalf("delivery %d = %v, want %v (all: %v)", i, d.Entry, want[i], got)
		}
		if d.at.UnixMilli() < d.Due {
			t.Errorf("%v delivered %d ms early", d.Entry, d.Due-d.at.UnixMilli())
		}
		if late := d.at.Sub(time.UnixMilli(max(d.Due, now))); late > slack {
			t.Errorf("%v delivered %s late", d.Entry, late)
		}
	}
	if n, err := New(db).Range(0, math.MaxInt64, 10, nil); err != nil || len(n) != 0 {
		t.Fatalf("index after delivery = %v, %v; want empty", n, err)
	}
}

// TestSchedulerInjectedClock checks deliveries follow the Scheduler's clock,
// not the wall clock: nothing is delivered before the clock reaches it.
func TestSchedulerInjectedClock(t *testing.T) {
	db := kvtest.OpenDB(t)
	var clock fakeClock
	clock.ms.Store(1_000_000)
	k := newSink(t, db, clock.Now)
	s := NewScheduler(New(db), k.deliver, SchedulerOptions{Now: clock.Now})
	schedule(t, db, s, Entry{1_000_000, 1}, Entry{1_000_030, 2}, Entry{1_000_060, 3}, Entry{1_000_090, 4})
	start(t, s)

	got := k.wait(1, 5*time.Second)
	// The timer for 1_000_030 fires after 30 ms of real time, but the clock
	// has not moved: nothing more may be delivered.
	time.Sleep(150 * time.Millisecond)
	if got = k.deliveries(); len(got) != 1 || got[0].Entry != (Entry{1_000_000, 1}) {
		t.Fatalf("deliveries with the clock stopped = %v, want only the first entry", got)
	}

	// Its timer keeps firing every 30 ms; once the clock has moved, the
	// entries now due go out.
	clock.ms.Store(1_000_060)
	got = k.wait(3, 5*time.Second)
	time.Sleep(50 * time.Millisecond)
	if got = k.deliveries(); len(got) != 3 {
		t.Fatalf("deliveries at clock +60 = %v, want 3", got)
	}
	for _, d := range got {
		if d.clock < d.Due {
			t.Errorf("%v delivered at clock %d, before it was due", d.Entry, d.clock)
		}
	}

	clock.ms.Store(1_000_090)
	got = k.wait(4, 5*time.Second)
	if got[3].Entry != (Entry{1_000_090, 4}) || got[3].clock < got[3].Due {
		t.Fatalf("last delivery = %+v", got[3])
	}
}

// TestSchedulerWakesForEarlierEntry checks that Scheduled wakes a Scheduler
// sleeping until a later entry.
func TestSchedulerWakesForEarlierEntry(t *testing.T) {
	db := kvtest.OpenDB(t)
	k := newSink(t, db, time.Now)
	s := NewScheduler(New(db), k.deliver, SchedulerOptions{})
	late := Entry{time.Now().Add(time.Hour).UnixMilli(), 1}
	schedule(t, db, s, late)
	start(t, s)
	time.Sleep(50 * time.Millisecond) // asleep until late.Due

	early := Entry{time.Now().Add(50 * time.Millisecond).UnixMilli(), 2}
	schedule(t, db, s, early)
	got := k.wait(1, 5*time.Second)
	if got[0].Entry != early || got[0].at.UnixMilli() < early.Due {
		t.Fatalf("delivered %v at %d, want %v at or after its due time", got[0].Entry, got[0].at.UnixMilli(), early)
	}
	if ok, err := New(db).Has(late); err != nil || !ok {
		t.Fatalf("the later entry is gone: %v, %v", ok, err)
	}
}

// TestSchedulerPastEntries checks that entries due before the point the
// Scheduler has already scanned past are still delivered once announced,
// including entries due long ago and at time zero.
func TestSchedulerPastEntries(t *testing.T) {
	db := kvtest.OpenDB(t)
	k := newSink(t, db, time.Now)
	s := NewScheduler(New(db), k.deliver, SchedulerOptions{})
	start(t, s)
	now := time.Now().UnixMilli()
	schedule(t, db, s, Entry{now, 1})
	k.wait(1, 5*time.Second)
	time.Sleep(30 * time.Millisecond) // it has scanned up to now and sleeps

	past := []Entry{{now - 10, 2}, {now - 60_000, 3}, {1, 4}, {0, 5}}
	for i, e := range past {
		schedule(t, db, s, e)
		got := k.wait(2+i, 5*time.Second)
		if got[1+i].Entry != e {
			t.Fatalf("delivered %v, want %v", got[1+i].Entry, e)
		}
	}
}

func TestSchedulerBatches(t *testing.T) {
	db := kvtest.OpenDB(t)
	k := newSink(t, db, time.Now)
	s := NewScheduler(New(db), k.deliver, SchedulerOptions{Batch: 3})
	now := time.Now().UnixMilli()
	var entries []Entry
	for i := range 10 {
		entries = append(entries, Entry{now - int64(i), int64(i)})
	}
	apply(t, db, entries, nil) // pending before the Scheduler starts
	start(t, s)
	got := k.wait(10, 5*time.Second)
	k.mu.Lock()
	calls, maxBatch := k.calls, k.maxBatch
	k.mu.Unlock()
	if maxBatch > 3 || calls < 4 {
		t.Fatalf("%d deliveries of at most %d entries; want at least 4 of at most 3", calls, maxBatch)
	}
	if !slices.IsSortedFunc(got, func(a, b delivery) int { return compareEntries(a.Entry, b.Entry) }) {
		t.Fatalf("deliveries out of order: %v", got)
	}
}

func TestSchedulerLock(t *testing.T) {
	db := kvtest.OpenDB(t)
	k := newSink(t, db, time.Now)
	s := NewScheduler(New(db), k.deliver, SchedulerOptions{})
	start(t, s)
	time.Sleep(20 * time.Millisecond)

	s.Lock()
	now := time.Now().UnixMilli()
	keep, cancel := Entry{now, 1}, Entry{now, 2}
	schedule(t, db, s, keep, cancel)
	time.Sleep(150 * time.Millisecond) // the Scheduler has read both and waits for the lock
	if got := k.deliveries(); len(got) != 0 {
		s.Unlock()
		t.Fatalf("delivered while locked: %v", got)
	}
	// Check and cancel, as a recall does.
	if ok, err := New(db).Has(cancel); err != nil || !ok {
		s.Unlock()
		t.Fatalf("Has(%v) = %v, %v", cancel, ok, err)
	}
	apply(t, db, nil, []Entry{cancel})
	s.Unlock()

	got := k.wait(1, 5*time.Second)
	time.Sleep(50 * time.Millisecond)
	if got = k.deliveries(); len(got) != 1 || got[0].Entry != keep {
		t.Fatalf("deliveries = %v, want only %v (the other was cancelled under the lock)", got, keep)
	}
}

func TestSchedulerRetriesFailedDelivery(t *testing.T) {
	db := kvtest.OpenDB(t)
	k := newSink(t, db, time.Now)
	k.fail = 2
	var errs atomic.Int32
	s := NewScheduler(New(db), k.deliver, SchedulerOptions{OnError: func(err error) {
		if !errors.Is(err, errInjected) {
			t.Errorf("OnError(%v), want the delivery's error", err)
		}
		errs.Add(1)
	}})
	start(t, s)
	e := Entry{time.Now().UnixMilli(), 7}
	begin := time.Now()
	schedule(t, db, s, e)
	got := k.wait(1, 5*time.Second)
	if got[0].Entry != e {
		t.Fatalf("delivered %v, want %v", got[0].Entry, e)
	}
	if n := errs.Load(); n != 2 {
		t.Fatalf("OnError called %d times, want 2", n)
	}
	// Each retry waits a little rather than spinning.
	if d := time.Since(begin); d < 2*retryDelay {
		t.Fatalf("two retries took %s, want at least %s", d, 2*retryDelay)
	}
}

// TestSchedulerFarFuture checks that an entry due further ahead than a
// time.Duration can express does not make the Scheduler spin.
func TestSchedulerFarFuture(t *testing.T) {
	for _, due := range []int64{math.MaxInt64 / 2, math.MaxInt64} {
		db := kvtest.OpenDB(t)
		var reads atomic.Int64
		now := func() time.Time { reads.Add(1); return time.Now() }
		k := newSink(t, db, time.Now)
		s := NewScheduler(New(db), k.deliver, SchedulerOptions{Now: now})
		apply(t, db, []Entry{{due, 1}}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		time.Sleep(200 * time.Millisecond)
		cancel()
		<-done
		if n := reads.Load(); n > 20 {
			t.Errorf("due %d: the Scheduler read the clock %d times in 200ms; it should sleep", due, n)
		}
		if got := k.deliveries(); len(got) != 0 {
			t.Errorf("due %d: delivered %v", due, got)
		}
	}
}

func TestSchedulerStopsOnCancel(t *testing.T) {
	db := kvtest.OpenDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	deliver := func(ctx context.Context, due []Entry) error {
		calls.Add(1)
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	var errs atomic.Int32
	s := NewScheduler(New(db), deliver, SchedulerOptions{OnError: func(error) { errs.Add(1) }})
	apply(t, db, []Entry{{1, 1}}, nil)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if calls.Load() != 1 || errs.Load() != 0 {
		t.Fatalf("%d deliveries, %d errors reported; want 1 and none (a cancelled run is not a failure)", calls.Load(), errs.Load())
	}
}
