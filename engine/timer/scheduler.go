package timer

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// DeliverFunc delivers due entries, in order, and returns once the index
// reflects the deliveries (the entries are gone from the Store), or an
// error. The Scheduler holds its lock while it runs, so cancellations never
// race with a delivery.
type DeliverFunc func(ctx context.Context, due []Entry) error

// Scheduler wakes when the earliest pending entry falls due and hands every
// due entry to its DeliverFunc in bounded batches.
type Scheduler struct {
	store   *Store
	deliver DeliverFunc
	now     func() time.Time
	batch   int
	onError func(error)

	wake   chan struct{}
	floor  atomic.Int64 // no pending entry is due before floor
	target atomic.Int64 // when the Scheduler next wakes by itself, ms

	// mu serializes deliveries with cancellations (see Lock).
	mu sync.Mutex
}

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	Batch   int              // entries per delivery; default 1024
	Now     func() time.Time // default time.Now
	OnError func(error)      // called when a delivery fails (it is retried); default ignores
}

// NewScheduler returns a Scheduler over store. Call Run to start it.
func NewScheduler(store *Store, deliver DeliverFunc, o SchedulerOptions) *Scheduler {
	if o.Batch <= 0 {
		o.Batch = 1024
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OnError == nil {
		o.OnError = func(error) {}
	}
	s := &Scheduler{store: store, deliver: deliver, now: o.Now, batch: o.Batch, onError: o.OnError, wake: make(chan struct{}, 1)}
	s.floor.Store(0)
	return s
}

// Scheduled tells the Scheduler a new entry is due at due. The dispatcher
// calls it after the entry is committed to the index.
func (s *Scheduler) Scheduled(due int64) {
	s.lowerFloor(due)
	if due < s.target.Load() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *Scheduler) lowerFloor(due int64) {
	for {
		f := s.floor.Load()
		if due >= f || s.floor.CompareAndSwap(f, due) {
			return
		}
	}
}

// Lock stops deliveries until Unlock, so a caller can check an entry is
// still pending and cancel it atomically.
func (s *Scheduler) Lock() { s.mu.Lock() }

// Unlock resumes deliveries.
func (s *Scheduler) Unlock() { s.mu.Unlock() }

// retryDelay is how long the Scheduler waits before retrying a failed
// delivery.
const retryDelay = 100 * time.Millisecond

// maxSleep is the longest the Scheduler sleeps without checking the index.
const maxSleep = time.Hour

// Run delivers due entries until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		// While awake, every newly scheduled entry wakes the next round.
		s.target.Store(math.MaxInt64)
		wait, err := s.deliverDue(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.onError(err)
			// Back off for the whole delay: the failed batch lowered the
			// floor, which wakes the loop at once, and would make it
			// retry without pause.
			s.target.Store(s.now().Add(retryDelay).UnixMilli())
			t.Reset(retryDelay)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			continue
		}
		s.target.Store(s.now().Add(wait).UnixMilli())
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-t.C:
		}
	}
}

// deliverDue delivers every entry due now and returns how long to sleep
// until the next one.
func (s *Scheduler) deliverDue(ctx context.Context) (time.Duration, error) {
	var buf []Entry
	var resume Entry // after a delivered batch: the entry just past it
	for {
		now := s.now().UnixMilli()
		// Take the floor before reading: an entry scheduled meanwhile
		// lowers it again and wakes us.
		from := s.floor.Swap(math.MaxInt64)
		start := Entry{Due: from}
		if resume.Due > 0 && from >= resume.Due {
			// Nothing earlier arrived: continue after the last batch
			// rather than stepping over its deleted entries again.
			start = resume
		}
		// Read under the lock, so an entry cancelled while we waited for
		// it is not delivered.
		s.mu.Lock()
		var err error
		buf, err = s.store.RangeFrom(start, now, s.batch, buf[:0])
		if err == nil && len(buf) > 0 {
			err = s.deliver(ctx, buf)
			s.mu.Unlock()
			if err != nil {
				s.lowerFloor(buf[0].Due)
				return 0, err
			}
			// Everything before resume is handled; the floor is now
			// resume.Due or an earlier entry scheduled meanwhile.
			last := buf[len(buf)-1]
			resume = Entry{Due: last.Due, Offset: last.Offset + 1}
			s.lowerFloor(resume.Due)
			continue
		}
		s.mu.Unlock()
		if err != nil {
			s.lowerFloor(from)
			return 0, err
		}
		next, ok, err := s.store.Next(now + 1)
		if err != nil {
			s.lowerFloor(from)
			return 0, err
		}
		s.lowerFloor(now + 1) // nothing before now+1 is pending
		if !ok {
			return maxSleep, nil
		}
		// Compare in milliseconds: a far-future due time overflows a
		// Duration.
		if d := next.Due - now; d < maxSleep.Milliseconds() {
			return time.Duration(d) * time.Millisecond, nil
		}
		return maxSleep, nil
	}
}
