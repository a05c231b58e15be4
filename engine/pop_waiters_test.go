package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

func woken(w *popWaiter) bool {
	select {
	case <-w.wake:
		return true
	default:
		return false
	}
}

// TestPopWaitersHandOn checks the waiter list: the oldest of a group is
// woken, a wake-up its pop leaves unused goes to the next, and so does one
// after a pop that took all it asked for.
func TestPopWaitersHandOn(t *testing.T) {
	var ws popWaiters
	a, b, c, other := newPopWaiter(), newPopWaiter(), newPopWaiter(), newPopWaiter()
	ws.add("G", a)
	ws.add("G", b)
	ws.add("G", c)
	ws.add("H", other)

	ws.wakeEach()
	if !woken(other) {
		t.Fatal("the waiter of the other group was not woken")
	}
	ws.add("H", other)
	// a is woken; its pop gives up without using the wake-up (it left it
	// in the channel): b gets one.
	if len(a.wake) != 1 || len(b.wake) != 0 {
		t.Fatalf("wake-ups: a %d, b %d", len(a.wake), len(b.wake))
	}
	ws.leave("G", a, false)
	if !woken(b) || woken(c) {
		t.Fatal("the unused wake-up was not handed to the next waiter alone")
	}
	// b used its wake-up and took all it asked for: c gets one.
	ws.leave("G", b, true)
	if !woken(c) {
		t.Fatal("a full pop did not hand on")
	}
	// A listed waiter that leaves hands nothing on.
	ws.leave("H", other, false)
	if ws.n.Load() != 0 || len(ws.groups) != 0 {
		t.Fatalf("%d waiters left listed: %v", ws.n.Load(), ws.groups)
	}
	// wakeAll wakes every waiter of the group.
	ws.add("G", a)
	ws.add("G", b)
	ws.wakeAll("G")
	if !woken(a) || !woken(b) || ws.n.Load() != 0 {
		t.Fatal("wakeAll left a waiter asleep")
	}
}

// Waiting pops of one group are woken one per message, not all of them
// for every message; each group's waiters get every message.
func TestPopWakesOneWaiterPerGroup(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 2, meta.Group{})
	defer e.Close()
	const perGroup = 10
	groups := []string{"G1", "G2"}
	var waits atomic.Int64
	asleep := make(chan struct{}, 1024)
	e.popWaiting = func() {
		waits.Add(1)
		asleep <- struct{}{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		group string
		n     int
		err   error
	}
	results := make(chan result, 2*perGroup)
	var wg sync.WaitGroup
	for _, g := range groups {
		for range perGroup {
			wg.Go(func() {
				ms, err := e.Pop(ctx, PopOptions{Group: g, Topic: "T", Max: 32, Invisible: time.Minute, Wait: time.Minute})
				results <- result{g, len(ms), err}
			})
		}
	}
	for range 2 * perGroup {
		<-asleep
	}
	const messages = 3
	got := map[string]int{}
	for i := range messages {
		sendN(t, e, 1)
		for range groups {
			select {
			case r := <-results:
				if r.err != nil || r.n != 1 {
					t.Fatalf("message %d: a pop of %s returned %d messages, %v", i, r.group, r.n, r.err)
				}
				got[r.group]++
			case <-time.After(20 * time.Second):
				t.Fatalf("message %d was not delivered to both groups", i)
			}
		}
	}
	cancel()
	wg.Wait()
	close(results)
	for r := range results {
		if !errors.Is(r.err, context.Canceled) || r.n != 0 {
			t.Fatalf("a waiting pop of %s ended with %d messages, %v", r.group, r.n, r.err)
		}
	}
	if got["G1"] != messages || got["G2"] != messages {
		t.Fatalf("deliveries per group: %v", got)
	}
	// Every pop went to sleep once; woken all at every message, the
	// waiters of both groups would have slept again about 2*perGroup
	// times per message.
	if n := waits.Load(); n > 2*perGroup+4 {
		t.Fatalf("pops went to sleep %d times for %d waiters and %d messages", n, 2*perGroup, messages)
	}
}

