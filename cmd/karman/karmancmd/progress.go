package karmancmd

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

// progress shows how far a long command has come on a terminal; on
// anything else (a file, a pipe, a test's buffer) it shows nothing, so
// that output meant for scripts stays clean.
type progress struct {
	bar *progressbar.ProgressBar // nil when nothing is shown
}

// newProgress returns a progress of n steps described by what, drawn on w
// when w is a terminal and there is more than one step.
func newProgress(w io.Writer, n int, what string) *progress {
	f, ok := w.(*os.File)
	if !ok || n < 2 || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions(n,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// newSpinner returns a progress of unknown length described by what: a
// spinner with the time elapsed, drawn on w when w is a terminal.
func newSpinner(w io.Writer, what string) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// describe changes what the progress says it is doing.
func (p *progress) describe(what string) {
	if p.bar != nil {
		p.bar.Describe(what)
	}
}

// add counts one step done.
func (p *progress) add() {
	if p.bar != nil {
		p.bar.Add(1)
	}
}

// finish removes the bar.
func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// spin turns the spinner every interval until the returned function is
// called, so that the elapsed time moves while nothing else does.
func (p *progress) spin(interval time.Duration) (stop func()) {
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
				p.bar.Add(1)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// clearBefore returns a writer that clears the progress line before
// each write to w, so that other output is not drawn over it.
func (p *progress) clearBefore(w io.Writer) io.Writer {
	if p.bar == nil {
		return w
	}
	return writerFunc(func(b []byte) (int, error) {
		p.bar.Clear()
		return w.Write(b)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// phaseRE finds the phase of a JSON result line of the benchmarks.
var phaseRE = regexp.MustCompile(`"phase":"([^"]+)"`)

// phases returns a writer to w that, for each result line naming a
// phase, tells the progress which phases are done.
func (p *progress) phases(w io.Writer, what string) io.Writer {
	if p.bar == nil {
		return w
	}
	var done []string
	return writerFunc(func(b []byte) (int, error) {
		p.bar.Clear()
		n, err := w.Write(b)
		for _, m := range phaseRE.FindAllSubmatch(b, -1) {
			done = append(done, string(m[1]))
		}
		if len(done) > 0 {
			p.describe(what + ": done " + strings.Join(done, ", "))
		}
		return n, err
	})
}
