// Package progress draws the progress line of karman's long-running
// commands (admin commands over many items, the benchmarks) on standard
// error. It draws only on a terminal, unless told to draw anyway (a
// command's --progress), so that output meant for scripts stays clean.
//
// A Bar is used by one command at a time; its methods may be called from
// several goroutines: every call into the library holds the Bar's lock,
// as the library's Clear takes none of its own.
package progress

import (
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar shows how far a long command has come. The zero Bar (what New and
// Spinner return when nothing is drawn) does nothing.
type Bar struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar // nil when nothing is drawn
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New returns a bar of n steps described by what, drawn on w when w is a
// terminal (or force is set) and there is more than one step.
func New(w io.Writer, n int, what string, force bool) *Bar {
	if n < 2 || !(force || IsTerminal(w)) {
		return &Bar{}
	}
	return &Bar{bar: progressbar.NewOptions(n,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// Spinner returns a bar of unknown length described by what: a spinner
// with the time elapsed, drawn on w when w is a terminal (or force is
// set).
func Spinner(w io.Writer, what string, force bool) *Bar {
	if !(force || IsTerminal(w)) {
		return &Bar{}
	}
	return &Bar{bar: progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSpinnerType(14),
		// The spinner turns when Add is called (see Spin), not on a
		// goroutine of the library's that would draw beside Clear.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// Drawn reports whether the bar draws anything.
func (p *Bar) Drawn() bool { return p.bar != nil }

// Describe changes what the bar says is being done.
func (p *Bar) Describe(what string) {
	if p.bar != nil {
		p.mu.Lock()
		p.bar.Describe(what)
		p.mu.Unlock()
	}
}

// Add counts one step done.
func (p *Bar) Add() {
	if p.bar != nil {
		p.mu.Lock()
		p.bar.Add(1)
		p.mu.Unlock()
	}
}

// Finish removes the bar.
func (p *Bar) Finish() {
	if p.bar != nil {
		p.mu.Lock()
		p.bar.Finish()
		p.mu.Unlock()
	}
}

// Spin turns the spinner every interval until the returned function is
// called, so that the elapsed time moves while nothing else does.
func (p *Bar) Spin(interval time.Duration) (stop func()) {
	if p.bar == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.Add()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// ClearBefore returns a writer that clears the progress line before each
// write to w, so that other output is not drawn over it.
func (p *Bar) ClearBefore(w io.Writer) io.Writer {
	if p.bar == nil {
		return w
	}
	return writerFunc(func(b []byte) (int, error) {
		p.clear()
		return w.Write(b)
	})
}

// clear removes the line until the next draw. The lock is not held
// while the caller writes: w may itself clear the same bar.
func (p *Bar) clear() {
	p.mu.Lock()
	p.bar.Clear()
	p.mu.Unlock()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// phaseRE finds the phase of a JSON result line of the benchmarks.
var phaseRE = regexp.MustCompile(`"phase":"([^"]+)"`)

// Phases returns a writer to w that, for each result line naming a phase,
// tells the bar which phases are done.
func (p *Bar) Phases(w io.Writer, what string) io.Writer {
	if p.bar == nil {
		return w
	}
	var done []string
	return writerFunc(func(b []byte) (int, error) {
		p.clear()
		n, err := w.Write(b)
		for _, m := range phaseRE.FindAllSubmatch(b, -1) {
			done = append(done, string(m[1]))
		}
		if len(done) > 0 {
			p.Describe(what + ": done " + strings.Join(done, ", "))
		}
		return n, err
	})
}
