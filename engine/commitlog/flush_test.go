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

// TestSyncGathersAppenders checks the group commit's gathering: a lone
// appender is not delayed, and a sync waits for as many appenders as the
// last one covered plus those that arrived while it ran. The window is an
// hour: a wait that should not happen hangs the test, and one that should
// cannot end early.
func TestSyncGathersAppenders(t *testing.T) {
	var syncs atomic.Int64
	hooks := &testHooks{
		gatherWindow: func(time.Duration) time.Duration { return time.Hour },
		synced:       func(int64) { syncs.Add(1) },
	}
	l := openLog(t, t.TempDir(), &Options{SegmentSize: 1 << 20, Flush: FlushSync, FlushInterval: time.Hour, hooks: hooks})
	expect := func() int64 {
		l.syncMu.Lock()
		defer l.syncMu.Unlock()
		return l.lastGroup + l.lastLate
	}
	appendAll := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = l.Append([][]byte{payload(i, 200)}, nil, nil)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	// One appender at a time: each sync covers one and none arrive
	// meanwhile, so nothing waits (with an hour's window, a wait would
	// hang the test).
	for i := range 5 {
		appendOne(t, l, payload(i, 100))
	}
	if e := expect(); e != 1 {
		t.Fatalf("after lone appends the flusher expects %d appenders, want 1", e)
	}

	// As if the last sync had covered three appenders while a fourth
	// arrived: the next sync waits for four, then covers them at once.
	l.syncMu.Lock()
	l.lastGroup, l.lastLate = 3, 1
	l.syncMu.Unlock()
	before := syncs.Load()
	appendAll(4)
	if n := syncs.Load() - before; n != 1 {
		t.Fatalf("four appenders took %d syncs, want 1", n)
	}
	if e := expect(); e != 4 {
		t.Fatalf("after a sync of four the flusher expects %d, want 4", e)
	}

}

// TestSyncGatherTimesOut checks that a sync waiting for appenders that do
// not come ends with its window, and that the flusher then expects fewer.
func TestSyncGatherTimesOut(t *testing.T) {
	hooks := &testHooks{gatherWindow: func(time.Duration) time.Duration { return time.Millisecond }}
	l := openLog(t, t.TempDir(), &Options{SegmentSize: 1 << 20, Flush: FlushSync, FlushInterval: time.Hour, hooks: hooks})
	l.syncMu.Lock()
	l.lastGroup = 8
	l.syncMu.Unlock()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Append([][]byte{payload(i, 100)}, nil, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	l.syncMu.Lock()
	e := l.lastGroup + l.lastLate
	l.syncMu.Unlock()
	if e > 2 {
		t.Fatalf("after two appenders the flusher expects %d, want at most 2", e)
	}
}

// TestSyncCloseWhileGathering closes the log while the flusher waits for
// appenders that do not come: the ones waiting are flushed by Close.
func TestSyncCloseWhileGathering(t *testing.T) {
	hooks := &testHooks{gatherWindow: func(time.Duration) time.Duration { return time.Hour }}
	l, err := Open(t.TempDir(), &Options{SegmentSize: 1 << 20, Flush: FlushSync, FlushInterval: time.Hour, hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	l.syncMu.Lock()
	l.lastGroup = 8
	l.syncMu.Unlock()
	done := make(chan error, 2)
	for i := range 2 {
		go func() { done <- l.Append([][]byte{payload(i, 100)}, nil, nil) }()
	}
	// Both wait, in the gathering flusher's count, before Close.
	for l.arrivals.Load() < 2 {
		runtime.Gosched()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("Append = %v, want nil: Close flushes the waiting appenders", err)
		}
	}
}

// TestWaitFor checks how long a gather waits: at least the last sync,
// three times the missing appenders' expected arrival at the pace seen so
// far when that is longer, never more than gatherMax.
func TestWaitFor(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		sync, pace time.Duration
		missing    int64
		want       time.Duration
	}{
		{300 * us, 0, 12, 300 * us},             // no pace yet
		{300 * us, 25 * us, 3, 300 * us},        // few missing: the sync's length
		{300 * us, 25 * us, 12, 900 * us},       // many missing: 3 × 12 × 25 µs
		{300 * us, 200 * us, 16, gatherMax},     // capped
		{5 * time.Millisecond, 0, 1, gatherMax}, // a slow disk: capped too
	} {
		if got := waitFor(c.sync, c.pace, c.missing); got != c.want {
			t.Errorf("waitFor(%v, %v, %d) = %v, want %v", c.sync, c.pace, c.missing, got, c.want)
		}
	}
}

// TestNotePace checks that the pace follows the gathers' arrivals: the
// first sets it, later ones move it a quarter of the way.
func TestNotePace(t *testing.T) {
	var l Log
	l.notePace(time.Millisecond, 0) // nobody came: nothing learned
	if l.pace != 0 {
		t.Fatalf("pace %v after a gather nobody came to", l.pace)
	}
	l.notePace(400*time.Microsecond, 10)
	if l.pace != 40*time.Microsecond {
		t.Fatalf("pace %v after 10 arrivals in 400 µs, want 40 µs", l.pace)
	}
	l.notePace(80*time.Microsecond, 1)
	if l.pace != 50*time.Microsecond {
		t.Fatalf("pace %v after one arrival in 80 µs, want 50 µs", l.pace)
	}
}
