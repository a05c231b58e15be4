package disk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	MiB   = 1 << 20
	total = 100 * MiB
)

// fakeFS is a file system whose usage the test sets.
type fakeFS struct {
	mu    sync.Mutex
	used  uint64
	total uint64
	err   error
	calls int
}

func (f *fakeFS) set(used uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used, f.err = used, nil
}

func (f *fakeFS) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeFS) statfs(dir string) (used, total uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if dir != "/data" {
		return 0, 0, fmt.Errorf("statfs of %q, want /data", dir)
	}
	return f.used, f.total, f.err
}

func (f *fakeFS) checks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// logLines records the level and message of every log record.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Level.String()+" "+r.Message)
	return nil
}

// take returns the lines logged since the last call.
func (l *logLines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

func newTestMonitor(t *testing.T, used uint64, interval time.Duration) (*Monitor, *fakeFS, *logLines) {
	t.Helper()
	fs := &fakeFS{used: used, total: total}
	logs := &logLines{}
	m := New("/data", Options{FullRatio: 0.9, Reserve: 4 * MiB, Interval: interval, Logger: slog.New(logs), Statfs: fs.statfs})
	t.Cleanup(m.Close)
	return m, fs, logs
}

const (
	refused  = "ERROR disk: writes refused"
	accepted = "INFO disk: writes accepted again"
	more     = "INFO disk: more writes accepted again"
)

// TestMonitorStates walks the monitor through its states with a fake
// statfs: each step changes the usage (or reports a failed write) and
// checks, then says the state, what the reason names and the lines
// logged.
func TestMonitorStates(t *testing.T) {
	m, fs, logs := newTestMonitor(t, 10*MiB, time.Hour)
	if st := m.Status(); st.State != OK || st.Reason != "" || st.Used != 10*MiB || st.Total != total || st.Free() != 90*MiB {
		t.Fatalf("first status %+v, want ok with the first check's figures", st)
	}
	enospc := &errorString{"write index/000012.sst: no space left on device", syscall.ENOSPC}
	eio := &errorString{"sync index/000012.sst: input/output error", syscall.EIO}
	steps := []struct {
		name   string
		used   uint64 // set before the check; 0 keeps the last
		report error  // reported instead of checking, when set
		want   State
		reason string   // a piece of the reason
		logs   []string // lines logged by the step
	}{
		{name: "room", used: 50 * MiB, want: OK},
		{name: "just below the ratio", used: 89*MiB + 900*1024, want: OK},
		{name: "at the ratio", used: 90 * MiB, want: Full, reason: "at or above the full ratio 0.90", logs: []string{refused}},
		{name: "fuller, same state", used: 93 * MiB, want: Full, reason: "93.0% full"},
		{name: "below the reserve", used: 96*MiB + 1, want: NoSpace, reason: "below the 4.0 MiB reserve", logs: []string{refused}},
		{name: "above the reserve, below twice", used: 95 * MiB, want: NoSpace, reason: "below the 4.0 MiB reserve"},
		{name: "just under twice the reserve", used: 92*MiB + 1, want: NoSpace},
		{name: "twice the reserve free", used: 92 * MiB, want: Full, reason: "92.0% full", logs: []string{more}},
		{name: "room again", used: 20 * MiB, want: OK, logs: []string{accepted}},
		{name: "a write finds no space", report: enospc, want: NoSpace, reason: "no space left on device", logs: []string{refused}},
		{name: "room after the failed write", used: 20 * MiB, want: OK, logs: []string{accepted}},
		{name: "a write finds no space again", report: enospc, want: NoSpace, logs: []string{refused}},
		{name: "a little room", used: 94 * MiB, want: NoSpace, reason: "no space left on device"},
		{name: "twice the reserve at last", used: 88 * MiB, want: OK, logs: []string{accepted}},
		{name: "EIO", report: eio, want: Failed, reason: "input/output error", logs: []string{refused}},
		{name: "room does not heal a failed disk", used: 1 * MiB, want: Failed, reason: "input/output error"},
		{name: "nor does a full one", used: 99 * MiB, want: Failed, reason: "fix the disk and restart"},
		{name: "ENOSPC after EIO", report: enospc, want: Failed, reason: "input/output error"},
		{name: "EIO again", report: eio, want: Failed},
	}
	for _, s := range steps {
		switch {
		case s.report != nil && IsIO(s.report):
			m.ReportFailure(s.report)
		case s.report != nil:
			m.ReportNoSpace(s.report)
		default:
			fs.set(s.used)
			m.Check()
		}
		st := m.Status()
		if st.State != s.want {
			t.Fatalf("%s: state %v (%s), want %v", s.name, st.State, st.Reason, s.want)
		}
		if s.want == OK && st.Reason != "" {
			t.Errorf("%s: ok with a reason: %q", s.name, st.Reason)
		}
		if s.want != OK && (!strings.Contains(st.Reason, s.reason) || !strings.Contains(st.Reason, "/data")) {
			t.Errorf("%s: reason %q, want it to name /data and %q", s.name, st.Reason, s.reason)
		}
		if got := logs.take(); strings.Join(got, "\n") != strings.Join(s.logs, "\n") {
			t.Errorf("%s: logged %q, want %q", s.name, got, s.logs)
		}
	}
}

// errorString is an error with a message of its own that matches an errno.
type errorString struct {
	msg string
	err error
}

func (e *errorString) Error() string { return e.msg }
func (e *errorString) Unwrap() error { return e.err }

// TestMonitorStatfsError: a failed statfs changes nothing and says so.
func TestMonitorStatfsError(t *testing.T) {
	m, fs, logs := newTestMonitor(t, 91*MiB, time.Hour)
	logs.take()
	before := m.Status()
	fs.fail(syscall.EACCES)
	m.Check()
	if st := m.Status(); st != before {
		t.Fatalf("status after a failed statfs %+v, want %+v", st, before)
	}
	if got := logs.take(); len(got) != 1 || got[0] != "WARN disk: cannot read the free space" {
		t.Fatalf("logged %q, want one warning", got)
	}
}

// TestMonitorRefuse: messages need OK, metadata Full, and a failed disk
// says so.
func TestMonitorRefuse(t *testing.T) {
	m, fs, _ := newTestMonitor(t, 10*MiB, time.Hour)
	for _, tt := range []struct {
		name             string
		set              func()
		message, metaErr error
	}{
		{"ok", func() { fs.set(10 * MiB); m.Check() }, nil, nil},
		{"full", func() { fs.set(95 * MiB); m.Check() }, ErrFull, nil},
		{"no space", func() { fs.set(99 * MiB); m.Check() }, ErrFull, ErrFull},
		{"failed", func() { m.ReportFailure(syscall.EIO) }, ErrFailed, ErrFailed},
	} {
		tt.set()
		for _, c := range []struct {
			worst State
			want  error
		}{{OK, tt.message}, {Full, tt.metaErr}} {
			err := m.Refuse(c.worst)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("%s: Refuse(%v) = %v, want %v", tt.name, c.worst, err, c.want)
			}
			if err != nil && !strings.Contains(err.Error(), m.Status().Reason) {
				t.Errorf("%s: Refuse(%v) = %q does not give the reason %q", tt.name, c.worst, err, m.Status().Reason)
			}
		}
	}
}

