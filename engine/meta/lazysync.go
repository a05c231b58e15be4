package meta

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kv"
)

// Consumer offsets and pop states are written without waiting for the
// disk: a commit with every pull, or a pop state flush every few
// milliseconds, would otherwise cost an fsync each. Pebble keeps such a
// write in its log's current block, in the process's memory, until the
// block fills or a later write asks for a sync, so on its own a kill -9
// could lose offsets committed any time before. The store therefore asks
// for that sync itself, lazySyncInterval after the first write that did
// not: a crash of the process or of the machine loses at most the writes
// of the last interval (at-least-once: those messages are consumed again).
const lazySyncInterval = 50 * time.Millisecond

// lazySync syncs the store's log after writes that did not wait for it.
type lazySync struct {
	db      *pebble.DB
	logger  *slog.Logger
	fatal   *kv.Fatal     // pebble's fatal error ends the loop
	pending atomic.Bool   // a write since the last sync did not wait for the disk
	writes  atomic.Uint64 // writes that did not wait for the disk
	synced  atomic.Uint64 // of those, how many are known to be on disk
	kick    chan struct{} // a token when pending turns true
	stop    chan struct{}
	done    chan struct{}
}

func startLazySync(db *pebble.DB, logger *slog.Logger, fatal *kv.Fatal) *lazySync {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &lazySync{db: db, logger: logger, fatal: fatal, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop()
	return l
}

// wrote notes a write that did not wait for the disk.
func (l *lazySync) wrote() {
	l.writes.Add(1)
	if !l.pending.Swap(true) {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (l *lazySync) loop() {
	defer close(l.done)
	t := time.NewTimer(lazySyncInterval)
	t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.kick:
		}
		// Let the writes of one interval share the sync.
		t.Reset(lazySyncInterval)
		select {
		case <-l.stop:
			t.Stop()
			return // Close syncs
		case <-t.C:
		}
		l.pending.Store(false)
		n := l.writes.Load()
		// A fatal error of pebble ends this goroutine here (see
		// kv.Logger); close then does not wait for it.
		if err := l.db.LogData(nil, pebble.Sync); err != nil {
			l.logger.Error("meta: syncing offsets and pop states failed; they are written again with the next commit", "err", err)
			continue
		}
		l.synced.Store(n)
	}
}

// close stops the loop; closing the database then writes what is left.
// It does not wait for a loop ended by a fatal error or held by a write
// paused for good (stuck).
func (l *lazySync) close(stuck func() bool) {
	close(l.stop)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-l.fatal.Done():
			return
		case <-t.C:
			if stuck() {
				return
			}
		}
	}
}
