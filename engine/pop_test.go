package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

func popTestEngine(t *testing.T, dir string, queues int32, g meta.Group) *Engine {
	t.Helper()
	e := openTest(t, dir, &Options{AutoCreateGroups: true})
	if _, err := e.Topic("T"); err != nil {
		mustTopic(t, e, "T", queues)
	}
	if g.Name != "" {
		if err := e.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func sendN(t *testing.T, e *Engine, n int, props ...string) {
	t.Helper()
	for i := range n {
		if _, err := e.Send(context.Background(), newMsg("T", fmt.Sprint(i), props...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func bodies(t *testing.T, ms []PoppedMessage) []string {
	t.Helper()
	var out []string
	for _, p := range ms {
		m, _, err := message.DecodeStored(p.Record)
		if err != nil {
			t.Fatal(err)
		}
		if m.ReconsumeTimes != p.Attempt-1 {
			t.Fatalf("record reconsume times %d for attempt %d", m.ReconsumeTimes, p.Attempt)
		}
		out = append(out, string(m.Body))
	}
	return out
}

func TestPopAck(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 2, meta.Group{})
	defer e.Close()
	sendN(t, e, 10)
	ctx := context.Background()
	first, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 6, Invisible: time.Minute})
	if err != nil || len(first) != 6 {
		t.Fatalf("first pop: %d messages, %v", len(first), err)
	}
	second, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 6, Invisible: time.Minute})
	if len(second) != 4 {
		t.Fatalf("second pop got %d, want the other 4", len(second))
	}
	seen := map[string]bool{}
	for _, b := range append(bodies(t, first), bodies(t, second)...) {
		if seen[b] {
			t.Fatalf("message %s delivered twice while invisible", b)
		}
		seen[b] = true
	}
	if rest, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 6}); len(rest) != 0 {
		t.Fatalf("third pop got %d while all are invisible", len(rest))
	}
	for _, p := range append(first, second...) {
		if err := e.Ack(ctx, "G", p.Handle); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	if err := e.Ack(ctx, "G", first[0].Handle); !errors.Is(err, ErrHandleExpired) {
		t.Fatalf("second ack: %v, want ErrHandleExpired", err)
	}
	if err := e.flushPops(true); err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for q := range int32(2) {
		off, err := e.ConsumerOffset("G", "T", q)
		if err != nil {
			t.Fatal(err)
		}
		total += off
	}
	if total != 10 {
		t.Fatalf("committed offsets sum to %d, want 10", total)
	}
}

func TestPopRedeliveryAndChangeInvisible(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	sendN(t, e, 2)
	ctx := context.Background()
	got, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 2, Invisible: 50 * time.Millisecond})
	if len(got) != 2 || got[0].Attempt != 1 {
		t.Fatalf("pop: %+v", got)
	}
	// Keep the second one invisible longer; the old handle stops working.
	renewed, err := e.ChangeInvisible(ctx, "G", got[1].Handle, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Ack(ctx, "G", got[1].Handle); !errors.Is(err, ErrHandleExpired) {
		t.Fatalf("ack with the replaced handle: %v", err)
	}
	again, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 2, Invisible: time.Minute, Wait: 2 * time.Second})
	if err != nil || len(again) != 1 || again[0].Attempt != 2 || bodies(t, again)[0] != "0" {
		t.Fatalf("redelivery: %+v %v", again, err)
	}
	if err := e.Ack(ctx, "G", got[0].Handle); !errors.Is(err, ErrHandleExpired) {
		t.Fatalf("ack of the expired first delivery: %v", err)
	}
	if err := e.Ack(ctx, "G", again[0].Handle); err != nil {
		t.Fatal(err)
	}
	if err := e.Ack(ctx, "G", renewed); err != nil {
		t.Fatal(err)
	}
}

