package enginebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
)

// appendPhase sends Count messages from Producers goroutines.
func (b *bench) appendPhase(ctx context.Context) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := &firstErr{cancel: cancel}

	body := make([]byte, b.o.Size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	hists := make([]latency.Histogram, b.o.Producers)
	var wg sync.WaitGroup
	began, cpu := time.Now(), cpuTime()
	for p := range b.o.Producers {
		n := b.o.Count / int64(b.o.Producers)
		if int64(p) < b.o.Count%int64(b.o.Producers) {
			n++
		}
		wg.Go(func() {
			if err := b.produce(ctx, n, b.o.Batch, body, &hists[p]); err != nil {
				fail.set(err)
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(began), cpuTime()-cpu
	if fail.err != nil {
		return nil, fail.err
	}

	began = time.Now()
	if err := b.eng.WaitDispatched(ctx); err != nil {
		return nil, fmt.Errorf("enginebench: wait for dispatch: %w", err)
	}
	dispatch := round(float64(time.Since(began).Microseconds()) / 1e3)

	var h latency.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	r := &Result{Phase: "append", Batch: b.o.Batch, Producers: b.o.Producers, Flush: b.o.Flush.String(), DispatchMs: &dispatch}
	summarize(r, &h, b.o.Count, b.o.Size, elapsed, cpu)
	return r, nil
}

// produce sends n messages, batch per call, reusing the same message
// values for every call so that the loop itself does not allocate.
func (b *bench) produce(ctx context.Context, n int64, batch int, body []byte, h *latency.Histogram) error {
	if batch == 1 {
		var m message.Message
		for range n {
			m = message.Message{Topic: b.topic, Body: body, BornTimestamp: time.Now().UnixMilli()}
			began := time.Now()
			_, err := b.eng.Send(ctx, &m)
			h.Record(time.Since(began))
			if err != nil {
				return fmt.Errorf("enginebench: send: %w", err)
			}
		}
		return nil
	}
	msgs := make([]message.Message, batch)
	ptrs := make([]*message.Message, batch)
	for i := range msgs {
		ptrs[i] = &msgs[i]
	}
	for sent := int64(0); sent < n; {
		k := int(min(int64(batch), n-sent))
		now := time.Now().UnixMilli()
		for i := range k {
			msgs[i] = message.Message{Topic: b.topic, Body: body, BornTimestamp: now}
		}
		began := time.Now()
		_, err := b.eng.SendBatch(ctx, ptrs[:k], engine.AnyQueue)
		h.Record(time.Since(began))
		if err != nil {
			return fmt.Errorf("enginebench: send batch: %w", err)
		}
		sent += int64(k)
	}
	return nil
}

// readPhase pulls every queue from its first offset to its last.
func (b *bench) readPhase(ctx context.Context) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := &firstErr{cancel: cancel}

	readers := min(b.o.Readers, int(b.o.Queues))
	hists := make([]latency.Histogram, readers)
	counts := make([]int64, readers)
	var wg sync.WaitGroup
	began, cpu := time.Now(), cpuTime()
	for r := range readers {
		wg.Go(func() {
			for q := int32(r); q < b.o.Queues; q += int32(readers) {
				n, err := b.drain(ctx, q, &hists[r])
				if err != nil {
					fail.set(err)
					return
				}
				counts[r] += n
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(began), cpuTime()-cpu
	if fail.err != nil {
		return nil, fail.err
	}

	var h latency.Histogram
	var total int64
	for i := range hists {
		h.Merge(&hists[i])
		total += counts[i]
	}
	if total != b.o.Count {
		return nil, fmt.Errorf("enginebench: read back %d messages, sent %d", total, b.o.Count)
	}
	r := &Result{Phase: "read", Batch: PullBatch, Readers: readers, Flush: b.o.Flush.String()}
	summarize(r, &h, total, b.o.Size, elapsed, cpu)
	return r, nil
}

// drain pulls queue q from its minimum to its maximum offset and returns
// the number of messages read.
func (b *bench) drain(ctx context.Context, q int32, h *latency.Histogram) (int64, error) {
	off, err := b.eng.MinOffset(b.topic, q)
	if err != nil {
		return 0, fmt.Errorf("enginebench: queue %d: %w", q, err)
	}
	end, err := b.eng.MaxOffset(b.topic, q)
	if err != nil {
		return 0, fmt.Errorf("enginebench: queue %d: %w", q, err)
	}
	var n int64
	for off < end {
		began := time.Now()
		res, err := b.eng.Pull(ctx, b.topic, q, off, PullBatch, nil)
		h.Record(time.Since(began))
		if err != nil {
			return n, fmt.Errorf("enginebench: pull queue %d at %d: %w", q, off, err)
		}
		if len(res.Records) == 0 || res.NextOffset <= off {
			return n, fmt.Errorf("enginebench: pull queue %d at %d made no progress (next %d, max %d)", q, off, res.NextOffset, end)
		}
		n += int64(len(res.Records))
		off = res.NextOffset
		res.Release()
	}
	return n, nil
}

// rawDisk writes n bytes sequentially to a file in dir in 1 MiB writes,
// syncs it, and reports the bandwidth. The file is removed afterwards.
func rawDisk(ctx context.Context, dir string, n int64) (*Result, error) {
	path := filepath.Join(dir, "raw-disk.bench")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("enginebench: raw disk: %w", err)
	}
	defer os.Remove(path)
	defer f.Close()

	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	began := time.Now()
	for left := n; left > 0; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k := min(int64(len(buf)), left)
		if _, err := f.Write(buf[:k]); err != nil {
			return nil, fmt.Errorf("enginebench: raw disk: %w", err)
		}
		left -= k
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("enginebench: raw disk: %w", err)
	}
	elapsed := time.Since(began)
	sec := max(elapsed.Seconds(), 1e-9)
	return &Result{
		Phase:     "raw_disk",
		MBPerSec:  round(float64(n) / 1e6 / sec),
		Bytes:     n,
		ElapsedMs: round(float64(elapsed.Microseconds()) / 1e3),
	}, nil
}
