package commitlog

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxCorruptions bounds the list returned by Corruptions.
const maxCorruptions = 1024

// Log is an open commit log. All methods are safe for concurrent use.
type Log struct {
	dir        string
	opts       Options
	logger     *slog.Logger
	segSize    int64
	maxPayload int
	lock       *os.File
	// writeThrough appends with pwrite instead of copying into the
	// mapping (see writeFile); set with FlushSync.
	writeThrough bool

	// Written only under wmu.
	wmu        sync.Mutex
	active     *segment // last segment of the list; the one being appended to
	pos        int      // next write position in active
	prePending bool     // a segment was requested from the preallocator
	file       *os.File // with writeThrough: active's file, open for writing
	frames     []byte   // with writeThrough: the batch being written
	zeroed     int64    // with writeThrough: log offset up to which zeroAhead wrote zeros
	// reserved is the log offset up to which the blocks of the active
	// segment are reserved (see reserve.go); the writer never stores at or
	// past it. Written under wmu; read without it by the prefaulter.
	reserved atomic.Int64
	// noFallocate is set once fallocate was found not supported: blocks
	// are then reserved by writing zeros.
	noFallocate atomic.Bool
	preReq      chan int64
	preRes      chan preallocated

	end     atomic.Int64 // next append offset; every frame before it is complete
	flushed atomic.Int64 // every frame before it is durable
	closed  atomic.Bool
	failed  atomic.Pointer[error] // permanent failure: every later Append returns it

	// segs is the segment list, oldest first: contiguous, replaced (never
	// modified) under segMu and read without locks.
	segs      atomic.Pointer[[]*segment]
	segMu     sync.Mutex
	diskBytes atomic.Int64

	syncMu     sync.Mutex      // one flush at a time; guards ck and the fields below
	ck         *checkpointFile // nil once closed
	ckOffset   int64           // last offset written to the checkpoint
	ckTime     time.Time       // when it was written
	flushMu    sync.Mutex
	flushCond  sync.Cond // broadcast when flushed, flushErr or flushDone change (under flushMu)
	flushErr   error
	flushDone  bool // no flush will happen anymore
	kick       chan struct{}
	stop       chan struct{}
	background sync.WaitGroup

	// Group commit with FlushSync (see gather). arrivals and gatherUntil
	// are atomic; the other fields are guarded by syncMu.
	arrivals    atomic.Int64  // appenders that have waited for a sync, ever
	gatherUntil atomic.Int64  // while the flusher gathers: the arrivals that end it
	covered     int64         // arrivals covered by the syncs so far
	lastGroup   int64         // arrivals the last sync covered
	lastLate    int64         // arrivals while it ran
	lastSync    time.Duration // how long it took
	pace        time.Duration // between arrivals while gathering (flusher goroutine only)

	corrMu      sync.Mutex
	corruptions []Corruption
	corruptMore int // regions found beyond maxCorruptions
}

type preallocated struct {
	seg *segment
	err error
}

// Open opens the log in dir, creating the directory and the first segment
// if needed, and recovers it: see the package documentation. opts may be
// nil; it is not retained.
func Open(dir string, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("commitlog: open: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{
		dir:          dir,
		opts:         o,
		logger:       o.Logger,
		segSize:      o.SegmentSize,
		maxPayload:   int(o.SegmentSize - headerSize),
		lock:         lock,
		writeThrough: o.Flush == FlushSync,
		preReq:       make(chan int64, 1),
		preRes:       make(chan preallocated, 1),
		kick:         make(chan struct{}, 1),
		stop:         make(chan struct{}),
	}
	if l.maxPayload > 1<<32-1 {
		l.maxPayload = 1<<32 - 1
	}
	l.flushCond.L = &l.flushMu
	l.segs.Store(new([]*segment))
	if err := l.load(); err != nil {
		l.closeFile()
		l.releaseAll()
		if l.ck != nil {
			l.ck.close()
		}
		lock.Close()
		return nil, err
	}
	l.background.Add(3)
	go l.flushLoop()
	go l.preallocLoop()
	go l.prefaultLoop()
	l.requestPrealloc(l.active.base + l.segSize)
	return l, nil
}