// TestPopDeliveryAttempt: the delivery attempt of an in-flight message
// is that of its latest delivery; a handle a redelivery replaced has none.
func TestPopDeliveryAttempt(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	sendN(t, e, 1)
	ctx := context.Background()
	first, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: 20 * time.Millisecond})
	if a, err := e.DeliveryAttempt("G", first[0].Handle); err != nil || a != 1 {
		t.Fatalf("attempt of the first delivery: %d, %v", a, err)
	}
	again, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute, Wait: 2 * time.Second})
	if err != nil || len(again) != 1 {
		t.Fatalf("redelivery: %+v %v", again, err)
	}
	if a, err := e.DeliveryAttempt("G", again[0].Handle); err != nil || a != 2 {
		t.Fatalf("attempt of the redelivery: %d, %v", a, err)
	}
	if _, err := e.DeliveryAttempt("G", first[0].Handle); !errors.Is(err, ErrHandleExpired) {
		t.Fatalf("attempt of a replaced handle: %v, want ErrHandleExpired", err)
	}
	if _, err := e.DeliveryAttempt("Other", again[0].Handle); !errors.Is(err, ErrInvalidHandle) {
		t.Fatalf("attempt with another group's handle: %v, want ErrInvalidHandle", err)
	}
}

func TestPopBadHandles(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	sendN(t, e, 1)
	ctx := context.Background()
	got, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1})
	h := got[0].Handle
	forged := h[:len(h)-1] + "0"
	if forged == h {
		forged = h[:len(h)-1] + "1"
	}
	for name, bad := range map[string]string{
		"empty":       "",
		"garbage":     "not a handle",
		"forged":      forged,
		"other topic": "1 U 0 0 1 2 " + h[len(h)-16:],
	} {
		if err := e.Ack(ctx, "G", bad); !errors.Is(err, ErrInvalidHandle) {
			t.Errorf("%s: %v, want ErrInvalidHandle", name, err)
		}
	}
	if err := e.Ack(ctx, "Other", h); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("another group's handle: %v", err)
	}
	if _, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 0}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("pop of 0: %v", err)
	}
	if _, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "Nope", Max: 1}); !errors.Is(err, ErrTopicNotFound) {
		t.Errorf("pop of unknown topic: %v", err)
	}
	if _, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Nanosecond}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("tiny invisible duration: %v", err)
	}
}

func TestPopDeadLetter(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{Name: "G", MaxAttempts: 2})
	defer e.Close()
	sendN(t, e, 1, message.PropertyKeys, "k1")
	ctx := context.Background()
	opts := PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: 20 * time.Millisecond, Wait: 2 * time.Second}
	for attempt := int32(1); attempt <= 2; attempt++ {
		got, err := e.Pop(ctx, opts)
		if err != nil || len(got) != 1 || got[0].Attempt != attempt {
			t.Fatalf("attempt %d: %+v %v", attempt, got, err)
		}
	}
	opts.Wait = 300 * time.Millisecond
	if got, _ := e.Pop(ctx, opts); len(got) != 0 {
		t.Fatalf("delivered after max attempts: %+v", got)
	}
	dlq := pullAll(t, e, "%DLQ%G", 0, 0, nil)
	if len(dlq) != 1 {
		t.Fatalf("dead-letter topic holds %d", len(dlq))
	}
	m := dlq[0]
	if m.Properties[message.PropertyDLQOriginTopic] != "T" || string(m.Body) != "0" || m.Keys()[0] != "k1" || m.ReconsumeTimes != 2 {
		t.Fatalf("dead letter: %+v", m)
	}
}

