package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// Pops that read the consume queue ahead deliver every message once, in
// queue order, across the read-ahead's runs, while new messages arrive
// and after the group's offset is reset.
func TestPopReadAhead(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	ctx := context.Background()
	sent := 0
	send := func(n int) {
		t.Helper()
		for range n {
			if _, err := e.Send(ctx, newMsg("T", fmt.Sprint(sent))); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		if err := e.WaitDispatched(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	popAll := func(max int) {
		t.Helper()
		for {
			ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: max, Invisible: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 {
				return
			}
			got = append(got, bodies(t, ms)...)
			for _, m := range ms {
				if err := e.Ack(ctx, "G", m.Handle); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	want := func() []string {
		var w []string
		for i := range sent {
			w = append(w, fmt.Sprint(i))
		}
		return w
	}

	send(popReadAhead + 50)
	ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 7, Invisible: time.Minute})
	if err != nil || len(ms) != 7 {
		t.Fatalf("pop: %d messages, %v", len(ms), err)
	}
	got = append(got, bodies(t, ms)...)
	for _, m := range ms {
		if err := e.Ack(ctx, "G", m.Handle); err != nil {
			t.Fatal(err)
		}
	}
	send(10) // past what the first pop read ahead
	popAll(13)
	if fmt.Sprint(got) != fmt.Sprint(want()) {
		t.Fatalf("popped %v\nwant %v", got, want())
	}

	// A reset moves the cursor back under what was read ahead.
	if _, err := e.ResetOffset(ctx, "G", "T", 0); err != nil {
		t.Fatal(err)
	}
	got = nil
	popAll(32)
	if fmt.Sprint(got) != fmt.Sprint(want()) {
		t.Fatalf("after the reset popped %d messages, want all %d again", len(got), sent)
	}
}

// Records are read into the caller's buffer, which they alias until the
// buffer is reused; a buffer that is too small grows.
func TestPopBuffer(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	ctx := context.Background()
	body := bytes.Repeat([]byte("b"), 3000)
	for i := range 4 {
		if _, err := e.Send(ctx, newMsg("T", fmt.Sprint(i, string(body)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 100)
	for round := range 2 {
		ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 2, Invisible: time.Minute, Buffer: &buf})
		if err != nil || len(ms) != 2 {
			t.Fatalf("round %d: %d messages, %v", round, len(ms), err)
		}
		n := 0
		for i, m := range ms {
			if !bytes.Contains(buf, m.Record) || len(m.Record) < 3000 {
				t.Fatalf("round %d: record %d is not in the buffer", round, i)
			}
			n += len(m.Record)
		}
		if len(buf) != n {
			t.Fatalf("round %d: buffer holds %d bytes, the records %d", round, len(buf), n)
		}
		if bodies(t, ms)[0] != fmt.Sprint(2*round, string(body)) {
			t.Fatalf("round %d: wrong message first", round)
		}
	}
}

// AckBatch acknowledges as Ack does, each handle on its own: handles of
// several queues and topics in any order, garbage, handles of another
// group, replaced and repeated handles.
func TestAckBatch(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 3, meta.Group{})
	defer e.Close()
	mustTopic(t, e, "U", 2)
	ctx := context.Background()
	sendN(t, e, 12)
	for i := range 4 {
		if _, err := e.Send(ctx, newMsg("U", fmt.Sprint("u", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Minute})
	if err != nil || len(ms) != 12 {
		t.Fatalf("pop T: %d messages, %v", len(ms), err)
	}
	us, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "U", Max: 32, Invisible: time.Minute})
	if err != nil || len(us) != 4 {
		t.Fatalf("pop U: %d messages, %v", len(us), err)
	}
	other, err := e.Pop(ctx, PopOptions{Group: "H", Topic: "U", Max: 1, Invisible: time.Minute})
	if err != nil || len(other) != 1 {
		t.Fatalf("pop U for H: %d messages, %v", len(other), err)
	}
	replaced := ms[5].Handle
	if _, err := e.ChangeInvisible(ctx, "G", replaced, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := e.Ack(ctx, "G", ms[6].Handle); err != nil {
		t.Fatal(err)
	}

	handles := []string{
		ms[0].Handle, us[0].Handle, ms[1].Handle, ms[2].Handle, // queues interleaved
		"garbage", other[0].Handle, replaced, ms[6].Handle,
		us[1].Handle, ms[3].Handle, ms[3].Handle, // the second is already done
	}
	for _, m := range ms[7:] {
		handles = append(handles, m.Handle)
	}
	errs := e.AckBatch(ctx, "G", handles)
	if len(errs) != len(handles) {
		t.Fatalf("%d errors for %d handles", len(errs), len(handles))
	}
	wantErr := map[int]func(error) bool{
		4:  func(err error) bool { return errors.Is(err, ErrInvalidHandle) },
		5:  func(err error) bool { return errors.Is(err, ErrInvalidHandle) }, // another group's
		6:  func(err error) bool { return errors.Is(err, ErrHandleExpired) && !errors.Is(err, ErrAlreadyDone) },
		7:  func(err error) bool { return errors.Is(err, ErrAlreadyDone) },
		10: func(err error) bool { return errors.Is(err, ErrAlreadyDone) },
	}
	for i, err := range errs {
		if check, ok := wantErr[i]; ok {
			if !check(err) {
				t.Errorf("handle %d: %v", i, err)
			}
		} else if err != nil {
			t.Errorf("handle %d: %v", i, err)
		}
	}
	// What AckBatch acknowledged is done; what it refused is not.
	for _, h := range []string{ms[0].Handle, us[0].Handle, ms[9].Handle} {
		if err := e.Ack(ctx, "G", h); !errors.Is(err, ErrAlreadyDone) {
			t.Errorf("ack after AckBatch: %v", err)
		}
	}
	if err := e.Ack(ctx, "H", other[0].Handle); err != nil {
		t.Errorf("the other group's message: %v", err)
	}
	if errs := e.AckBatch(ctx, "G", nil); len(errs) != 0 {
		t.Fatalf("empty batch: %v", errs)
	}
	e.Close()
	for _, err := range e.AckBatch(ctx, "G", []string{ms[4].Handle}) {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	}
}

// A message read ahead and then redelivered is read again from the
// commit log, with its attempt raised.
func TestPopReadAheadRedelivery(t *testing.T) {
	e := popTestEngine(t, t.TempDir(), 1, meta.Group{})
	defer e.Close()
	sendN(t, e, 5)
	ctx := context.Background()
	ms, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 2, Invisible: minInvisible})
	if err != nil || len(ms) != 2 {
		t.Fatalf("pop: %d messages, %v", len(ms), err)
	}
	time.Sleep(2 * minInvisible)
	again, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 5, Invisible: time.Minute})
	if err != nil || len(again) != 5 {
		t.Fatalf("second pop: %d messages, %v", len(again), err)
	}
	attempts := map[string]int32{}
	for i, b := range bodies(t, again) {
		attempts[b] = again[i].Attempt
	}
	want := map[string]int32{"0": 2, "1": 2, "2": 1, "3": 1, "4": 1}
	if fmt.Sprint(attempts) != fmt.Sprint(want) {
		t.Fatalf("attempts %v, want %v", attempts, want)
	}
}

// BenchmarkPopAckBatch is BenchmarkPopAck acknowledging each pop's
// messages with one AckBatch.
func BenchmarkPopAckBatch(b *testing.B) {
	e, ctx := popBenchEngine(b)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	var done atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var buf []byte
			handles := make([]string, 0, 32)
			for done.Load() < int64(b.N) {
				got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "B", Max: 32, Invisible: time.Minute, Buffer: &buf})
				if err != nil {
					b.Error(err)
					return
				}
				handles = handles[:0]
				for _, p := range got {
					handles = append(handles, p.Handle)
				}
				for _, err := range e.AckBatch(ctx, "G", handles) {
					if err != nil {
						b.Error(err)
						return
					}
				}
				done.Add(int64(len(got)))
			}
		})
	}
	wg.Wait()
}

