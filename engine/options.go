package engine

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/karmanmq/karman/engine/commitlog"
)

// FlushMode says when appended messages are forced to disk.
type FlushMode int

const (
	// FlushAsync acknowledges a message once it is in the mapped log; a
	// background flush writes it to disk within FlushInterval. Acknowledged
	// messages survive a crash of the process, not of the machine.
	FlushAsync FlushMode = iota
	// FlushSync acknowledges a message only after it is on disk. Concurrent
	// senders share one flush (group commit).
	FlushSync
)

// String returns "async" or "sync".
func (m FlushMode) String() string {
	if m == FlushSync {
		return "sync"
	}
	return "async"
}

// ParseFlushMode reads "async" or "sync".
func ParseFlushMode(s string) (FlushMode, error) {
	switch s {
	case "async", "ASYNC", "":
		return FlushAsync, nil
	case "sync", "SYNC":
		return FlushSync, nil
	}
	return 0, fmt.Errorf("engine: unknown flush mode %q (want async or sync)", s)
}

// Options configure an Engine. The zero value works: every field documents
// its default, applied by EnsureDefaults.
type Options struct {
	// SegmentSize is the size of each commit-log segment file. Default 1 GiB.
	SegmentSize int64
	// Flush is the flush policy. Default FlushAsync.
	Flush FlushMode
	// FlushInterval is how often FlushAsync writes to disk. Default 500ms.
	FlushInterval time.Duration

	// MaxMessageSize is the largest accepted body in bytes. Default 4 MiB,
	// or less when a segment could not hold a record that large.
	MaxMessageSize int

	// AutoCreateTopics creates an unknown topic on its first send, with
	// DefaultQueues queues. Default false: sending to an unknown topic fails
	// with ErrTopicNotFound.
	AutoCreateTopics bool
	// AutoCreateGroups creates an unknown consumer group, with default
	// settings, when a consumer first uses it. Default false.
	AutoCreateGroups bool
	// DefaultQueues is the queue count of auto-created topics. Default 8.
	DefaultQueues int32

	// RetentionAge deletes commit-log segments whose last write is older.
	// Default 72h. Deletion ignores consumption, as in RocketMQ.
	RetentionAge time.Duration
	// RetentionDiskRatio deletes the oldest segments, consumed or not,
	// while the disk holding the data is fuller than this fraction.
	// Default 0.85, RocketMQ's diskSpaceCleanForciblyRatio. (RocketMQ's
	// diskMaxUsedSpaceRatio, 0.75, only makes it delete segments past
	// RetentionAge before its daily hour; the engine deletes those at
	// any hour.)
	RetentionDiskRatio float64
	// RetentionInterval is how often retention runs. Default 1m.
	RetentionInterval time.Duration

	// DiskFullRatio: while the file system holding the data is at least
	// this full, sends are refused with ErrDiskFull (consumers go on
	// reading, committing offsets and acknowledging). Default 0.90,
	// RocketMQ's diskSpaceWarningLevelRatio.
	DiskFullRatio float64
	// DiskReserve: while less than this many bytes are free, or after a
	// write failed for want of space (until twice this is free), every
	// write is refused with ErrDiskFull, offset commits and
	// acknowledgements too. Default 4 MiB.
	DiskReserve int64
	// DiskCheckInterval is how often the free space is read (and at once
	// after a write finds the disk full). Default 500ms.
	DiskCheckInterval time.Duration

	// IndexCacheSize is the block cache of the queue and key index, in
	// bytes. Default 256 MiB.
	IndexCacheSize int64
	// DispatchDelay is how long the dispatcher, woken by an append, waits
	// for more before it indexes what was appended: consumers see a
	// message up to this much later, and the index takes the records of
	// that time in one batch instead of one at a time. An append after a
	// quiet spell (no dispatch for a millisecond, or for DispatchDelay if
	// longer) is indexed at once. A replica waits at least 2ms, and
	// after 2ms of quiet indexes at once. Default
	// DefaultDispatchDelay; negative means no wait.
	DispatchDelay time.Duration

	// DelayLevels are the delays of the DELAY property's levels 1..n.
	// Default DefaultDelayLevels (RocketMQ's 18 levels, 1s to 2h).
	DelayLevels []time.Duration
	// TimerHorizon is how far ahead a message may be scheduled. Default 72h.
	TimerHorizon time.Duration

	// DisableSQLFilter refuses SQL92 filters (RocketMQ's
	// enablePropertyFilter=false). Default false: SQL92 filtering is on.
	DisableSQLFilter bool

	// DisableMessageTypeCheck lets a topic typed NORMAL, FIFO, DELAY or
	// TRANSACTION take messages of other types. Default false: such a send
	// fails with ErrMessageTypeMismatch (MIXED and untyped topics take
	// every type).
	DisableMessageTypeCheck bool

	// TransactionTimeout is how long a half message waits for its decision
	// before the first check. Default 6s.
	TransactionTimeout time.Duration
	// TransactionCheckInterval is the time between checks. Default 30s.
	TransactionCheckInterval time.Duration
	// TransactionCheckMax is how many checks a half message gets before it
	// is discarded. Default 15.
	TransactionCheckMax int
	// TransactionScanInterval is how often pending half messages are
	// looked at. Default 1s.
	TransactionScanInterval time.Duration

	// StoreHost is the address written into stored messages and offset
	// message ids. Default 127.0.0.1:10911.
	StoreHost netip.AddrPort

	// Logger receives the engine's log records. Default discards them.
	Logger *slog.Logger

	// AppendLatency, when set, is called after each append (one call per
	// Send or SendBatch) with its duration. It must be fast.
	AppendLatency func(time.Duration)

	// SendLatency, when set, is called after each Send, SendToQueue or
	// SendBatch with the topic, the time from the call to its answer
	// (hooks, checks, append and, under sync flush, the flush) and its
	// error (nil on success). It must be fast.
	SendLatency func(topic string, d time.Duration, err error)

	// MessageSize, when set, is called for each message a Send,
	// SendToQueue or SendBatch stored, with its topic and body size in
	// bytes. It must be fast.
	MessageSize func(topic string, bytes int)

	// Hooks are the hooks the engine calls, in order: each value
	// implements one or more of the interfaces of package hook
	// (hook.BeforeStore, hook.BeforeDeliver, hook.Authenticator,
	// hook.Authorizer), and a value that implements none is refused.
	// The engine calls the store and delivery hooks; the front-ends
	// serving from it call the Authenticators and Authorizers
	// (Engine.Hooks). Default none: with no hook of a kind, its hook
	// point costs a length check.
	Hooks []any

	// Router, when set, names extra light queues for every record the
	// engine indexes (see Router); a Router that is also a RouteLoader
	// loads its routes during Open. Default none: a nil check.
	Router Router
	// Replica opens the engine as a replica of its broker group (see
	// Replicate): writes are refused with ErrNotMaster until Promote.
	// Default false: the engine is a master, as a single broker is.
	Replica bool
	// Replicator, when set, makes a master's sends wait for its
	// replicas (sync replication): see Replicator. Default none: a send
	// is acknowledged once stored here.
	Replicator Replicator

	// statfs, when set, replaces the file-system query of the disk
	// monitor (tests).
	statfs func(dir string) (used, total uint64, err error)

	// indexFS, when set, is the file system of the index database (tests
	// inject failures with it).
	indexFS vfs.FS
}