// A message stored with reconsume times (sent back by a queue-level
// consumer of the group) goes on counting its attempts when popped, in
// concurrent and FIFO groups alike, and is dead-lettered at the group's
// max attempts.
func TestPopCountsStoredReconsumeTimes(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			e := popTestEngine(t, t.TempDir(), 1, meta.Group{Name: "G", MaxAttempts: 4, FIFO: fifo})
			defer e.Close()
			ctx := context.Background()
			m := newMsg("T", "retried", message.PropertyShardingKey, "s")
			m.ReconsumeTimes = 2
			if _, err := e.Send(ctx, m); err != nil {
				t.Fatal(err)
			}
			opts := PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: 20 * time.Millisecond, Wait: 2 * time.Second}
			for attempt := int32(3); attempt <= 4; attempt++ {
				got, err := e.Pop(ctx, opts)
				if err != nil || len(got) != 1 || got[0].Attempt != attempt {
					t.Fatalf("want attempt %d: %+v %v", attempt, got, err)
				}
				if n := message.ReconsumeTimes(got[0].Record); n != attempt-1 {
					t.Fatalf("attempt %d delivered with reconsume times %d", attempt, n)
				}
			}
			opts.Wait = 300 * time.Millisecond
			if got, _ := e.Pop(ctx, opts); len(got) != 0 {
				t.Fatalf("delivered after max attempts: %+v", got)
			}
			if dlq := pullAll(t, e, "%DLQ%G", 0, 0, nil); len(dlq) != 1 || dlq[0].ReconsumeTimes != 4 {
				t.Fatalf("dead-letter topic: %+v", dlq)
			}
		})
	}
}

func TestPopConcurrentConsumers(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 4, meta.Group{})
	defer e.Close()
	const n = 2000
	sendN(t, e, n)
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Minute, Wait: 100 * time.Millisecond})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				for i, b := range bodies(t, got) {
					mu.Lock()
					seen[b]++
					mu.Unlock()
					if err := e.Ack(ctx, "G", got[i].Handle); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("consumed %d distinct messages, want %d", len(seen), n)
	}
	for b, c := range seen {
		if c != 1 {
			t.Fatalf("message %s delivered %d times", b, c)
		}
	}
}

func TestPopFIFO(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{Name: "F", FIFO: true})
	defer e.Close()
	ctx := context.Background()
	for _, s := range []string{"a1", "b1", "a2", "a3", "b2"} {
		if _, err := e.Send(ctx, newMsg("T", s, message.PropertyShardingKey, s[:1])); err != nil {
			t.Fatal(err)
		}
	}
	e.WaitDispatched(ctx)
	opts := PopOptions{Group: "F", Topic: "T", Max: 10, Invisible: time.Minute}
	got, _ := e.Pop(ctx, opts)
	if fmt.Sprint(bodies(t, got)) != "[a1 b1]" {
		t.Fatalf("first FIFO pop %v, want the head of each group", bodies(t, got))
	}
	if more, _ := e.Pop(ctx, opts); len(more) != 0 {
		t.Fatalf("pop while both groups are blocked: %v", bodies(t, more))
	}
	e.Ack(ctx, "F", got[0].Handle) // a1
	next, _ := e.Pop(ctx, opts)
	if fmt.Sprint(bodies(t, next)) != "[a2]" {
		t.Fatalf("after acking a1: %v", bodies(t, next))
	}
	// An expired message comes back before anything after it in its group.
	short, err := e.ChangeInvisible(ctx, "F", next[0].Handle, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = short
	again, _ := e.Pop(ctx, opts)
	if fmt.Sprint(bodies(t, again)) != "[a2]" || again[0].Attempt != 2 {
		t.Fatalf("after a2 expired: %v attempt %d", bodies(t, again), again[0].Attempt)
	}
	// A receive retried with the same attempt id gets the same messages.
	retry := opts
	retry.AttemptID = "attempt-7"
	e.Ack(ctx, "F", again[0].Handle)
	e.Ack(ctx, "F", got[1].Handle) // b1
	r1, _ := e.Pop(ctx, retry)
	r2, _ := e.Pop(ctx, retry)
	if fmt.Sprint(bodies(t, r1)) != "[a3 b2]" || fmt.Sprint(bodies(t, r2)) != "[a3 b2]" {
		t.Fatalf("attempt-id retry: %v then %v", bodies(t, r1), bodies(t, r2))
	}
}

