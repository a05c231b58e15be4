package commitlog

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const benchSegment = 64 << 20

func benchLog(b *testing.B, o Options) *Log {
	b.Helper()
	if o.SegmentSize == 0 {
		o.SegmentSize = benchSegment
	}
	l, err := Open(b.TempDir(), &o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// trim keeps the disk use of a long benchmark bounded; it runs with the
// timer (and allocation counting) stopped.
func trim(b *testing.B, l *Log) {
	b.StopTimer()
	if _, err := l.Retain(time.Now().Add(time.Hour), time.Nanosecond, 0); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// benchStamper writes the record's offset into it, as the engine does.
type benchStamper struct{}

func (*benchStamper) Stamp(i int, rec []byte, off int64) {
	binary.LittleEndian.PutUint64(rec, uint64(off))
}

func BenchmarkAppend(b *testing.B) {
	l := benchLog(b, Options{})
	recs := [][]byte{payload(1, 1024)}
	var offs [1]int64
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.Append(recs, nil, offs[:]); err != nil {
			b.Fatal(err)
		}
		if i&(1<<16-1) == 1<<16-1 {
			trim(b, l)
		}
	}
}

func BenchmarkAppendBatch32(b *testing.B) {
	l := benchLog(b, Options{})
	recs := make([][]byte, 32)
	for i := range recs {
		recs[i] = payload(i, 1024)
	}
	offs := make([]int64, len(recs))
	s := &benchStamper{}
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.Append(recs, s, offs); err != nil {
			b.Fatal(err)
		}
		if i&(1<<11-1) == 1<<11-1 {
			trim(b, l)
		}
	}
}

// BenchmarkAppendSyncParallel appends 1 KiB records from 64 goroutines in
// FlushSync mode: each Append returns only once its record is durable, and
// the goroutines share syncs (group commit).
func BenchmarkAppendSyncParallel(b *testing.B) {
	var flushes atomic.Int64
	l := benchLog(b, Options{Flush: FlushSync, hooks: &testHooks{synced: func(int64) { flushes.Add(1) }}})
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	start := flushes.Load()
	b.RunParallel(func(pb *testing.PB) {
		recs := [][]byte{payload(1, 1024)}
		var offs [1]int64
		for pb.Next() {
			if err := l.Append(recs, nil, offs[:]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if n := flushes.Load() - start; n > 0 {
		b.ReportMetric(float64(b.N)/float64(n), "appends/flush")
	}
}

func BenchmarkRead(b *testing.B) {
	l := benchLog(b, Options{})
	const n = 1 << 16 // 64 MiB of records
	offs := make([]int64, n)
	recs := [][]byte{payload(1, 1024)}
	for i := range offs {
		if err := l.Append(recs, nil, offs[i:i+1]); err != nil {
			b.Fatal(err)
		}
	}
	dst := make([]byte, 0, 1024)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if dst, err = l.Read(offs[i&(n-1)], dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScan(b *testing.B) {
	l := benchLog(b, Options{})
	recs := [][]byte{payload(1, 1024)}
	for l.EndOffset() < 32<<20 {
		if err := l.Append(recs, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(l.EndOffset())
	b.ReportAllocs()
	b.ResetTimer()
	var sum int
	fn := func(off, next int64, p []byte) error {
		sum += len(p)
		return nil
	}
	for i := 0; i < b.N; i++ {
		if _, err := l.Scan(0, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendSyncPaced models synchronous protocol producers in
// FlushSync mode: 16 goroutines each append a 1 KiB record and then pause
// before the next, as a producer does for the network round trip between
// its acknowledgement and its next message (100 to 400 µs, a different
// pause each time). The producers come back from a sync a little apart,
// so the flusher decides how many of them a sync covers
// (appends/flush).
func BenchmarkAppendSyncPaced(b *testing.B) {
	const producers = 16
	var flushes atomic.Int64
	l := benchLog(b, Options{Flush: FlushSync, hooks: &testHooks{synced: func(int64) { flushes.Add(1) }}})
	var left atomic.Int64
	left.Store(int64(b.N))
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	start := flushes.Load()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs := [][]byte{payload(p, 1024)}
			var offs [1]int64
			x := uint32(p)*2654435761 + 1
			for left.Add(-1) >= 0 {
				if err := l.Append(recs, nil, offs[:]); err != nil {
					b.Error(err)
					return
				}
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				time.Sleep(100*time.Microsecond + time.Duration(x%300)*time.Microsecond)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if n := flushes.Load() - start; n > 0 {
		b.ReportMetric(float64(b.N)/float64(n), "appends/flush")
	}
}
