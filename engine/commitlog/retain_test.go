package commitlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/internal/disk"
)

// fakeClock is a settable clock for segment timestamps.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestRetainByAge(t *testing.T) {
	const seg = 64 << 10
	clock := &fakeClock{}
	clock.ns.Store(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	dir := t.TempDir()
	l := openLog(t, dir, &Options{SegmentSize: seg, hooks: &testHooks{now: clock.now}})
	// Fill segment k during hour k: it is last written when the writer
	// leaves it, at the start of hour k+1.
	var offs []int64
	for k := 0; k < 6; k++ {
		for l.EndOffset() < int64(k+1)*seg-4000 {
			offs = append(offs, appendOne(t, l, payload(len(offs), 3000)))
		}
		clock.advance(time.Hour)
	}
	appendOne(t, l, payload(len(offs), 5000)) // rolls into segment 6 at hour 6
	if n := len(*l.segs.Load()); n != 7 {
		t.Fatalf("%d segments, want 7", n)
	}

	// At hour 6.5 with a 3h limit, segments left at hours 1, 2 and 3 (the
	// first three) are too old.
	now := clock.now().Add(30 * time.Minute)
	// Retainable says so and deletes nothing.
	if n, min, err := l.Retainable(now, 3*time.Hour, 0); err != nil || n != 3 || min != 3*seg {
		t.Fatalf("Retainable = %d, %d, %v; want 3, %d", n, min, err, 3*seg)
	}
	if n, min, err := l.Retainable(now, 10*time.Hour, 0); err != nil || n != 0 || min != 0 {
		t.Fatalf("Retainable with a 10h limit = %d, %d, %v; want 0, 0", n, min, err)
	}
	if l.MinOffset() != 0 {
		t.Fatalf("Retainable moved MinOffset to %d", l.MinOffset())
	}
	n, err := l.Retain(now, 3*time.Hour, 0)
	if err != nil || n != 3 {
		t.Fatalf("Retain = %d, %v; want 3", n, err)
	}
	if l.MinOffset() != 3*seg {
		t.Fatalf("MinOffset %d, want %d", l.MinOffset(), 3*seg)
	}
	// Four segments left, and perhaps one made ahead of need.
	if u := l.DiskUsage(); u != 4*seg && u != 5*seg {
		t.Fatalf("DiskUsage %d, want %d or %d", u, 4*seg, 5*seg)
	}
	for b := int64(0); b < 3*seg; b += seg {
		if _, err := os.Stat(segPath(dir, b)); !os.IsNotExist(err) {
			t.Fatalf("segment %d still on disk", b)
		}
	}
	for i, off := range offs {
		got, err := l.Read(off, nil)
		if off < 3*seg {
			wantErr(t, err, ErrOffsetGone)
		} else if err != nil || !bytes.Equal(got, payload(i, 3000)) {
			t.Fatalf("Read(%d) = %v", off, err)
		}
	}
	// Nothing more is old enough; the active segment is never deleted.
	if n, err := l.Retain(now, 3*time.Hour, 0); n != 0 || err != nil {
		t.Fatalf("Retain = %d, %v", n, err)
	}
	if n, err := l.Retain(now.Add(1000*time.Hour), time.Nanosecond, 0); n != 3 || err != nil {
		t.Fatalf("Retain = %d, %v; want 3", n, err)
	}
	if l.MinOffset() != 6*seg || len(*l.segs.Load()) != 1 {
		t.Fatalf("MinOffset %d with %d segments", l.MinOffset(), len(*l.segs.Load()))
	}
	// The deletions survive a reopen.
	closeLog(t, l)
	l = openLog(t, dir, &Options{SegmentSize: seg})
	if l.MinOffset() != 6*seg {
		t.Fatalf("reopened MinOffset %d", l.MinOffset())
	}
	if _, err := l.Retain(now, 0, 1.5); err == nil {
		t.Fatal("Retain accepted a disk ratio of 1.5")
	}
}