// TestPopFIFOReadsOn checks that a FIFO pop finds the head of a message
// group far behind a blocked one, in later runs of its window, and none
// beyond the window.
func TestPopFIFOReadsOn(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{Name: "F", FIFO: true})
	defer e.Close()
	ctx := context.Background()
	sendN(t, e, 500, message.PropertyShardingKey, "a")
	sendN(t, e, 1, message.PropertyShardingKey, "b")              // offset 500
	sendN(t, e, fifoScanWindow, message.PropertyShardingKey, "a") // up to the window's end
	sendN(t, e, 1, message.PropertyShardingKey, "c")              // beyond it
	opts := PopOptions{Group: "F", Topic: "T", Max: 10, Invisible: time.Minute}
	got, err := e.Pop(ctx, opts)
	if err != nil || len(got) != 2 || got[0].Offset != 0 || got[1].Offset != 500 {
		t.Fatalf("pop = %d messages %v, want offsets 0 and 500", len(got), err)
	}
	if more, _ := e.Pop(ctx, opts); len(more) != 0 {
		t.Fatalf("pop while a and b are blocked got offset %d", more[0].Offset)
	}
	if errs := e.AckBatch(ctx, "F", []string{got[0].Handle, got[1].Handle}); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	next, err := e.Pop(ctx, opts)
	if err != nil || len(next) != 1 || next[0].Offset != 1 {
		t.Fatalf("pop after acknowledging = %d messages %v, want offset 1", len(next), err)
	}
}

func TestPopFIFOConcurrent(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 2, meta.Group{Name: "F", FIFO: true})
	defer e.Close()
	ctx := context.Background()
	const groups, each = 8, 40
	for i := range each {
		for g := range groups {
			key := fmt.Sprintf("g%d", g)
			if _, err := e.Send(ctx, newMsg("T", fmt.Sprintf("%s:%d", key, i), message.PropertyShardingKey, key)); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.WaitDispatched(ctx)
	var mu sync.Mutex
	last := map[string]int{}
	inflight := map[string]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := e.Pop(ctx, PopOptions{Group: "F", Topic: "T", Max: 8, Invisible: time.Minute, Wait: 200 * time.Millisecond})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, b := range bodies(t, got) {
					key, num, _ := strings.Cut(b, ":")
					var n int
					fmt.Sscan(num, &n)
					mu.Lock()
					if inflight[key] {
						t.Errorf("two messages of group %s in flight at once", key)
					}
					if prev, ok := last[key]; (ok && n != prev+1) || (!ok && n != 0) {
						t.Errorf("group %s: %d after %d", key, n, prev)
					}
					last[key] = n
					inflight[key] = true
					mu.Unlock()
				}
				for i, b := range bodies(t, got) {
					mu.Lock()
					inflight[b[:strings.IndexByte(b, ':')]] = false // before the ack that unblocks the group
					mu.Unlock()
					if err := e.Ack(ctx, "F", got[i].Handle); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	for g := range groups {
		if last[fmt.Sprintf("g%d", g)] != each-1 {
			t.Fatalf("group g%d consumed up to %d", g, last[fmt.Sprintf("g%d", g)])
		}
	}
}

func TestPopStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	e := popTestEngine(t, dir, 1, meta.Group{})
	sendN(t, e, 3)
	ctx := context.Background()
	got, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 2, Invisible: 400 * time.Millisecond})
	if len(got) != 2 {
		t.Fatalf("pop %d", len(got))
	}
	e.Ack(ctx, "G", got[0].Handle)
	e.Close()
	e = popTestEngine(t, dir, 1, meta.Group{})
	defer e.Close()
	now, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 3, Invisible: time.Minute})
	if fmt.Sprint(bodies(t, now)) != "[2]" {
		t.Fatalf("right after restart popped %v, want only the never-delivered one", bodies(t, now))
	}
	later, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 3, Invisible: time.Minute, Wait: 3 * time.Second})
	if fmt.Sprint(bodies(t, later)) != "[1]" || later[0].Attempt != 2 {
		t.Fatalf("after the invisible time: %v", bodies(t, later))
	}
	if time.Now().Before(got[1].Deadline) {
		t.Fatalf("redelivered before its deadline")
	}
	// Handles outlive the restart.
	if err := e.Ack(ctx, "G", now[0].Handle); err != nil {
		t.Fatal(err)
	}
}