// A message whose invisible time ends is delivered again to one waiting
// pop of its group, woken by the group's timer, not to all of them.
func TestPopExpiryWakesOneWaiter(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 2, meta.Group{})
	defer e.Close()
	sendN(t, e, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: 300 * time.Millisecond})
	if err != nil || len(held) != 1 {
		t.Fatalf("pop: %d messages, %v", len(held), err)
	}
	const waiters = 10
	var waits atomic.Int64
	asleep := make(chan struct{}, 1024)
	e.popWaiting = func() {
		waits.Add(1)
		asleep <- struct{}{}
	}
	type result struct {
		ms  []PoppedMessage
		err error
	}
	results := make(chan result, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Minute, Wait: time.Minute})
			results <- result{ms, err}
		})
	}
	for range waiters {
		<-asleep
	}
	select {
	case r := <-results:
		if r.err != nil || len(r.ms) != 1 || r.ms[0].Attempt != 2 {
			t.Fatalf("redelivery: %d messages, %v", len(r.ms), r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the message was not delivered again when its invisible time ended")
	}
	cancel()
	wg.Wait()
	close(results)
	for r := range results {
		if len(r.ms) != 0 {
			t.Fatalf("a second waiter got %d messages", len(r.ms))
		}
	}
	// Each waiter slept once; a wake-up early by a millisecond's rounding
	// adds one more. Woken all at the deadline, they would all sleep again.
	if n := waits.Load(); n > waiters+2 {
		t.Fatalf("pops went to sleep %d times for %d waiters", n, waiters)
	}
}

// BenchmarkPopWaiters sends messages one at a time to a topic on which
// 500 consumers of one group long-poll, each acknowledging what it gets
// and polling again: what a message costs when many consumers wait. It
// reports the process's CPU time per message (cpu-us/msg); the time per
// message is mostly the dispatcher's wait for company.
func BenchmarkPopWaiters(b *testing.B) {
	e := benchEngine(b, &Options{AutoCreateGroups: true})
	const waiters = 500
	ctx, cancel := context.WithCancel(context.Background())
	delivered := make(chan struct{}, waiters)
	asleep := make(chan struct{}, waiters)
	e.popWaiting = func() { signal(asleep) }
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			for ctx.Err() == nil {
				got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "B", Max: 32, Invisible: time.Minute, Wait: time.Minute})
				if err != nil {
					return
				}
				for _, p := range got {
					if err := e.Ack(ctx, "G", p.Handle); err != nil {
						b.Error(err)
					}
					delivered <- struct{}{}
				}
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	<-asleep
	m := &message.Message{Topic: "B", Body: make([]byte, 1024)}
	before := cpuTime()
	for b.Loop() {
		if _, err := e.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
		<-delivered
	}
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-us/msg")
}

// cpuTime returns the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQuietSendToPop sends a message now and then (2 ms apart) to a
// topic with one long-polling consumer and reports how long each takes
// from the send to the consumer (latency-us).
func BenchmarkQuietSendToPop(b *testing.B) {
	e := benchEngine(b, &Options{AutoCreateGroups: true})
	ctx := context.Background()
	m := &message.Message{Topic: "B", Body: make([]byte, 1024)}
	var total time.Duration
	for b.Loop() {
		got := make(chan error, 1)
		go func() {
			ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "B", Max: 32, Invisible: time.Minute, Wait: time.Minute})
			for _, p := range ms {
				if err == nil {
					err = e.Ack(ctx, "G", p.Handle)
				}
			}
			got <- err
		}()
		time.Sleep(2 * time.Millisecond) // a quiet log, and a waiting pop
		start := time.Now()
		if _, err := e.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
		if err := <-got; err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "latency-us")
}
