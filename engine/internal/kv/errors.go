package kv

import (
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// errorLogEvery is how often a run of background errors is logged after
// its first.
const errorLogEvery = 10 * time.Second

// BackgroundErrors receives the errors of a pebble database's background
// work. Pebble retries a failed flush or compaction at once, so a full
// disk fails them many times a second: BackgroundErrors logs the first
// error of a run and then at most one line per errorLogEvery saying how
// many more there were. It also lets a caller wait for the next error.
type BackgroundErrors struct {
	l *slog.Logger

	mu      sync.Mutex
	last    error
	next    chan struct{} // closed at the next error
	logged  time.Time     // when an error was last logged
	skipped int           // errors since then that were not logged
	now     func() time.Time
}

// NewBackgroundErrors returns a BackgroundErrors that logs to l (nil: not
// at all).
func NewBackgroundErrors(l *slog.Logger) *BackgroundErrors {
	return &BackgroundErrors{l: l, next: make(chan struct{}), now: time.Now}
}

// Listener returns the event listener to give pebble.Options.
func (b *BackgroundErrors) Listener() *pebble.EventListener {
	return &pebble.EventListener{BackgroundError: b.report}
}

// Next returns a channel closed at the next background error after the
// call.
func (b *BackgroundErrors) Next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// Last returns the latest background error, or nil.
func (b *BackgroundErrors) Last() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

func (b *BackgroundErrors) report(err error) {
	b.mu.Lock()
	b.last = err
	close(b.next)
	b.next = make(chan struct{})
	now := b.now()
	log := now.Sub(b.logged) >= errorLogEvery
	skipped := b.skipped
	if log {
		b.logged, b.skipped = now, 0
	} else {
		b.skipped++
	}
	b.mu.Unlock()
	if !log || b.l == nil {
		return
	}
	// Error() rather than the error itself: pebble's errors format with
	// their stack traces.
	if skipped > 0 {
		b.l.Error("storage background work failed; it is retried", "err", err.Error(), "failuresNotLogged", skipped)
		return
	}
	b.l.Error("storage background work failed; it is retried", "err", err.Error())
}
