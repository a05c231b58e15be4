package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// A pop already waiting when a message's invisible time is cut short must
// deliver the message when the new, earlier deadline passes, not when the
// deadline it saw before it started waiting does.
func TestPopWaitingSeesShortenedDeadline(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	sendN(t, e, 1)
	ctx := context.Background()
	got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("pop: %+v %v", got, err)
	}

	type result struct {
		ms  []PoppedMessage
		err error
	}
	asleep := make(chan struct{}, 1)
	e.popWaiting = func() { signal(asleep) }
	waiting := make(chan result, 1)
	go func() {
		ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute, Wait: 30 * time.Second})
		waiting <- result{ms, err}
	}()
	<-asleep // the second pop found nothing and waits
	start := time.Now()
	if _, err := e.ChangeInvisible(ctx, "G", got[0].Handle, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-waiting:
		if r.err != nil || len(r.ms) != 1 || r.ms[0].Attempt != 2 {
			t.Fatalf("redelivery: %+v %v", r.ms, r.err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("redelivered after %v, want about 200ms", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting pop slept through the shortened deadline")
	}
}

// A pop waiting because its queue has as many messages in flight as it
// may must be woken by an acknowledgement, and a FIFO pop waiting on a
// blocked message group by the acknowledgement that unblocks it.
func TestPopWaitingWokenByAck(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-flight cap", true: "FIFO"}[fifo], func(t *testing.T) {
			e := popTestEngine(t, t.TempDir(), 1, meta.Group{Name: "G", FIFO: fifo})
			defer e.Close()
			ctx := context.Background()
			held := maxInflight
			if fifo {
				held = 1 // the head of the only message group
			}
			sendN(t, e, held+1, message.PropertyShardingKey, "order")
			var handles []string
			for len(handles) < held {
				got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Minute})
				if err != nil || len(got) == 0 {
					t.Fatalf("holding messages: %d popped, %v", len(got), err)
				}
				for _, p := range got {
					handles = append(handles, p.Handle)
				}
			}
			asleep := make(chan struct{}, 1)
			e.popWaiting = func() { signal(asleep) }
			waiting := make(chan []PoppedMessage, 1)
			go func() {
				ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute, Wait: 30 * time.Second})
				if err != nil {
					t.Error(err)
				}
				waiting <- ms
			}()
			<-asleep
			if errs := e.AckBatch(ctx, "G", handles[:1]); errs[0] != nil {
				t.Fatal(errs[0])
			}
			select {
			case ms := <-waiting:
				if len(ms) != 1 || ms[0].Offset != int64(held) {
					t.Fatalf("the waiting pop got %d messages, want the one at offset %d", len(ms), held)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the acknowledgement did not wake the waiting pop")
			}
		})
	}
}

// signal sends on ch without blocking: a waiter already signalled is
// signalled enough.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// A pop waiting on a master that is demoted meanwhile does not deliver
// when it wakes: it is refused with ErrNotMaster, as a new pop is.
func TestPopWaitingRefusedAfterDemotion(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{Name: "G"})
	defer e.Close()
	sendN(t, e, 1)
	ctx := context.Background()
	got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("pop: %+v %v", got, err)
	}
	if _, err := e.ChangeInvisible(ctx, "G", got[0].Handle, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	asleep := make(chan struct{}, 1)
	e.popWaiting = func() { signal(asleep) }
	type result struct {
		ms  []PoppedMessage
		err error
	}
	waiting := make(chan result, 1)
	go func() {
		ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute, Wait: 30 * time.Second})
		waiting <- result{ms, err}
	}()
	<-asleep // it found the message in flight and waits for it
	if err := e.Demote(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-waiting: // woken when the message is visible again
		if !errors.Is(r.err, ErrNotMaster) || len(r.ms) != 0 {
			t.Fatalf("the waiting pop after demotion: %d messages, %v; want ErrNotMaster", len(r.ms), r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting pop never woke")
	}
}
