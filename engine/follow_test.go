package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
)

// followBodies reads n records from f and returns their bodies, checking
// that offsets increase and each record's Next is where the following one
// starts.
func followBodies(t *testing.T, f *Follower, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	last := int64(-1)
	for len(out) < n {
		recs, err := f.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d records: %v", len(out), err)
		}
		for _, r := range recs {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			m, _, err := message.DecodeStored(r.Data)
			if err != nil {
				t.Fatalf("record at %d: %v", r.Offset, err)
			}
			if m.CommitLogOffset != r.Offset {
				t.Fatalf("record at %d says it is at %d", r.Offset, m.CommitLogOffset)
			}
			out = append(out, string(m.Body))
		}
	}
	return out
}

// waitFollowerWaiting polls, with a deadline, for a goroutine to wait on
// the dispatcher's progress.
func waitFollowerWaiting(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.disp.mu.Lock()
		waiting := e.disp.moved != nil
		e.disp.mu.Unlock()
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower never waited")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFollow(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 10})
	defer e.Close()
	mustTopic(t, e, "A", 2)
	mustTopic(t, e, "B", 1)
	ctx := context.Background()
	first, _ := e.LogRange()
	var want []string
	var results []SendResult
	body := string(bytes.Repeat([]byte("f"), 1500))
	for i := range 120 { // across a few segments
		topic := []string{"A", "B"}[i%2]
		b := fmt.Sprintf("%03d%s", i, body)
		res, err := e.Send(ctx, newMsg(topic, b))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b)
		results = append(results, res)
	}
	f, err := e.Follow(first)
	if err != nil {
		t.Fatal(err)
	}
	got := followBodies(t, f, len(want))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("followed %d records, not the %d sent in order", len(got), len(want))
	}

	// From the middle: a record's offset.
	mid, err := e.Follow(results[70].CommitLogOffset)
	if err != nil {
		t.Fatal(err)
	}
	if got := followBodies(t, mid, 50); fmt.Sprint(got) != fmt.Sprint(want[70:]) {
		t.Fatalf("from record 70: %d records, not the rest in order", len(got))
	}

	// Caught up: Next waits for the next append.
	type next struct {
		recs []string
		err  error
	}
	done := make(chan next, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		recs, err := f.Next(ctx)
		var bodies []string
		for _, r := range recs {
			m, _, _ := message.DecodeStored(r.Data)
			bodies = append(bodies, string(m.Body))
		}
		done <- next{bodies, err}
	}()
	waitFollowerWaiting(t, e)
	select {
	case n := <-done:
		t.Fatalf("Next returned with nothing new: %v, %v", n.recs, n.err)
	default:
	}
	if _, err := e.SendBatch(ctx, []*message.Message{newMsg("B", "late-1"), newMsg("B", "late-2")}, 0); err != nil {
		t.Fatal(err)
	}
	n := <-done
	if n.err != nil || fmt.Sprint(n.recs) != "[late-1 late-2]" {
		t.Fatalf("Next after waiting: %q, %v", n.recs, n.err)
	}
	if _, end := e.LogRange(); f.Position() != end {
		t.Fatalf("position %d after reading everything, log end %d", f.Position(), end)
	}
}

func TestFollowStops(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	mustTopic(t, e, "T", 1)
	_, end := e.LogRange()
	f, err := e.Follow(end)
	if err != nil {
		t.Fatal(err)
	}

	// Cancelled while waiting.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := f.Next(ctx)
		errc <- err
	}()
	waitFollowerWaiting(t, e)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Next cancelled while waiting: %v", err)
	}

	// Closed while waiting.
	go func() {
		_, err := f.Next(context.Background())
		errc <- err
	}()
	waitFollowerWaiting(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Next when the engine closed: %v", err)
	}
	if _, err := f.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next on a closed engine: %v", err)
	}
	if _, err := e.Follow(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Follow on a closed engine: %v", err)
	}
}

func TestFollowBadOffsets(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 10, RetentionAge: time.Hour})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	body := string(bytes.Repeat([]byte("r"), 4000))
	for i := range 100 { // about 6 segments
		if _, err := e.Send(ctx, newMsg("T", fmt.Sprintf("%03d%s", i, body))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	_, end := e.LogRange()
	if _, err := e.Follow(end + 8); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Follow past the end: %v", err)
	}
	if _, err := e.Follow(-8); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Follow from a negative offset: %v", err)
	}
	odd, err := e.Follow(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := odd.Next(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Next from an offset off the frame grid: %v", err)
	}

	early, err := e.Follow(0) // before retention: read later
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := e.ApplyRetention(time.Now().Add(2 * time.Hour)); err != nil || removed == 0 {
		t.Fatalf("retention removed %d segments, %v", removed, err)
	}
	first, _ := e.LogRange()
	var gone *OffsetGoneError
	if _, err := e.Follow(0); !errors.As(err, &gone) || !errors.Is(err, ErrOffsetGone) || gone.Offset != 0 || gone.First != first {
		t.Fatalf("Follow from a deleted offset: %v (log starts at %d)", err, first)
	}
	if _, err := early.Next(ctx); !errors.As(err, &gone) || gone.First != first {
		t.Fatalf("Next of a follower whose records were deleted: %v (log starts at %d)", err, first)
	}
	// Following again from First reads what is left, in order.
	f, err := e.Follow(gone.First)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := f.Next(ctx)
	if err != nil || len(recs) == 0 {
		t.Fatalf("Next from the first offset: %d records, %v", len(recs), err)
	}
	m, _, err := message.DecodeStored(recs[0].Data)
	if err != nil || m.QueueOffset == 0 || !bytes.HasPrefix(m.Body, []byte(fmt.Sprintf("%03d", m.QueueOffset))) {
		t.Fatalf("first record left: %v", err)
	}
}

func TestFollowBatchBounds(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 20, MaxMessageSize: 5 << 20})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	small := make([]*message.Message, FollowMaxRecords+10)
	for i := range small {
		small[i] = newMsg("T", fmt.Sprint(i))
	}
	if _, err := e.SendBatch(ctx, small, 0); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), FollowMaxBytes/2+1)
	for range 3 {
		if _, err := e.Send(ctx, &message.Message{Topic: "T", Body: big}); err != nil {
			t.Fatal(err)
		}
	}
	huge := &message.Message{Topic: "T", Body: bytes.Repeat([]byte("h"), FollowMaxBytes+1)}
	if _, err := e.Send(ctx, huge); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := e.Follow(0)
	if err != nil {
		t.Fatal(err)
	}
	// 1024 small; 10 small and a big one; a big one; a big one; the huge
	// one alone, over the byte bound.
	for i, want := range []int{FollowMaxRecords, 11, 1, 1, 1} {
		recs, err := f.Next(ctx)
		if err != nil || len(recs) != want {
			t.Fatalf("batch %d: %d records, %v; want %d", i, len(recs), err, want)
		}
	}
}