// TestMonitorNoSpaceChannel: the channel closes on entering NoSpace and a
// fresh one is handed out once the state is better again.
func TestMonitorNoSpaceChannel(t *testing.T) {
	m, fs, _ := newTestMonitor(t, 10*MiB, time.Hour)
	ch := m.NoSpace()
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	fs.set(95 * MiB)
	m.Check()
	if closed(ch) {
		t.Fatal("closed on Full")
	}
	m.ReportNoSpace(syscall.ENOSPC)
	if !closed(ch) || !closed(m.NoSpace()) {
		t.Fatal("not closed on NoSpace")
	}
	fs.set(10 * MiB)
	m.Check()
	if closed(m.NoSpace()) {
		t.Fatal("still closed once space returned")
	}
}

// TestMonitorWaitSpace: WaitSpace fails at once before Start, returns when
// a check finds room, fails with the I/O error of a failed disk, and with
// ErrClosed when the monitor closes.
func TestMonitorWaitSpace(t *testing.T) {
	m, fs, _ := newTestMonitor(t, 99*MiB, time.Hour)
	if err := m.WaitSpace(); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("WaitSpace before Start = %v, want ErrNotStarted", err)
	}
	m.Start()
	wait := func() chan error {
		done := make(chan error, 1)
		go func() { done <- m.WaitSpace() }()
		return done
	}
	notYet := func(done chan error, what string) {
		t.Helper()
		// No event says a goroutine is parked in WaitSpace; a short look
		// for a wrong early return is the most that can be checked.
		select {
		case err := <-done:
			t.Fatalf("WaitSpace returned %v %s", err, what)
		case <-time.After(20 * time.Millisecond):
		}
	}
	result := func(done chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("WaitSpace did not return")
			return nil
		}
	}

	done := wait()
	notYet(done, "with less than the reserve free")
	fs.set(95 * MiB) // above the reserve, below twice: no
	m.Check()
	notYet(done, "with less than twice the reserve free")
	fs.set(91 * MiB) // Full: metadata may write again
	m.Check()
	if err := result(done); err != nil {
		t.Fatalf("WaitSpace = %v once space returned", err)
	}

	m.ReportNoSpace(syscall.ENOSPC)
	fs.set(99 * MiB)
	m.Check()
	done = wait()
	notYet(done, "on a full disk")
	m.ReportFailure(syscall.EIO)
	if err := result(done); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("WaitSpace on a failed disk = %v, want ErrFailed wrapping EIO", err)
	}

	m2, _, _ := newTestMonitor(t, 99*MiB, time.Hour)
	m2.Start()
	done = make(chan error, 1)
	go func() { done <- m2.WaitSpace() }()
	notYet(done, "on a full disk")
	m2.Close()
	if err := result(done); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitSpace when the monitor closes = %v, want ErrClosed", err)
	}
}