// Defaults.
const (
	DefaultSegmentSize    = 1 << 30
	MinSegmentSize        = 64 << 10
	MaxSegmentSize        = commitlog.MaxSegmentSize
	DefaultFlushInterval  = 500 * time.Millisecond
	DefaultMaxMessageSize = 4 << 20
	DefaultQueueCount     = 8
	DefaultRetentionAge   = 72 * time.Hour
	DefaultDiskRatio      = 0.85
	DefaultRetentionEvery = time.Minute
	DefaultTimerHorizon   = 72 * time.Hour
	DefaultDispatchDelay  = 200 * time.Microsecond
	DefaultDiskFullRatio  = 0.90
	DefaultDiskReserve    = 4 << 20
	DefaultDiskCheck      = 500 * time.Millisecond
)

// recordOverhead bounds the bytes a stored record needs besides its body:
// properties (at most 32 KiB), topic, fixed fields and the log's framing.
const recordOverhead = 34 << 10

// EnsureDefaults fills unset fields with their defaults and returns o (a new
// Options when o is nil).
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
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = min(DefaultMaxMessageSize, int(o.SegmentSize-recordOverhead))
	}
	if o.DefaultQueues == 0 {
		o.DefaultQueues = DefaultQueueCount
	}
	if o.RetentionAge == 0 {
		o.RetentionAge = DefaultRetentionAge
	}
	if o.RetentionDiskRatio == 0 {
		o.RetentionDiskRatio = DefaultDiskRatio
	}
	if o.RetentionInterval == 0 {
		o.RetentionInterval = DefaultRetentionEvery
	}
	if o.TransactionTimeout == 0 {
		o.TransactionTimeout = 6 * time.Second
	}
	if o.TransactionCheckInterval == 0 {
		o.TransactionCheckInterval = 30 * time.Second
	}
	if o.TransactionCheckMax == 0 {
		o.TransactionCheckMax = 15
	}
	if o.TransactionScanInterval == 0 {
		o.TransactionScanInterval = time.Second
	}
	if o.DiskFullRatio == 0 {
		o.DiskFullRatio = DefaultDiskFullRatio
	}
	if o.DiskReserve == 0 {
		o.DiskReserve = DefaultDiskReserve
	}
	if o.DiskCheckInterval == 0 {
		o.DiskCheckInterval = DefaultDiskCheck
	}
	if o.IndexCacheSize == 0 {
		o.IndexCacheSize = 256 << 20
	}
	if o.DispatchDelay == 0 {
		o.DispatchDelay = DefaultDispatchDelay
	}
	if len(o.DelayLevels) == 0 {
		o.DelayLevels = DefaultDelayLevels
	}
	if o.TimerHorizon == 0 {
		o.TimerHorizon = DefaultTimerHorizon
	}
	if !o.StoreHost.IsValid() {
		o.StoreHost = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 10911)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Validate reports the first invalid field.