// BenchmarkPopAckBatchManyInflight is BenchmarkPopAckBatch with 1,024
// messages of every queue left in flight (a consumer that holds many
// messages, or one that lost them), which every pop of those queues
// meets.
func BenchmarkPopAckBatchManyInflight(b *testing.B) {
	const held = 1024
	e, ctx := popBenchEngineWith(b, 8*held)
	for held := 8 * held; held > 0; {
		got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "B", Max: 32, Invisible: time.Hour})
		if err != nil || len(got) == 0 {
			b.Fatalf("holding messages: %d popped, %v", len(got), err)
		}
		held -= len(got)
	}
	popAckBatches(b, e, "G")
}

// BenchmarkPopAckBatchFIFO pops 1 KiB messages of 256 message groups for
// a FIFO group, 32 at a time, and acknowledges each pop's with one
// AckBatch.
func BenchmarkPopAckBatchFIFO(b *testing.B) {
	e := benchEngine(b, &Options{})
	if err := e.CreateGroup(meta.Group{Name: "F", FIFO: true}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), 1024)
	batch := make([]*message.Message, 32)
	for sent := 0; sent < b.N+8*32; sent += len(batch) {
		for i := range batch {
			batch[i] = &message.Message{Topic: "B", Body: body}
			batch[i].SetProperty(message.PropertyShardingKey, "order-"+strconv.Itoa((sent+i)%256))
		}
		if _, err := e.SendBatch(ctx, batch, AnyQueue); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		b.Fatal(err)
	}
	popAckBatches(b, e, "F")
}

// popAckBatches times b.N messages of topic B popped for group 32 at a
// time from one goroutine, each pop's acknowledged with one AckBatch.
func popAckBatches(b *testing.B, e *Engine, group string) {
	ctx := context.Background()
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	var buf []byte
	handles := make([]string, 0, 32)
	for n := 0; n < b.N; {
		got, err := e.Pop(ctx, PopOptions{Group: group, Topic: "B", Max: 32, Invisible: time.Minute, Buffer: &buf})
		if err != nil {
			b.Fatal(err)
		}
		handles = handles[:0]
		for _, p := range got {
			handles = append(handles, p.Handle)
		}
		for _, err := range e.AckBatch(ctx, group, handles) {
			if err != nil {
				b.Fatal(err)
			}
		}
		n += len(got)
	}
}

// BenchmarkPopNothing is a pop that finds nothing visible in any of 8
// queues: what a waiting pop woken for another group's message costs.
func BenchmarkPopNothing(b *testing.B) {
	e := benchEngine(b, &Options{AutoCreateGroups: true})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "B", Max: 32, Invisible: time.Minute})
		if err != nil || len(got) != 0 {
			b.Fatalf("pop: %d messages, %v", len(got), err)
		}
	}
}