// TestMonitorReportChecksAtOnce: a reported ENOSPC makes the running
// monitor check at once, not at its next tick: with room on the disk
// (another writer freed it), the state turns back by itself.
func TestMonitorReportChecksAtOnce(t *testing.T) {
	m, fs, _ := newTestMonitor(t, 10*MiB, time.Hour)
	m.Start()
	before := fs.checks()
	m.ReportNoSpace(syscall.ENOSPC)
	deadline := time.Now().Add(10 * time.Second)
	for m.Status().State != OK {
		if time.Now().After(deadline) {
			t.Fatalf("state %v after a report with room on the disk, want ok from a check at once", m.Status().State)
		}
		time.Sleep(time.Millisecond)
	}
	if fs.checks() == before {
		t.Fatal("back to ok without a check")
	}
}

// TestMonitorTicks: the running monitor notices a change of usage by
// itself, and stops checking once closed.
func TestMonitorTicks(t *testing.T) {
	m, fs, logs := newTestMonitor(t, 10*MiB, 2*time.Millisecond)
	m.Start()
	fs.set(99 * MiB)
	deadline := time.Now().Add(10 * time.Second)
	for m.Status().State != NoSpace {
		if time.Now().After(deadline) {
			t.Fatalf("state %v, want no-space from a periodic check", m.Status().State)
		}
		time.Sleep(time.Millisecond)
	}
	m.Close()
	<-m.done
	n := fs.checks()
	fs.set(10 * MiB)
	time.Sleep(20 * time.Millisecond) // ten intervals: no check may come
	if fs.checks() != n || m.Status().State != NoSpace {
		t.Fatalf("checked %d times after Close", fs.checks()-n)
	}
	if got := logs.take(); len(got) != 1 || got[0] != refused {
		t.Fatalf("logged %q, want one ERROR", got)
	}
}

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{4 << 20, "4.0 MiB"},
		{3 << 30, "3.0 GiB"},
		{5 << 40, "5.0 TiB"},
		{7 << 50, "7.0 PiB"},
		{1 << 62, "4096.0 PiB"},
	} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{OK: "ok", Full: "full", NoSpace: "no-space", Failed: "failed", 9: "State(9)"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(s), got, want)
		}
	}
}