func (o *Options) Validate() error {
	switch {
	case o.SegmentSize < MinSegmentSize || o.SegmentSize > MaxSegmentSize || o.SegmentSize%4096 != 0:
		return fmt.Errorf("engine: segment size %d must be a multiple of 4096 between %d (64 KiB) and %d (4 GiB)", o.SegmentSize, MinSegmentSize, int64(MaxSegmentSize))
	case o.Flush != FlushAsync && o.Flush != FlushSync:
		return fmt.Errorf("engine: unknown flush mode %d", o.Flush)
	case o.FlushInterval < 0:
		return fmt.Errorf("engine: negative flush interval %s", o.FlushInterval)
	case o.MaxMessageSize < 1:
		return fmt.Errorf("engine: max message size %d must be positive", o.MaxMessageSize)
	case int64(o.MaxMessageSize)+recordOverhead > o.SegmentSize:
		return fmt.Errorf("engine: max message size %d does not fit in a %d-byte segment (a record needs up to %d bytes besides its body)", o.MaxMessageSize, o.SegmentSize, recordOverhead)
	case o.DefaultQueues < 1 || o.DefaultQueues > MaxQueues:
		return fmt.Errorf("engine: default queue count %d outside 1..%d", o.DefaultQueues, MaxQueues)
	case o.RetentionAge < 0:
		return fmt.Errorf("engine: negative retention age %s", o.RetentionAge)
	case o.RetentionDiskRatio <= 0 || o.RetentionDiskRatio > 1:
		return fmt.Errorf("engine: retention disk ratio %g outside (0, 1]", o.RetentionDiskRatio)
	case !positive(o.DelayLevels):
		return fmt.Errorf("engine: delay levels %v must all be positive", o.DelayLevels)
	case o.TransactionTimeout < 0 || o.TransactionCheckInterval < 0 || o.TransactionCheckMax < 0 || o.TransactionScanInterval < 0:
		return fmt.Errorf("engine: negative transaction check setting")
	case o.TimerHorizon < 0:
		return fmt.Errorf("engine: negative timer horizon %s", o.TimerHorizon)
	case o.DiskFullRatio <= 0 || o.DiskFullRatio > 1:
		return fmt.Errorf("engine: disk full ratio %g outside (0, 1]", o.DiskFullRatio)
	case o.DiskReserve < 0:
		return fmt.Errorf("engine: negative disk reserve %d", o.DiskReserve)
	case o.DiskCheckInterval < 0:
		return fmt.Errorf("engine: negative disk check interval %s", o.DiskCheckInterval)
	case o.RetentionInterval < 0:
		return fmt.Errorf("engine: negative retention interval %s", o.RetentionInterval)
	}
	_, err := newHooks(o.Hooks)
	return err
}

func positive(ds []time.Duration) bool {
	for _, d := range ds {
		if d <= 0 {
			return false
		}
	}
	return true
}
