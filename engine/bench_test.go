package engine

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/timer"
)

func benchEngine(b *testing.B, o *Options) *Engine {
	b.Helper()
	if o.SegmentSize == 0 {
		o.SegmentSize = 256 << 20
	}
	e := openTest(b, b.TempDir(), o)
	b.Cleanup(func() { e.Close() })
	mustTopic(b, e, "B", 8)
	return e
}

// BenchmarkSend measures the append path of one 1 KiB message per call. Its
// allocs/op is the figure the design bounds (at most one heap object per
// message: the generated message id).
func BenchmarkSend(b *testing.B) {
	e := benchEngine(b, &Options{})
	m := &message.Message{Topic: "B", Body: bytes.Repeat([]byte("x"), 1024)}
	m.SetTags("bench")
	ctx := context.Background()
	b.SetBytes(1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSendBatch32(b *testing.B) {
	e := benchEngine(b, &Options{})
	batch := make([]*message.Message, 32)
	for i := range batch {
		batch[i] = &message.Message{Topic: "B", Body: bytes.Repeat([]byte("x"), 1024)}
	}
	ctx := context.Background()
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.SendBatch(ctx, batch, AnyQueue); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSendSyncParallel(b *testing.B) {
	e := benchEngine(b, &Options{Flush: FlushSync})
	ctx := context.Background()
	b.SetBytes(1024)
	b.ReportAllocs()
	b.SetParallelism(32) // 64 senders on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		m := &message.Message{Topic: "B", Body: bytes.Repeat([]byte("x"), 1024)}
		for pb.Next() {
			if _, err := e.Send(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPull32 reads 1 KiB messages from the page cache, 32 per pull.
func BenchmarkPull32(b *testing.B) { benchPull32(b, &Options{}, 32*1024, "") }

// BenchmarkPull32Group pulls for a consumer group, as front-ends do: each
// pull is counted and recorded in the group's delivery history.
func BenchmarkPull32Group(b *testing.B) {
	benchPull32Ctx(b, hook.NewContext(context.Background(), &hook.Client{Protocol: "remoting", ID: "c", Group: "G"}), &Options{}, 32*1024, "")
}

// benchPull32 fills queue 0 of topic B with perQueue 1 KiB messages
// (tagged when tag is set) on an engine opened with o, then measures
// pulls of 32, going round the queue.
func benchPull32(b *testing.B, o *Options, perQueue int64, tag string) {
	benchPull32Ctx(b, context.Background(), o, perQueue, tag)
}

// benchPull32Ctx is benchPull32 with the pulls made with ctx.
func benchPull32Ctx(b *testing.B, ctx context.Context, o *Options, perQueue int64, tag string) {
	e := benchEngine(b, o)
	batch := make([]*message.Message, 32)
	for i := range batch {
		batch[i] = &message.Message{Topic: "B", Body: bytes.Repeat([]byte("x"), 1024)}
		if tag != "" {
			batch[i].SetTags(tag)
		}
	}
	for range perQueue / 32 {
		if _, err := e.SendBatch(ctx, batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		res, err := e.Pull(ctx, "B", 0, off, 32, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Records) != 32 {
			b.Fatalf("pulled %d", len(res.Records))
		}
		off = res.NextOffset
		res.Release()
		if off == perQueue {
			off = 0
		}
	}
}

// popBenchEngine opens an engine holding enough 1 KiB messages on topic
// "B", indexed, for b.N pops by 4 consumers of 32 at a time.
func popBenchEngine(b *testing.B) (*Engine, context.Context) {
	return popBenchEngineWith(b, 0)
}

// popBenchEngineWith is popBenchEngine with extra messages beyond those.
func popBenchEngineWith(b *testing.B, extra int) (*Engine, context.Context) {
	e := benchEngine(b, &Options{AutoCreateGroups: true})
	ctx := context.Background()
	batch := make([]*message.Message, 32)
	for i := range batch {
		batch[i] = &message.Message{Topic: "B", Body: bytes.Repeat([]byte("x"), 1024)}
	}
	total := b.N + 4*32*8 + extra
	for sent := 0; sent < total; sent += 32 {
		if _, err := e.SendBatch(ctx, batch, AnyQueue); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		b.Fatal(err)
	}
	return e, ctx
}

// BenchmarkPopAck pops 1 KiB messages in batches of 32 with 4 consumers and
// acknowledges each.
func BenchmarkPopAck(b *testing.B) {
	e, ctx := popBenchEngine(b)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	var done atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(b.N) {
				got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "B", Max: 32, Invisible: time.Minute})
				if err != nil {
					b.Error(err)
					return
				}
				for _, p := range got {
					if err := e.Ack(ctx, "G", p.Handle); err != nil {
						b.Error(err)
						return
					}
				}
				done.Add(int64(len(got)))
			}
		}()
	}
	wg.Wait()
}

// BenchmarkSendIndexed sends 1 KiB messages from 16 goroutines and
// includes the time to index them: the baseline of BenchmarkTransaction.
func BenchmarkSendIndexed(b *testing.B) {
	e := benchEngine(b, &Options{})
	ctx := context.Background()
	b.SetBytes(1024)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		m := &message.Message{Topic: "B", Body: bytes.Repeat([]byte("x"), 1024)}
		for pb.Next() {
			if _, err := e.Send(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	})
	if err := e.WaitDispatched(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTransaction sends a 1 KiB half message and commits it, per
// operation, from 16 goroutines, and includes the time to index
// everything.
func BenchmarkTransaction(b *testing.B) {
	e := benchEngine(b, &Options{})
	ctx := context.Background()
	b.SetBytes(1024)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		m := halfMsg(string(bytes.Repeat([]byte("x"), 1024)))
		m.Topic = "B"
		delete(m.Properties, message.PropertyKeys)
		for pb.Next() {
			res, err := e.Send(ctx, m)
			if err != nil {
				b.Fatal(err)
			}
			err = e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: res.CommitLogOffset, QueueOffset: res.QueueOffset, Decision: Commit})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	if err := e.WaitDispatched(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeliverDue moves due 1 KiB timer messages to their queue the
// way the timer scheduler does, 1,024 per delivery, index included.
func BenchmarkDeliverDue(b *testing.B) {
	e := benchEngine(b, &Options{})
	ctx := context.Background()
	due := time.Now().Add(time.Hour).UnixMilli()
	m := newMsg("B", string(bytes.Repeat([]byte("x"), 1024)), message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10))
	for range b.N {
		if _, err := e.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	var buf []timer.Entry
	var from timer.Entry
	for {
		var err error
		if buf, err = e.timers.RangeFrom(from, due, 1024, buf[:0]); err != nil {
			b.Fatal(err)
		}
		if len(buf) == 0 {
			break
		}
		e.sched.Lock()
		err = e.deliverDue(ctx, buf)
		e.sched.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		last := buf[len(buf)-1]
		from = timer.Entry{Due: last.Due, Offset: last.Offset + 1}
	}
	b.StopTimer()
	var n int64
	for q := range int32(8) {
		max, _ := e.MaxOffset("B", q)
		n += max
	}
	if n != int64(b.N) {
		b.Fatalf("%d of %d messages delivered", n, b.N)
	}
}