// load finds the segments, recovers the log and sets up the writer.
func (l *Log) load() error {
	start := time.Now()
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("commitlog: open: %w", err)
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, tmpSuffix) {
			if _, ok := parseSegmentName(strings.TrimSuffix(name, tmpSuffix)); ok {
				// A segment whose creation did not finish.
				if err := os.Remove(l.path(name)); err != nil {
					return fmt.Errorf("commitlog: open: %w", err)
				}
			}
			continue
		}
		if base, ok := parseSegmentName(name); ok {
			if !e.Type().IsRegular() {
				return fmt.Errorf("commitlog: open: segment %s is not a regular file", name)
			}
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	for i, base := range bases {
		if base%l.segSize != 0 {
			return fmt.Errorf("commitlog: open: segment %s does not start at a multiple of the segment size %d",
				segmentName(base), l.segSize)
		}
		if i > 0 && base != bases[i-1]+l.segSize {
			return fmt.Errorf("commitlog: open: segments %s and %s are not contiguous (segment %s is missing)",
				segmentName(bases[i-1]), segmentName(base), segmentName(bases[i-1]+l.segSize))
		}
	}

	if l.ck, err = openCheckpoint(l.dir); err != nil {
		return err
	}

	segs := make([]*segment, 0, len(bases))
	files := make([]*os.File, 0, len(bases))
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, base := range bases {
		s, f, err := openSegment(l.dir, base, l.segSize)
		if err != nil {
			l.segs.Store(&segs) // so that they are released
			return err
		}
		segs = append(segs, s)
		files = append(files, f)
	}
	l.segs.Store(&segs)
	l.diskBytes.Store(int64(len(segs)) * l.segSize)

	r := recovery{l: l, segs: segs, files: files}
	from, err := r.run()
	if err != nil {
		return err
	}
	segs = r.segs
	l.segs.Store(&segs)
	end := r.end

	// The writer appends to the segment holding end; when end is at the
	// boundary after the last segment, that segment does not exist yet.
	if len(segs) == 0 || end == segs[len(segs)-1].base+l.segSize {
		s, err := l.createSegment(end)
		if err != nil {
			return err
		}
		segs = append(segs, s)
		l.segs.Store(&segs)
	}
	l.active = segs[len(segs)-1]
	l.pos = int(end - l.active.base)
	l.end.Store(end)
	if err := l.openFile(); err != nil {
		return err
	}

	// Make what recovery kept durable so that FlushedOffset is honest: the
	// page cache may hold writes of a process that crashed.
	l.flushed.Store(from)
	if err := l.syncRange(from, end); err != nil {
		return fmt.Errorf("commitlog: open: %w", err)
	}
	l.flushed.Store(end)
	// From here on the log is in use: the checkpoint must not say clean.
	if err := l.ck.write(checkpoint{offset: end}, l.segSize); err != nil {
		return err
	}
	l.ckOffset, l.ckTime = end, time.Now()

	l.logger.Info("commitlog: opened",
		"dir", l.dir, "segments", len(segs), "min", segs[0].base, "end", end,
		"recoveredFrom", from, "corruptRegions", len(l.Corruptions()),
		"duration", time.Since(start))
	return nil
}

// Close flushes everything appended, writes the checkpoint and releases the
// log. Reads in progress finish first; every call after Close returns
// ErrClosed. Close returns the flush error, if any.
func (l *Log) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	close(l.stop)
	l.background.Wait()

	// A segment made for the next roll is not needed (the next Open would
	// delete it as lying past the end). The preallocator has stopped, so a
	// pending request is either still queued or answered.
	if l.prePending {
		select {
		case r := <-l.preRes:
			if r.seg != nil {
				l.discardSegment(r.seg)
			}
		case <-l.preReq:
		}
		l.prePending = false
	}

	err := l.flush(true)
	if err == nil {
		// Everything is durable and nothing lies past the end: say so, and
		// the next Open need not look past it.
		l.syncMu.Lock()
		err = l.ck.write(checkpoint{offset: l.flushed.Load(), clean: true}, l.segSize)
		l.syncMu.Unlock()
	}
	l.flushMu.Lock()
	l.flushDone = true
	l.flushCond.Broadcast()
	l.flushMu.Unlock()

	l.closeFile()
	l.releaseAll()
	l.syncMu.Lock()
	if cerr := l.ck.close(); err == nil && cerr != nil {
		err = fmt.Errorf("commitlog: close checkpoint: %w", cerr)
	}
	l.ck = nil
	l.syncMu.Unlock()
	if cerr := l.lock.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("commitlog: unlock: %w", cerr)
	}
	return err
}

