package commitlog

import (
	"fmt"
	"log/slog"
	"math"
	"time"
)

// FlushMode says when an append is acknowledged relative to making it
// durable.
type FlushMode int

const (
	// FlushAsync acknowledges an append once its records are in the mapping
	// (the page cache). A background goroutine makes them durable every
	// Options.FlushInterval. Acknowledged records survive a crash of the
	// process, not of the machine.
	FlushAsync FlushMode = iota
	// FlushSync acknowledges an append only after its records are durable.
	// Concurrent appenders share one sync (group commit).
	FlushSync
)

// String returns "async" or "sync".
func (m FlushMode) String() string {
	switch m {
	case FlushAsync:
		return "async"
	case FlushSync:
		return "sync"
	default:
		return fmt.Sprintf("FlushMode(%d)", int(m))
	}
}

const (
	// DefaultSegmentSize is the default Options.SegmentSize: 1 GiB.
	DefaultSegmentSize = 1 << 30
	// MinSegmentSize is the smallest allowed Options.SegmentSize.
	MinSegmentSize = 4 << 10
	// MaxSegmentSize is the largest allowed Options.SegmentSize: 4 GiB.
	MaxSegmentSize = 1 << 32
	// DefaultFlushInterval is the default Options.FlushInterval.
	DefaultFlushInterval = 500 * time.Millisecond
)

// Options configures a Log. The zero value is ready to use: every field
// states its default, which EnsureDefaults fills in.
type Options struct {
	// SegmentSize is the size in bytes of every segment file: a multiple of
	// 4096 between MinSegmentSize and MaxSegmentSize. It bounds the largest
	// payload (SegmentSize-12 bytes) and the largest batch. It must match
	// the size of the segments already in the directory; Open fails
	// otherwise.
	//
	// Default: DefaultSegmentSize (1 GiB).
	SegmentSize int64

	// Flush selects when Append returns relative to making the records
	// durable; see FlushMode.
	//
	// Default: FlushAsync.
	Flush FlushMode

	// FlushInterval is how often the background flusher syncs what was
	// written (FlushAsync) and how often the checkpoint is written
	// (both modes).
	//
	// Default: DefaultFlushInterval (500ms).
	FlushInterval time.Duration

	// Logger receives recovery, corruption, flush and retention events.
	// Nothing is logged per record.
	//
	// Default: a logger that discards everything.
	Logger *slog.Logger

	// OnCorruption, if not nil, is called once for each corrupt region the
	// log finds, during recovery or Scan, after it has been logged. It must
	// not block for long and must not call Close.
	//
	// Default: nil.
	OnCorruption func(Corruption)

	// OnNewSegment, if not nil, is called when the writer has moved to a
	// new segment and when making one, or reserving blocks for an append,
	// failed (a full disk, typically): the moments the file system fills, when an owner that applies retention
	// by disk use should not wait for its schedule. It is called with the
	// writer's lock held: it must return at once and must not call the Log.
	//
	// Default: nil.
	OnNewSegment func()

	// hooks lets this package's tests observe and steer internals. It is
	// nil outside tests.
	hooks *testHooks
}

// testHooks are test-only seams. Every field may be nil.
type testHooks struct {
	// now replaces time.Now for segment timestamps.
	now func() time.Time
	// statfs replaces the file-system query used by Retain.
	statfs func(dir string) (used, total uint64, err error)
	// manualZero keeps the prefaulter from writing zeros ahead of the
	// writer, so that a test calls zeroAhead itself.
	manualZero bool
	// msync replaces unix.Msync for flushes.
	msync func(b []byte) error
	// synced is called after a flush made [0, to) durable and before any
	// appender waiting for it is woken.
	synced func(to int64)
	// create, if it returns an error, makes creating the segment at base
	// fail with it.
	create func(base int64) error
	// reserve, if it returns an error, makes reserving the blocks of log
	// offsets [from, to) fail with it.
	reserve func(from, to int64) error
	// gatherWindow replaces how long the flusher waits for more
	// appenders (see gather), given the window it would use.
	gatherWindow func(d time.Duration) time.Duration
}

// EnsureDefaults fills in the default of every field left at its zero value
// and returns o. A nil o is allocated.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports the first invalid field of o, after defaults.
func (o *Options) Validate() error {
	switch {
	case o.SegmentSize < MinSegmentSize || o.SegmentSize > MaxSegmentSize:
		return fmt.Errorf("commitlog: invalid Options.SegmentSize %d: must be between %d and %d",
			o.SegmentSize, MinSegmentSize, int64(MaxSegmentSize))
	case o.SegmentSize%4096 != 0:
		return fmt.Errorf("commitlog: invalid Options.SegmentSize %d: must be a multiple of 4096", o.SegmentSize)
	case o.SegmentSize > math.MaxInt:
		return fmt.Errorf("commitlog: invalid Options.SegmentSize %d: larger than this platform can map", o.SegmentSize)
	case o.Flush != FlushAsync && o.Flush != FlushSync:
		return fmt.Errorf("commitlog: invalid Options.Flush %d", int(o.Flush))
	case o.FlushInterval < 0:
		return fmt.Errorf("commitlog: invalid Options.FlushInterval %v: must not be negative", o.FlushInterval)
	}
	return nil
}
