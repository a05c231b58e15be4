package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/commitlog"
	"github.com/karmanmq/karman/engine/epoch"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/index"
	"github.com/karmanmq/karman/engine/internal/disk"
	"github.com/karmanmq/karman/engine/internal/kv"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/pop"
	"github.com/karmanmq/karman/engine/queue"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/engine/timer"
	"github.com/karmanmq/karman/engine/txn"
	"github.com/karmanmq/karman/filter"
)

// Engine is an open broker store: topics, queues, messages, groups and
// offsets in one data directory. It is safe for concurrent use.
type Engine struct {
	opts Options
	dir  string

	log     *commitlog.Log
	idx     *pebble.DB           // consume queues and key index; derived from the log
	idxErrs *kv.BackgroundErrors // the index's failed flushes and compactions
	idxFS   *kv.DiskFS           // the index's files
	idxDead *kv.Fatal            // the index's fatal error
	disk    *disk.Monitor        // whether the disk takes writes
	// retainNow asks the maintenance loop for a retention run now.
	retainNow chan struct{}
	queues    *queue.Store
	keys      *index.Index
	timers    *timer.Store
	sched     *timer.Scheduler
	meta      *meta.Store
	ids       *message.Generator

	topics    sync.Map     // topic name → *topicState
	topicsGen atomic.Int64 // bumped when a topic state is dropped
	lmqs      sync.Map     // light queue name → *queueState

	disp *dispatcher

	events     eventBus
	sqlFilters *filter.Cache

	halves     *txn.Store
	txnChecks  *txn.Checks
	checkers   checkers
	checkRound atomic.Uint32
	clients    *registry.Registry

	pops     sync.Map    // popKey → *popQueue
	popDirty dirtyQueues // pop states changed since the last flush
	// popSaveMu orders saving pop states with deleting or replacing
	// them: savePops writes, under it, only the states not dropped, and
	// a deletion drops the states and deletes them from the metadata
	// under it, so a state read before a deletion is never written
	// after it. Taken after any popQueue.mu is released.
	popSaveMu sync.Mutex
	// popSaveHook, when set (by tests), runs in savePops between reading
	// the states and saving them.
	popSaveHook atomic.Pointer[func()]
	handles     atomic.Pointer[pop.Signer] // issues and checks receipt handles

	bufs sync.Pool // *sendState

	hooks hook.Set // Options.Hooks by kind

	history deliveries // per group, what was delivered and what became of it

	repl     replication // role, epochs
	appended notifier    // broadcast after each append to the log

	closed  atomic.Bool
	closing chan struct{}
	wg      sync.WaitGroup

	corrupt atomic.Int64 // records skipped because they failed their checksum

	// retainMu makes retention runs one at a time, so that each counts
	// only what it deleted.
	retainMu sync.Mutex
	// unconsumedDeleted counts the messages retention deleted before a
	// group consumed them, once per group.
	unconsumedDeleted atomic.Int64
	// txnCommits and txnRollbacks count the transactions ended since
	// the engine opened.
	txnCommits, txnRollbacks atomic.Int64

	// queueMinRead, when set (by tests), is called while queueMin reads a
	// queue's bounds, between its two reads.
	queueMinRead func()
	// popWaiting, when set (by tests), is called each time a pop found
	// nothing and starts to wait.
	popWaiting func()
}

