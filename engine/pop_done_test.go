package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/meta"
)

// A handle whose message was acknowledged or dead-lettered reports
// ErrAlreadyDone (and ErrHandleExpired); a handle replaced by a lease
// change or a redelivery reports only ErrHandleExpired.
func TestPopHandleAlreadyDone(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	sendN(t, e, 3)
	ctx := context.Background()
	ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 3, Invisible: time.Minute})
	if err != nil || len(ms) != 3 {
		t.Fatalf("pop: %d messages, %v", len(ms), err)
	}

	if err := e.Ack(ctx, "G", ms[1].Handle); err != nil {
		t.Fatal(err)
	}
	err = e.Ack(ctx, "G", ms[1].Handle)
	if !errors.Is(err, ErrAlreadyDone) || !errors.Is(err, ErrHandleExpired) {
		t.Fatalf("second ack of a message acked out of order: %v", err)
	}
	if err := e.Ack(ctx, "G", ms[0].Handle); err != nil {
		t.Fatal(err)
	}
	if err := e.Ack(ctx, "G", ms[0].Handle); !errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("second ack below the acked prefix: %v", err)
	}

	renewed, err := e.ChangeInvisible(ctx, "G", ms[2].Handle, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = e.Ack(ctx, "G", ms[2].Handle)
	if !errors.Is(err, ErrHandleExpired) || errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("ack with the handle a lease change replaced: %v", err)
	}
	if err := e.DeadLetter(ctx, "G", renewed); err != nil {
		t.Fatal(err)
	}
	if err := e.Ack(ctx, "G", renewed); !errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("ack after dead-lettering: %v", err)
	}
}

// A flush saves the pop states changed since the last one, and never a
// state whose group was deleted meanwhile.
func TestFlushSavesChangedPopStates(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 2, meta.Group{Name: "G"})
	defer e.Close()
	sendN(t, e, 4)
	ctx := context.Background()
	if got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute}); err != nil || len(got) != 1 {
		t.Fatalf("pop %d, %v", len(got), err)
	}
	if err := e.flushPops(true); err != nil {
		t.Fatal(err)
	}
	if n := len(e.popDirty.take()); n != 0 {
		t.Fatalf("%d states listed as changed after a flush", n)
	}
	saved := 0
	for q := range int32(2) {
		if _, ok, err := e.meta.PopState("G", "T", q); err != nil {
			t.Fatal(err)
		} else if ok {
			saved++
		}
	}
	if saved == 0 {
		t.Fatal("the popped queue's state was not saved")
	}
	if got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute}); err != nil || len(got) != 1 {
		t.Fatalf("pop %d, %v", len(got), err)
	}
	if err := e.DeleteGroup("G"); err != nil {
		t.Fatal(err)
	}
	if err := e.flushPops(true); err != nil {
		t.Fatal(err)
	}
	for q := range int32(2) {
		if _, ok, err := e.meta.PopState("G", "T", q); err != nil || ok {
			t.Fatalf("pop state of queue %d of the deleted group saved again (%v)", q, err)
		}
	}
}

// A flush that read a group's pop state just before the group (or its
// topic) was deleted does not write the state back after the deletion:
// the hook runs the deletion between the flush's read and its save.
func TestFlushRacingDeleteSavesNoDeletedState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete func(e *Engine) error
	}{
		{"group", func(e *Engine) error { return e.DeleteGroup("G") }},
		{"topic", func(e *Engine) error { return e.DeleteTopic("T") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e := popTestEngine(t, dir, 2, meta.Group{Name: "G"})
			defer e.Close()
			sendN(t, e, 4)
			ctx := context.Background()
			// The first flush to find the popped state changed (this
			// test's or the background one) deletes in its hook.
			var once sync.Once
			ran := make(chan struct{})
			hook := func() {
				once.Do(func() {
					if err := tc.delete(e); err != nil {
						t.Error(err)
					}
					close(ran)
				})
			}
			e.popSaveHook.Store(&hook)
			if got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 1, Invisible: time.Minute}); err != nil || len(got) != 1 {
				t.Fatalf("pop %d, %v", len(got), err)
			}
			if err := e.flushPops(true); err != nil {
				t.Fatal(err)
			}
			select { // a flush took the state: its deletion has run
			case <-ran:
			case <-time.After(10 * time.Second):
				t.Fatal("no flush found the popped state changed")
			}
			e.Close() // every flush has finished
			e = openTest(t, dir, &Options{AutoCreateGroups: true})
			defer e.Close()
			for q := range int32(2) {
				if _, ok, err := e.meta.PopState("G", "T", q); err != nil || ok {
					t.Fatalf("pop state of queue %d saved after the %s was deleted (%v)", q, tc.name, err)
				}
			}
		})
	}
}