// Messages acknowledged out of order stay done across a restart: their
// handles answer as already acknowledged, and acknowledging the ones
// below them moves the group's offset past them.
func TestPopOutOfOrderAcksSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	e := popTestEngine(t, dir, 1, meta.Group{})
	sendN(t, e, 5)
	ctx := context.Background()
	got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 5, Invisible: time.Minute})
	if err != nil || len(got) != 5 {
		t.Fatalf("pop %d, %v", len(got), err)
	}
	for _, i := range []int{1, 3} {
		if err := e.Ack(ctx, "G", got[i].Handle); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	e = popTestEngine(t, dir, 1, meta.Group{})
	defer e.Close()
	for _, i := range []int{1, 3} {
		if err := e.Ack(ctx, "G", got[i].Handle); !errors.Is(err, ErrAlreadyDone) {
			t.Fatalf("repeated ack of offset %d after restart: %v, want ErrAlreadyDone", i, err)
		}
	}
	for _, i := range []int{0, 2, 4} {
		if err := e.Ack(ctx, "G", got[i].Handle); err != nil {
			t.Fatalf("ack of offset %d after restart: %v", i, err)
		}
	}
	sendN(t, e, 1)
	next, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 5, Invisible: time.Minute})
	if err != nil || len(next) != 1 || next[0].Offset != 5 {
		t.Fatalf("pop after acknowledging all: %d messages, %v; want the one at offset 5", len(next), err)
	}
}

// SeekOffset moves where pops continue, also for pop state that a
// restart left on disk only, and makes none for groups that never popped.
func TestSeekOffsetMovesPops(t *testing.T) {
	dir := t.TempDir()
	e := popTestEngine(t, dir, 1, meta.Group{})
	sendN(t, e, 6)
	ctx := context.Background()
	if got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 2, Invisible: time.Minute}); err != nil || len(got) != 2 {
		t.Fatalf("pop %d, %v", len(got), err)
	}
	e.Close()
	e = popTestEngine(t, dir, 1, meta.Group{})
	defer e.Close()
	if err := e.SeekOffset("G", "T", 0, 4); err != nil {
		t.Fatal(err)
	}
	got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Minute})
	if err != nil || fmt.Sprint(bodies(t, got)) != "[4 5]" {
		t.Fatalf("pop after seeking to 4: %v, %v", bodies(t, got), err)
	}
	if err := e.SeekOffset("P", "T", 0, 3); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.pops.Load(popKey{"P", "T", 0}); ok {
		t.Fatal("seeking made pop state for a group that never popped")
	}
	if off, err := e.ConsumerOffset("P", "T", 0); err != nil || off != 3 {
		t.Fatalf("committed offset %d, %v; want 3", off, err)
	}
	if err := e.SeekOffset("G", "T", 0, 7); err == nil {
		t.Fatal("seeking past the end of the queue succeeded")
	}
}

// ResetOffset moves pop state that a restart left on disk only, as it
// moves state in memory.
func TestResetOffsetMovesPopStateOnDisk(t *testing.T) {
	dir := t.TempDir()
	e := popTestEngine(t, dir, 1, meta.Group{})
	sendN(t, e, 4)
	ctx := context.Background()
	if got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 4, Invisible: time.Hour}); err != nil || len(got) != 4 {
		t.Fatalf("pop %d, %v", len(got), err)
	}
	e.Close()
	e = popTestEngine(t, dir, 1, meta.Group{})
	defer e.Close()
	if _, err := e.ResetOffset(ctx, "G", "T", 0); err != nil {
		t.Fatal(err)
	}
	got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Minute})
	if err != nil || fmt.Sprint(bodies(t, got)) != "[0 1 2 3]" {
		t.Fatalf("pop after resetting to the start: %v, %v", bodies(t, got), err)
	}
}

