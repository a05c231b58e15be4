package disk

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Errors of the package. A refused write wraps one of them.
var (
	// ErrFull: the disk is too full for the write. It passes by itself
	// once space is freed.
	ErrFull = errors.New("disk full")
	// ErrFailed: the disk failed a write or a sync in a way that cannot
	// be retried (EIO). It lasts until a restart.
	ErrFailed = errors.New("disk failed")
	// ErrClosed: a wait for space ended because the monitor closed.
	ErrClosed = errors.New("disk: monitor closed")
	// ErrNotStarted: nothing would end a wait for space, the monitor is
	// not started (while the stores open).
	ErrNotStarted = errors.New("disk: monitor not started")
)

// State is how writable the disk is, from best to worst.
type State int

const (
	// OK: every write is accepted.
	OK State = iota
	// Full: the disk is fuller than the full ratio; messages are refused,
	// metadata (consumer offsets, pop state, topics, groups) still
	// written.
	Full
	// NoSpace: less than the reserve is free, or a write failed for want
	// of space; every write is refused until space returns.
	NoSpace
	// Failed: a write or sync failed with an I/O error; writes are
	// refused until a restart.
	Failed
)

// String returns "ok", "full", "no-space" or "failed".
func (s State) String() string {
	switch s {
	case OK:
		return "ok"
	case Full:
		return "full"
	case NoSpace:
		return "no-space"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is a snapshot of the monitor.
type Status struct {
	State  State
	Reason string    // why, in words; empty when OK
	Since  time.Time // when State was entered
	// Used and Total are the file system's bytes as df counts them, at
	// the last check; zero before the first.
	Used, Total uint64
}

// Free returns the bytes left at the last check.
func (s Status) Free() uint64 { return s.Total - s.Used }

// IsSpace reports whether err is a file system's "no space" answer
// (ENOSPC, or EDQUOT for a quota).
func IsSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// IsIO reports whether err is an I/O error (EIO).
func IsIO(err error) bool { return errors.Is(err, syscall.EIO) }

// Options configure a Monitor.
type Options struct {
	// FullRatio: at or above this used fraction of the file system the
	// state is Full. Default 0.90 (RocketMQ's diskSpaceWarningLevelRatio).
	FullRatio float64
	// Reserve: with less than this many bytes free the state is NoSpace.
	// Default 4 MiB.
	Reserve uint64
	// Interval between checks. Default 500ms.
	Interval time.Duration
	// Logger receives one ERROR line on entering a bad state and one INFO
	// line on leaving it. Default discards.
	Logger *slog.Logger
	// Statfs returns the used and total bytes of the file system holding
	// dir. Default: statfs(2).
	Statfs func(dir string) (used, total uint64, err error)
}

// Defaults.
const (
	DefaultFullRatio = 0.90
	DefaultReserve   = 4 << 20
	DefaultInterval  = 500 * time.Millisecond
)

// Monitor tracks whether the disk holding a directory takes writes. It
// checks the free space every Options.Interval and at once when told a
// write failed for want of space. It is safe for concurrent use.
type Monitor struct {
	dir  string
	opts Options

	mu      sync.Mutex
	st      Status
	failure error         // the I/O error that failed the disk
	changed chan struct{} // closed at the next change of state
	noSpace chan struct{} // closed while the state is NoSpace or Failed

	started atomic.Bool

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// New returns a monitor of the file system holding dir, with its first
// check done. Start begins the periodic checks.
func New(dir string, o Options) *Monitor {
	if o.FullRatio == 0 {
		o.FullRatio = DefaultFullRatio
	}
	if o.Reserve == 0 {
		o.Reserve = DefaultReserve
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Statfs == nil {
		o.Statfs = Usage
	}
	m := &Monitor{dir: dir, opts: o, changed: make(chan struct{}), noSpace: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	m.st.Since = time.Now()
	m.Check()
	return m
}

// Start runs the periodic checks until Close.
func (m *Monitor) Start() {
	m.started.Store(true)
	go m.loop()
}

func (m *Monitor) loop() {
	defer close(m.done)
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		case <-m.kick:
		}
		m.Check()
	}
}

// Close stops the checks and ends every wait for space (they return
// ErrClosed). It is safe to call more than once, with or without Start.
func (m *Monitor) Close() {
	m.once.Do(func() { close(m.stop) })
}

// closed reports whether Close was called.
func (m *Monitor) closed() bool {
	select {
	case <-m.stop:
		return true
	default:
		return false
	}
}

// Check reads the file system's usage now and updates the state. A
// failed statfs leaves the state as it was.
func (m *Monitor) Check() {
	used, total, err := m.opts.Statfs(m.dir)
	if err != nil {
		m.opts.Logger.Warn("disk: cannot read the free space", "dir", m.dir, "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.Used, m.st.Total = used, total
	if m.st.State == Failed {
		return
	}
	free := total - used
	switch {
	case free < m.opts.Reserve:
		m.setLocked(NoSpace, fmt.Sprintf("%s free of %s on the file system of %s, below the %s reserve: every write is refused",
			Bytes(free), Bytes(total), m.dir, Bytes(m.opts.Reserve)))
	case m.st.State == NoSpace && free < 2*m.opts.Reserve:
		// A write failed for want of space: wait for some room beyond the
		// reserve before taking writes again, not to flap.
	case total > 0 && float64(used) >= m.opts.FullRatio*float64(total):
		m.setLocked(Full, fmt.Sprintf("disk %.1f%% full (%s free of %s) on the file system of %s, at or above the full ratio %.2f: messages are refused",
			100*float64(used)/float64(total), Bytes(free), Bytes(total), m.dir, m.opts.FullRatio))
	default:
		m.setLocked(OK, "")
	}
}

// ReportNoSpace tells the monitor a write failed for want of space
// (err). The state turns NoSpace until a check finds room again.
func (m *Monitor) ReportNoSpace(err error) {
	m.mu.Lock()
	if m.st.State < NoSpace {
		m.setLocked(NoSpace, fmt.Sprintf("a write on the file system of %s failed: %v: every write is refused until space is freed", m.dir, err))
	}
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// ReportFailure tells the monitor a write or sync failed with an I/O
// error. The state turns Failed until a restart.
func (m *Monitor) ReportFailure(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st.State == Failed {
		return
	}
	m.failure = err
	m.setLocked(Failed, fmt.Sprintf("a write on the file system of %s failed: %v: writes are refused; fix the disk and restart", m.dir, err))
}

func (m *Monitor) setLocked(s State, reason string) {
	old := m.st.State
	if old == s && m.st.Reason == reason {
		return
	}
	if old == s {
		m.st.Reason = reason // the figures changed, not the state
		return
	}
	m.st.State, m.st.Reason, m.st.Since = s, reason, time.Now()
	close(m.changed)
	m.changed = make(chan struct{})
	wasBad, isBad := old >= NoSpace, s >= NoSpace
	switch {
	case isBad && !wasBad:
		close(m.noSpace)
	case wasBad && !isBad:
		m.noSpace = make(chan struct{})
	}
	switch {
	case s > old && s != OK:
		m.opts.Logger.Error("disk: writes refused", "state", s.String(), "reason", reason)
	case s == OK:
		m.opts.Logger.Info("disk: writes accepted again", "was", old.String(), "used", Bytes(m.st.Used), "total", Bytes(m.st.Total))
	default:
		m.opts.Logger.Info("disk: more writes accepted again", "state", s.String(), "was", old.String(), "reason", reason)
	}
}

// Status returns the current state.
func (m *Monitor) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st
}

// NoSpace returns a channel closed once the state is NoSpace or Failed
// (at once if it is now). Take it before starting a write to learn that
// the disk ran out during it.
func (m *Monitor) NoSpace() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.noSpace
}

// Refuse returns nil when a write needing at least state s' room is
// accepted, or the error saying why not: messages ask for OK, metadata
// for Full.
func (m *Monitor) Refuse(worst State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st.State <= worst {
		return nil
	}
	if m.st.State == Failed {
		return fmt.Errorf("%w: %s", ErrFailed, m.st.Reason)
	}
	return fmt.Errorf("%w: %s", ErrFull, m.st.Reason)
}

// WaitSpace returns once the state is better than NoSpace: nil, or the
// error that failed the disk, or ErrClosed when the monitor closes
// first, or ErrNotStarted at once before Start.
func (m *Monitor) WaitSpace() error {
	for {
		if !m.started.Load() {
			return ErrNotStarted
		}
		m.mu.Lock()
		s, ch, failure := m.st.State, m.changed, m.failure
		m.mu.Unlock()
		switch {
		case s == Failed:
			return fmt.Errorf("%w: %w", ErrFailed, failure)
		case s < NoSpace:
			return nil
		}
		select {
		case <-ch:
		case <-m.stop:
			return ErrClosed
		}
	}
}

// Bytes formats n as a size for people: 512 B, 3.0 MiB, 1.2 GiB.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for v := n / unit; v >= unit && exp < 4; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
