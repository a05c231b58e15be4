package karmancmd

import (
	"io"
	"os"
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