func TestPopLongPollAndFilter(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 2, meta.Group{})
	defer e.Close()
	ctx := context.Background()
	f, _ := TagFilter("yes")
	go func() {
		time.Sleep(50 * time.Millisecond)
		e.Send(ctx, newMsg("T", "skip", message.PropertyTags, "no"))
		e.Send(ctx, newMsg("T", "take", message.PropertyTags, "yes"))
	}()
	start := time.Now()
	got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 4, Filter: f, Wait: 5 * time.Second})
	for err == nil && len(got) == 0 {
		got, err = e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 4, Filter: f, Wait: 5 * time.Second})
	}
	if err != nil || fmt.Sprint(bodies(t, got)) != "[take]" {
		t.Fatalf("long-polled filtered pop: %v %v", bodies(t, got), err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("long poll took %s", d)
	}
}

// The entries a pop read ahead are dropped once no pop has used them for
// a whole trim interval, and a later pop reads on from where it was.
func TestTrimIdlePops(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{Name: "G"})
	defer e.Close()
	sendN(t, e, 10)
	ctx := context.Background()
	opts := PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute}
	ahead := func() int {
		v, ok := e.pops.Load(popKey{"G", "T", 0})
		if !ok {
			t.Fatal("no pop state")
		}
		pq := v.(*popQueue)
		pq.mu.Lock()
		defer pq.mu.Unlock()
		return len(pq.ahead)
	}
	got, err := e.Pop(ctx, opts)
	if err != nil || len(got) != 1 {
		t.Fatalf("pop: %+v, %v", got, err)
	}
	if n := ahead(); n != 9 {
		t.Fatalf("%d entries read ahead, want 9", n)
	}
	e.trimIdlePops() // a pop read ahead since the last trim: kept
	if n := ahead(); n != 9 {
		t.Fatalf("%d entries read ahead after one trim, want 9", n)
	}
	e.trimIdlePops() // none since: dropped
	if n := ahead(); n != 0 {
		t.Fatalf("%d entries read ahead after an idle trim interval, want 0", n)
	}
	got, err = e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Minute})
	if err != nil || fmt.Sprint(bodies(t, got)) != "[1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("pop after the trim: %v, %v", bodies(t, got), err)
	}
}

// A message the dispatcher indexes while the queue's first offset is
// being worked out is not taken for deleted: the first offset stays 0,
// and a new group pops the message. (Reading the queue's end after its
// index once made a new group's pop state, and the queue's minimum
// offset, start past the queue's first message.)
func TestQueueMinRacesDispatch(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{AutoCreateGroups: true})
	if err := e.CreateTopic(meta.Topic{Name: "Race", ReadQueues: 1, WriteQueues: 1}); err != nil {
		t.Fatal(err)
	}
	q, err := e.readQueue("Race", 0)
	if err != nil {
		t.Fatal(err)
	}
	e.queueMinRead = func() {
		e.queueMinRead = nil
		if _, err := e.Send(context.Background(), newMsg("Race", "first")); err != nil {
			t.Error(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.WaitDispatched(ctx); err != nil {
			t.Error(err)
		}
	}
	if min, err := e.queueMin(q); err != nil || min != 0 {
		t.Fatalf("queueMin = %d, %v; want 0", min, err)
	}
	if min, err := e.MinOffset("Race", 0); err != nil || min != 0 {
		t.Fatalf("MinOffset = %d, %v; want 0", min, err)
	}
	got, err := e.Pop(context.Background(), PopOptions{Group: "new", Topic: "Race", Max: 8})
	if err != nil || len(got) != 1 {
		t.Fatalf("a new group popped %d messages (%v), want the first", len(got), err)
	}
}
