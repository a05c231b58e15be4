package engine

import (
	"context"
	"errors"
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