// Open opens the engine stored in dir, creating it if needed. It recovers
// the commit log (truncating a torn tail) and brings every index up to date
// with the log before it returns.
func Open(dir string, opts *Options) (*Engine, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: create data dir: %w", err)
	}
	e := &Engine{opts: o, dir: dir, closing: make(chan struct{}), retainNow: make(chan struct{}, 1), clients: registry.New(registry.Options{}), sqlFilters: filter.NewCache(sqlCacheSize)}
	e.ids = message.NewGenerator(o.StoreHost.Addr())
	e.history.opened = time.Now()
	e.hooks, _ = newHooks(o.Hooks) // checked by Validate
	e.bufs.New = func() any { return new(sendState) }
	e.disk = disk.New(dir, disk.Options{
		FullRatio: o.DiskFullRatio,
		Reserve:   uint64(o.DiskReserve),
		Interval:  o.DiskCheckInterval,
		Logger:    o.Logger,
		Statfs:    o.statfs,
	})
	if st := e.disk.Status(); st.State >= disk.NoSpace {
		e.disk.Close()
		return nil, fmt.Errorf("engine: cannot start: %w: %s; free space in %s and start again", ErrDiskFull, st.Reason, dir)
	}
	if err := e.open(); err != nil {
		e.disk.Close()
		e.closeStores()
		if disk.IsSpace(err) {
			st := e.disk.Status()
			err = fmt.Errorf("engine: cannot start: %w: %s free of %s in %s; free space and start again: %w", ErrDiskFull, disk.Bytes(st.Free()), disk.Bytes(st.Total), dir, err)
		}
		return nil, err
	}
	e.disk.Start()
	e.loadDeliveries()
	e.sched = timer.NewScheduler(e.timers, e.deliverDue, timer.SchedulerOptions{
		OnError: func(err error) {
			// The disk monitor said it once; a replica delivers once
			// promoted.
			if !errors.Is(err, ErrDiskFull) && !errors.Is(err, ErrNotMaster) {
				e.opts.Logger.Error("timer delivery failed; retrying", "err", err)
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	e.wg.Add(7)
	go e.deliverySaveLoop()
	go e.transactionLoop()
	go e.disp.run()
	go e.popFlushLoop()
	go e.maintenanceLoop()
	go func() { defer e.wg.Done(); e.sched.Run(ctx) }()
	go func() { defer e.wg.Done(); <-e.closing; cancel() }()
	return e, nil
}

func (e *Engine) open() error {
	var err error
	// While opening, a write that finds the disk full fails at once
	// (the monitor is not started, so it would wait for good): Open
	// fails fast instead of hanging.
	if e.repl.epochs, err = epoch.Open(e.dir); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if e.opts.Replica {
		e.repl.role = RoleReplica
	}
	if e.meta, err = meta.Open(filepath.Join(e.dir, "meta"), &meta.Options{Logger: e.opts.Logger, Disk: e.disk}); err != nil {
		return err
	}
	cache := pebble.NewCache(e.opts.IndexCacheSize)
	defer cache.Unref()
	e.idxErrs = kv.NewBackgroundErrors(e.opts.Logger)
	e.idxFS = kv.NewDiskFS(e.opts.indexFS, e.disk)
	e.idxFS.NoLog = true
	e.idxDead = kv.NewFatal(func(err error) { e.disk.ReportFailure(fmt.Errorf("index: %w", err)) })
	err = e.idxDead.Run(func() (err error) {
		e.idx, err = pebble.Open(filepath.Join(e.dir, "index"), &pebble.Options{
			DisableWAL:    true,
			Logger:        kv.Logger{L: e.opts.Logger, Fatal: e.idxDead},
			EventListener: e.idxErrs.Listener(),
			MemTableSize:  64 << 20,
			Cache:         cache,
			FS:            e.idxFS,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("engine: open index: %w", err)
	}
	e.queues = queue.New(e.idx)
	e.keys = index.New(e.idx)
	e.timers = timer.New(e.idx)
	e.halves = txn.New(e.idx)
	e.txnChecks = txn.NewChecks()
	mode := commitlog.FlushAsync
	if e.opts.Flush == FlushSync {
		mode = commitlog.FlushSync
	}
	e.log, err = commitlog.Open(filepath.Join(e.dir, "commitlog"), &commitlog.Options{
		SegmentSize:   e.opts.SegmentSize,
		Flush:         mode,
		FlushInterval: e.opts.FlushInterval,
		Logger:        e.opts.Logger,
		OnCorruption:  func(commitlog.Corruption) { e.corrupt.Add(1) },
		OnNewSegment:  e.retainSoon,
	})
	if err != nil {
		return fmt.Errorf("engine: open commit log: %w", err)
	}
	if err := e.loadHandleKey(); err != nil {
		return err
	}
	if l, ok := e.opts.Router.(RouteLoader); ok {
		if err := l.LoadRoutes(e); err != nil {
			return fmt.Errorf("engine: load routes: %w", err)
		}
	}
	// What the log holds at open is the group's unless a master's log
	// cuts it back (Truncate).
	e.repl.kept.Store(e.log.EndOffset())
	e.repl.master.Store(e.repl.role == RoleMaster)
	e.disp = newDispatcher(e)
	return e.disp.recover()
}

// Close flushes and closes the engine. Calls in progress may fail with
// ErrClosed.
func (e *Engine) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	close(e.closing)
	e.wg.Wait()
	e.saveDeliveries(false)
	return e.closeStores()
}

func (e *Engine) closeStores() error {
	// A write waiting for space stays paused from here on, and the store
	// it belongs to is left unclosed (see kv.DiskFS).
	e.disk.Close()
	var errs []error
	if e.log != nil {
		errs = append(errs, e.log.Close())
	}
	if e.idx != nil {
		errs = append(errs, e.closeIndex())
	}
	if e.meta != nil {
		errs = append(errs, e.meta.Close())
	}
	return errors.Join(errs...)
}

// closeIndex flushes and closes the index, unless a write of it is paused
// on the disk or pebble failed: then the index is left as it is on disk
// (it is derived from the commit log, and the next Open dispatches again
// from its last checkpoint).
func (e *Engine) closeIndex() error {
	done := make(chan error, 1)
	go func() {
		err := e.flushIndex()
		done <- errors.Join(err, e.idx.Close())
	}()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-e.idxDead.Done():
			return fmt.Errorf("engine: index left unclosed: %w", e.idxDead.Err())
		case <-t.C:
			if e.idxFS.Stuck() {
				return fmt.Errorf("engine: index left unclosed, a write of it waits on the disk (%s); the next start dispatches again from its last checkpoint", e.disk.Status().Reason)
			}
		}
	}
}

// indexFlushTimeout bounds how long Close waits for the index to reach
// the disk.
const indexFlushTimeout = time.Minute

// flushIndex writes the index's memtables to disk, so that the next Open
// need not dispatch again what they hold. It gives up when the flush fails
// (pebble would retry it for ever, a full disk never letting it succeed)
// or takes longer than indexFlushTimeout: the index is derived from the
// commit log, and the next Open dispatches again from the last checkpoint
// that reached the disk.
func (e *Engine) flushIndex() error {
	failed := e.idxErrs.Next()
	done, err := e.idx.AsyncFlush()
	if err != nil {
		return fmt.Errorf("engine: flush index: %w", err)
	}
	t := time.NewTimer(indexFlushTimeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-failed:
		err = e.idxErrs.Last()
	case <-t.C:
		err = fmt.Errorf("not done after %s", indexFlushTimeout)
	}
	return fmt.Errorf("engine: index not flushed, the next start dispatches again from its last checkpoint: %w", err)
}

// clientExpiryInterval is how often clients silent for too long are
// dropped from the registry.
const clientExpiryInterval = 10 * time.Second

// Clients returns the registry of connected producers and consumers, which
// every front-end shares: heartbeats, subscriptions, queue locks and the
// change stream (Clients().Watch) that tells front-ends when a group's
// membership changes.
func (e *Engine) Clients() *registry.Registry { return e.clients }

// FlushMode returns the flush policy the engine was opened with: with
// FlushSync every send waits for the disk.
func (e *Engine) FlushMode() FlushMode { return e.opts.Flush }

// Options returns the options the engine was opened with, defaults
// applied.
func (e *Engine) Options() Options { return e.opts }

// Dir returns the engine's data directory.
func (e *Engine) Dir() string { return e.dir }

// maintenanceLoop runs retention, client expiry and the trimming of idle
// pop states.
func (e *Engine) maintenanceLoop() {
	defer e.wg.Done()
	t := time.NewTicker(e.opts.RetentionInterval)
	defer t.Stop()
	expire := time.NewTicker(clientExpiryInterval)
	defer expire.Stop()
	for {
		select {
		case <-e.closing:
			return
		case now := <-t.C:
			e.retain(now)
			e.trimIdlePops()
		case <-e.retainNow:
			e.retain(time.Now())
		case <-expire.C:
			e.clients.Expire()
		}
	}
}

// retain applies retention, logging a failure.
func (e *Engine) retain(now time.Time) {
	if _, err := e.ApplyRetention(now); err != nil {
		e.opts.Logger.Error("retention failed", "err", err)
	}
}

// retainSoon asks the maintenance loop to apply retention now: the commit
// log has just filled a segment, or failed to make one, so the disk may
// have passed RetentionDiskRatio since the last run.
func (e *Engine) retainSoon() {
	select {
	case e.retainNow <- struct{}{}:
	default: // already asked
	}
}

// WaitDispatched returns once every message appended before the call is
// indexed and can be pulled.
func (e *Engine) WaitDispatched(ctx context.Context) error {
	return e.disp.waitFor(ctx, e.log.EndOffset())
}

func (e *Engine) checkOpen() error {
	if e.closed.Load() {
		return ErrClosed
	}
	return nil
}