func TestRetainByDiskRatio(t *testing.T) {
	const seg = 64 << 10
	var l *Log
	// A file system of 100 segments' worth, 50 used by others.
	hooks := &testHooks{statfs: func(string) (uint64, uint64, error) {
		return uint64(50+len(*l.segs.Load())) * seg, 100 * seg, nil
	}}
	l = openLog(t, t.TempDir(), &Options{SegmentSize: seg, hooks: hooks})
	for l.EndOffset() < 20*seg+100 {
		appendOne(t, l, payload(0, 30000))
	}
	// 21 segments: 71% used. Down to 60% takes 11.
	if got := l.DiskUsage(); got < 21*seg {
		t.Fatalf("DiskUsage %d, want at least %d", got, 21*seg)
	}
	n, err := l.Retain(time.Now(), 0, 0.60)
	if err != nil || n != 11 {
		t.Fatalf("Retain = %d, %v; want 11", n, err)
	}
	if l.MinOffset() != 11*seg {
		t.Fatalf("MinOffset %d", l.MinOffset())
	}
	// Never the active segment, however full the disk.
	if n, err := l.Retain(time.Now(), 0, 0.01); n != 9 || err != nil {
		t.Fatalf("Retain = %d, %v; want 9", n, err)
	}
	if l.MinOffset() != 20*seg {
		t.Fatalf("MinOffset %d", l.MinOffset())
	}
	// A failing statfs is an error.
	hooks.statfs = func(string) (uint64, uint64, error) { return 0, 0, errors.New("statfs failed") }
	if _, err := l.Retain(time.Now(), 0, 0.5); err == nil {
		t.Fatal("no error")
	}
}

func TestRetainRealFileSystem(t *testing.T) {
	const seg = 64 << 10
	l := openLog(t, t.TempDir(), &Options{SegmentSize: seg})
	for l.EndOffset() < 3*seg {
		appendOne(t, l, payload(0, 30000))
	}
	used, total, err := disk.Usage(l.Dir())
	if err != nil || total == 0 || used > total {
		t.Fatalf("disk.Usage = %d, %d, %v", used, total, err)
	}
	// Any real disk is more than 0.0001% full.
	if n, err := l.Retain(time.Now(), 0, 0.000001); err != nil || n != 3 {
		t.Fatalf("Retain = %d, %v; want 3", n, err)
	}
	// And less than 100%: ratio 1 never deletes.
	appendOne(t, l, payload(0, 60000))
	if n, err := l.Retain(time.Now(), 0, 1); err != nil || n != 0 {
		t.Fatalf("Retain = %d, %v", n, err)
	}
}

// TestRetainConcurrentReaders deletes segments while readers read and scan
// them: every read must return the right bytes or ErrOffsetGone, never
// fault.
func TestRetainConcurrentReaders(t *testing.T) {
	const seg = 64 << 10
	const size = 1500
	l := openLog(t, t.TempDir(), &Options{SegmentSize: seg})
	var (
		mu   sync.Mutex
		offs []int64 // offset of record i
		done atomic.Bool
		wg   sync.WaitGroup
	)
	check := func(off int64, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		// Records are appended in order, so the index of off is a search away.
		lo, hi := 0, len(offs)
		for lo < hi {
			m := (lo + hi) / 2
			if offs[m] < off {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo == len(offs) || offs[lo] != off {
			t.Errorf("read a record at %d that was never appended", off)
			return
		}
		if !bytes.Equal(p, payload(lo, size)) {
			t.Errorf("record %d at %d differs", lo, off)
		}
	}
	pick := func(r *rand.Rand) int64 {
		mu.Lock()
		defer mu.Unlock()
		if len(offs) == 0 {
			return 0
		}
		return offs[r.IntN(len(offs))]
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			var buf []byte
			for !done.Load() {
				off := pick(rng)
				var err error
				buf, err = l.Read(off, buf[:0])
				switch {
				case err == nil:
					check(off, buf)
				case errors.Is(err, ErrOffsetGone), errors.Is(err, ErrOffsetOutOfRange):
				default:
					t.Errorf("Read(%d): %v", off, err)
					return
				}
				if r%2 == 0 {
					_, err := l.Scan(l.MinOffset(), func(off, next int64, p []byte) error {
						if rng.IntN(64) == 0 {
							check(off, p)
						}
						return nil
					})
					if err != nil && !errors.Is(err, ErrOffsetGone) {
						t.Errorf("Scan: %v", err)
						return
					}
				}
			}
		}()
	}
	for i := 0; i < 3000 && !t.Failed(); i++ {
		p := payload(i, size)
		var o [1]int64
		mu.Lock() // keep offs in append order
		err := l.Append([][]byte{p}, nil, o[:])
		if err == nil {
			offs = append(offs, o[0])
		}
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			if _, err := l.Retain(time.Now().Add(time.Hour), time.Nanosecond, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	done.Store(true)
	wg.Wait()
}
