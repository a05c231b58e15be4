package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

func TestSendBackRetriesThenDeadLetters(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	backoff := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	if err := e.CreateGroup(meta.Group{Name: "G", MaxAttempts: 3, RetryBackoff: backoff}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sent, err := e.Send(ctx, newMsg("T", "payload", message.PropertyKeys, "order-1", "user", "u1"))
	if err != nil {
		t.Fatal(err)
	}
	got := waitMessages(t, e, "T", 0, 1, time.Second)[0]
	retry := message.RetryTopic("G")
	for attempt := 1; attempt <= 2; attempt++ {
		start := time.Now()
		if err := e.SendBack(ctx, "G", got.CommitLogOffset, SendBackOptions{}); err != nil {
			t.Fatalf("send back %d: %v", attempt, err)
		}
		got = waitMessages(t, e, retry, 0, attempt, 5*time.Second)[attempt-1]
		if d := time.Since(start); d < backoff[attempt-1] {
			t.Fatalf("retry %d came after %s, before its backoff %s", attempt, d, backoff[attempt-1])
		}
		if got.ReconsumeTimes != int32(attempt) || got.UniqKey() != sent.MsgID || got.Properties[message.PropertyRetryTopic] != "T" ||
			got.Keys()[0] != "order-1" || got.Properties["user"] != "u1" || string(got.Body) != "payload" {
			t.Fatalf("retry %d lost something: %+v", attempt, got)
		}
	}
	// The third delivery was the last attempt: the next failure dead-letters.
	if err := e.SendBack(ctx, "G", got.CommitLogOffset, SendBackOptions{}); err != nil {
		t.Fatal(err)
	}
	dlq := pullAll(t, e, message.DLQTopic("G"), 0, 0, nil)
	if len(dlq) != 1 || dlq[0].UniqKey() != sent.MsgID || dlq[0].Properties[message.PropertyDLQOriginTopic] != "T" {
		t.Fatalf("dead-letter topic: %+v", dlq)
	}
	res, err := e.ResendDeadLetter(ctx, "G", sent.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	back := waitMessages(t, e, "T", 0, 2, time.Second)[1]
	if back.UniqKey() != sent.MsgID || back.ReconsumeTimes != 0 || res.QueueOffset != 1 || res.Topic != "T" {
		t.Fatalf("resent dead letter: %+v", back)
	}
	// The dead letter stays where it is, and can be resent again (the
	// copy resent last is the newest message with its id, in another
	// topic); a message that never was a dead letter cannot.
	res, err = e.ResendDeadLetter(ctx, "G", sent.MsgID)
	if err != nil || res.QueueOffset != 2 {
		t.Fatalf("resending the dead letter again: %+v, %v", res, err)
	}
	other, err := e.Send(ctx, newMsg("T", "never failed"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ResendDeadLetter(ctx, "G", other.MsgID); !errors.Is(err, ErrMessageNotFound) {
		t.Fatalf("resending a message that is not a dead letter: %v", err)
	}
}

func TestSendBackExplicitLevelAndDLQ(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{DelayLevels: []time.Duration{20 * time.Millisecond}, AutoCreateGroups: true})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	e.Send(ctx, newMsg("T", "x"))
	m := waitMessages(t, e, "T", 0, 1, time.Second)[0]
	if err := e.SendBack(ctx, "Fresh", m.CommitLogOffset, SendBackOptions{DelayLevel: 5}); err != nil {
		t.Fatalf("send back for a new group: %v", err)
	}
	waitMessages(t, e, message.RetryTopic("Fresh"), 0, 1, 2*time.Second)
	if err := e.SendBack(ctx, "Fresh", m.CommitLogOffset, SendBackOptions{DelayLevel: -1}); err != nil {
		t.Fatal(err)
	}
	if got := pullAll(t, e, message.DLQTopic("Fresh"), 0, 0, nil); len(got) != 1 {
		t.Fatalf("delay level -1 did not dead-letter: %d", len(got))
	}
	if err := e.SendBack(ctx, "Fresh", 999999, SendBackOptions{}); !errors.Is(err, ErrMessageNotFound) {
		t.Fatalf("send back of a bad offset: %v", err)
	}
}

func TestResetOffsetByTime(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{AutoCreateGroups: true})
	defer e.Close()
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	for i := range 6 {
		e.SendToQueue(ctx, newMsg("T", "old"), int32(i%2))
	}
	time.Sleep(5 * time.Millisecond) // store times are in ms
	mid := time.Now().UnixMilli()
	for i := range 4 {
		e.SendToQueue(ctx, newMsg("T", "new"), int32(i%2))
	}
	e.WaitDispatched(ctx)
	// A pop consumer that consumed everything is moved back.
	for {
		got, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32})
		if len(got) == 0 {
			break
		}
		for _, p := range got {
			e.Ack(ctx, "G", p.Handle)
		}
	}
	events := e.Subscribe(ctx)
	offs, err := e.ResetOffset(ctx, "G", "T", mid)
	if err != nil {
		t.Fatal(err)
	}
	if offs[0] != 3 || offs[1] != 3 {
		t.Fatalf("reset to %v, want 3 in both queues", offs)
	}
	ev := <-events
	if ev.Kind != EventOffsetReset || ev.Group != "G" || ev.Offsets[1] != 3 {
		t.Fatalf("event %+v", ev)
	}
	var again []string
	for {
		got, _ := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32})
		if len(got) == 0 {
			break
		}
		again = append(again, bodies(t, got)...)
	}
	if len(again) != 4 {
		t.Fatalf("after the reset popped %v, want the 4 new ones", again)
	}
	for _, b := range again {
		if b != "new" {
			t.Fatalf("popped %q after the reset", b)
		}
	}
	if off, _ := e.ConsumerOffset("G", "T", 0); off != 3 {
		t.Fatalf("committed offset %d", off)
	}
}