// releaseAll drops the log's reference to every segment.
func (l *Log) releaseAll() {
	l.segMu.Lock()
	segs := *l.segs.Load()
	l.segs.Store(new([]*segment))
	l.segMu.Unlock()
	for _, s := range segs {
		s.release()
	}
}

// discardSegment removes a segment that holds no data and was never part
// of the list.
func (l *Log) discardSegment(s *segment) {
	if err := os.Remove(s.path); err != nil {
		l.logger.Warn("commitlog: remove unused segment", "segment", s.path, "err", err)
	}
	l.diskBytes.Add(-l.segSize)
	s.release()
}

// MinOffset returns the first retained offset: the base of the oldest
// segment.
func (l *Log) MinOffset() int64 {
	segs := *l.segs.Load()
	if len(segs) == 0 {
		return l.end.Load()
	}
	return segs[0].base
}

// EndOffset returns the offset the next append will use (or the next
// segment's base, if it does not fit). Every record before it is complete.
func (l *Log) EndOffset() int64 { return l.end.Load() }

// FlushedOffset returns the offset before which every record is durable.
func (l *Log) FlushedOffset() int64 { return l.flushed.Load() }

// MaxPayload returns the largest payload a record can have.
func (l *Log) MaxPayload() int { return l.maxPayload }

// Dir returns the directory the log lives in.
func (l *Log) Dir() string { return l.dir }

// Corruptions returns the corrupt regions found so far by recovery and
// Scan, oldest first (at most 1024).
func (l *Log) Corruptions() []Corruption {
	l.corrMu.Lock()
	defer l.corrMu.Unlock()
	return slices.Clone(l.corruptions)
}

// noteCorruption records a corrupt region the first time it is seen: logs
// it and passes it to Options.OnCorruption.
func (l *Log) noteCorruption(c Corruption) {
	l.corrMu.Lock()
	for _, k := range l.corruptions {
		if k.Start == c.Start {
			l.corrMu.Unlock()
			return
		}
	}
	if len(l.corruptions) < maxCorruptions {
		l.corruptions = append(l.corruptions, c)
	} else {
		l.corruptMore++
	}
	l.corrMu.Unlock()
	l.logger.Error("commitlog: corrupt region skipped",
		"start", c.Start, "end", c.End, "bytes", c.End-c.Start, "reason", c.Reason)
	if l.opts.OnCorruption != nil {
		l.opts.OnCorruption(c)
	}
}

// segmentAt returns the segment holding off, or nil. Callers that compare
// off with EndOffset must load the end before calling it: the segment list
// is updated before the end moves into a new segment.
func (l *Log) segmentAt(off int64) *segment {
	segs := *l.segs.Load()
	if len(segs) == 0 || off < segs[0].base {
		return nil
	}
	i := (off - segs[0].base) / l.segSize
	if i >= int64(len(segs)) {
		return nil
	}
	return segs[i]
}

// acquireAt returns the segment holding off with a reference taken, or the
// error to report for off.
func (l *Log) acquireAt(op string, off, end int64) (*segment, error) {
	if s := l.segmentAt(off); s != nil && s.acquire() {
		return s, nil
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	return nil, &OffsetError{Op: op, Offset: off, Min: l.MinOffset(), End: end, Err: ErrOffsetGone}
}

func (l *Log) now() time.Time {
	if h := l.opts.hooks; h != nil && h.now != nil {
		return h.now()
	}
	return time.Now()
}

func (l *Log) path(name string) string { return l.dir + string(os.PathSeparator) + name }

// fail makes err permanent: every later Append returns it.
func (l *Log) fail(err error) {
	l.failed.CompareAndSwap(nil, &err)
}

func (l *Log) failure() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}
