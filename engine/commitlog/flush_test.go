package commitlog

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestSyncAckNeverPrecedesFlush runs many concurrent appenders in FlushSync
// mode. The synced hook records how far msync has made the log durable; an
// appender whose Append returned checks that its batch is below that mark.
// It also checks that appenders share syncs.
func TestSyncAckNeverPrecedesFlush(t *testing.T) {
	const (
		writers   = 32
		perWriter = 60
	)
	var durable, syncs, msyncs atomic.Int64
	hooks := &testHooks{
		msync: func(b []byte) error {
			msyncs.Add(1)
			return msync(b)
		},
		synced: func(to int64) {
			syncs.Add(1)
			if to < durable.Load() {
				t.Errorf("durable offset went back from %d to %d", durable.Load(), to)
			}
			durable.Store(to)
		},
	}
	l := openLog(t, t.TempDir(), &Options{SegmentSize: 256 << 10, Flush: FlushSync, hooks: hooks})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var offs [2]int64
			for i := 0; i < perWriter; i++ {
				recs := [][]byte{payload(w*1000+i, 100+i*10), payload(w*1000+i+500, 50)}
				if err := l.Append(recs, nil, offs[:]); err != nil {
					t.Error(err)
					return
				}
				end := offs[1] + FrameSize(len(recs[1]))
				if d := durable.Load(); d < end {
					t.Errorf("append acknowledged up to %d, only %d synced", end, d)
					return
				}
				if f := l.FlushedOffset(); f < end {
					t.Errorf("append acknowledged up to %d, FlushedOffset %d", end, f)
					return
				}
			}
		}()
	}
	wg.Wait()
	appends := int64(writers * perWriter)
	t.Logf("%d appends shared %d flushes (%d msync calls)", appends, syncs.Load(), msyncs.Load())
	if syncs.Load() >= appends {
		t.Errorf("%d flushes for %d appends: no group commit", syncs.Load(), appends)
	}
}

func TestSyncFlushErrorReachesAppenders(t *testing.T) {
	var fail atomic.Bool
	boom := errors.New("disk on fire")
	hooks := &testHooks{msync: func(b []byte) error {
		if fail.Load() {
			return boom
		}
		return msync(b)
	}}
	l, err := Open(t.TempDir(), &Options{SegmentSize: 64 << 10, Flush: FlushSync, hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	appendOne(t, l, []byte("fine"))
	fail.Store(true)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.Append([][]byte{[]byte("doomed")}, nil, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, boom) {
			t.Fatalf("Append = %v, want the flush error", err)
		}
	}
	// The failure is permanent.
	fail.Store(false)
	if err := l.Append([][]byte{[]byte("later")}, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("Append after failure = %v", err)
	}
	if err := l.Flush(); !errors.Is(err, boom) {
		t.Fatalf("Flush after failure = %v", err)
	}
	if err := l.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close after failure = %v", err)
	}
}

func TestAsyncFlush(t *testing.T) {
	dir := t.TempDir()
	synced := make(chan int64, 100)
	var ranges sync.Mutex
	var lens []int
	hooks := &testHooks{
		msync: func(b []byte) error {
			if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(pageSize) != 0 {
				t.Errorf("msync of an unaligned range")
			}
			ranges.Lock()
			lens = append(lens, len(b))
			ranges.Unlock()
			return msync(b)
		},
		synced: func(to int64) {
			select {
			case synced <- to:
			default:
			}
		},
	}
	const seg = 1 << 20
	l := openLog(t, dir, &Options{SegmentSize: seg, FlushInterval: 5 * time.Millisecond, hooks: hooks})
	for i := 0; i < 10; i++ {
		appendOne(t, l, payload(i, 100))
	}
	end := l.EndOffset()
	// Append does not wait; the background flusher gets there.
	for to := range synced {
		if to >= end {
			break
		}
	}
	// The hook runs just before the flushed offset is published.
	for l.FlushedOffset() < end {
		runtime.Gosched()
	}
	ranges.Lock()
	for _, n := range lens {
		if n >= seg/2 {
			t.Errorf("msync of %d bytes for a few small records", n)
		}
	}
	ranges.Unlock()
	// The checkpoint follows within a flush interval; Flush forces it.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, checkpointName))
	if err != nil {
		t.Fatal(err)
	}
	if ck, ok, _ := decodeCheckpoint(b, seg); !ok || ck.offset != end {
		t.Fatalf("checkpoint %+v, %v; want %d", ck, ok, end)
	}
}

func TestFlushAcrossSegments(t *testing.T) {
	const seg = 64 << 10
	var mu sync.Mutex
	var synced [][]byte
	hooks := &testHooks{msync: func(b []byte) error {
		mu.Lock()
		synced = append(synced, b)
		mu.Unlock()
		return msync(b)
	}}
	l := openLog(t, t.TempDir(), &Options{SegmentSize: seg, FlushInterval: time.Hour, hooks: hooks})
	mu.Lock()
	synced = nil
	mu.Unlock()
	for i := 0; i < 100; i++ {
		appendOne(t, l, payload(i, 3000))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.FlushedOffset() != l.EndOffset() {
		t.Fatalf("FlushedOffset %d, EndOffset %d", l.FlushedOffset(), l.EndOffset())
	}
	mu.Lock()
	defer mu.Unlock()
	var total int
	for _, b := range synced {
		total += len(b)
	}
	// One msync per segment touched, covering the written bytes.
	if want := int(l.EndOffset()/seg) + 1; len(synced) != want || total != int(l.EndOffset()) {
		t.Fatalf("%d msyncs of %d bytes in all; want %d covering %d", len(synced), total, want, l.EndOffset())
	}
}
