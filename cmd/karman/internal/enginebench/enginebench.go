package enginebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
)

// PullBatch is the number of messages each Pull of the read phase asks
// for.
const PullBatch = 32

// Mode selects what a run measures.
type Mode string

// The modes of a run.
const (
	// ModeAppend sends Count messages (phase "append") and pulls them
	// back (phase "read").
	ModeAppend Mode = "append"
	// ModePull pre-loads Count messages, pulls them from Consumers
	// goroutines (phase "pull"), then measures how soon a long-polling
	// puller gets a new message (phase "wakeup_pull").
	ModePull Mode = "pull"
	// ModePop pre-loads Count messages, pops and acknowledges them from
	// Consumers goroutines (phase "pop"), then measures how soon a
	// waiting pop gets a new message (phase "wakeup_pop").
	ModePop Mode = "pop"
	// ModeSchedule sends Count timer messages due ScheduleLead after the
	// start, spread over ScheduleWindow (phase "schedule"), then measures
	// how fast and how punctually they reach their topic as they fall
	// due (phase "deliver").
	ModeSchedule Mode = "schedule"
	// ModeTxn sends Count messages (phase "send"), then Count
	// transactional messages, each a half message committed at once
	// (phase "txn", with the ratio of the two rates).
	ModeTxn Mode = "txn"
)

// ParseMode parses "append", "pull", "pop", "schedule" or "txn".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAppend, ModePull, ModePop, ModeSchedule, ModeTxn:
		return m, nil
	}
	return "", fmt.Errorf("enginebench: unknown mode %q (want append, pull, pop, schedule or txn)", s)
}

// Options describe one benchmark run.
type Options struct {
	// Mode is what the run measures; empty means ModeAppend.
	Mode Mode
	// Size is the body size of every message in bytes.
	Size int
	// Count is the total number of messages sent.
	Count int64
	// Batch is, in ModeAppend, the number of messages per send (above 1,
	// SendBatch is used); in ModePull and ModePop, the most messages per
	// Pull or Pop.
	Batch int
	// Producers is the number of goroutines sending.
	Producers int
	// Readers is the number of goroutines pulling; queues are shared out
	// among them.
	Readers int
	// Consumers is the number of goroutines pulling or popping in
	// ModePull and ModePop. Pullers get distinct queues, so at most Queues
	// of them are used.
	Consumers int
	// WakeupCount is the number of messages sent one at a time in the
	// wake-up phases.
	WakeupCount int
	// WakeupInterval is the pause between two sends of the wake-up
	// phases.
	WakeupInterval time.Duration
	// ScheduleLead is, in ModeSchedule, how long after the start of the
	// run the first message falls due. Sending and indexing every timer
	// message must take less, or the run fails.
	ScheduleLead time.Duration
	// ScheduleWindow is, in ModeSchedule, the span over which the due
	// times are spread evenly; 0 makes every message due at once.
	ScheduleWindow time.Duration
	// Queues is the queue count of the benchmark topic.
	Queues int32
	// Flush is the engine's flush policy.
	Flush engine.FlushMode
	// SegmentSize is the commit-log segment size; 0 means the engine's
	// default.
	SegmentSize int64
	// Data is the data directory. Empty means a temporary directory,
	// removed afterwards.
	Data string
	// RawDisk also writes the same number of bytes to a plain file in the
	// data directory and syncs it, for the disk's sequential bandwidth.
	RawDisk bool
	// CPUProfile, when set, is a file that receives a CPU profile of the
	// measured phases (not of the pre-load).
	CPUProfile string
	// Logger receives the engine's log records.
	Logger *slog.Logger
}

// Validate reports the first option out of range.
func (o *Options) Validate() error {
	if o.Mode != "" {
		if _, err := ParseMode(string(o.Mode)); err != nil {
			return err
		}
	}
	consuming := o.Mode == ModePull || o.Mode == ModePop
	switch {
	case o.Size < 1:
		return fmt.Errorf("enginebench: --size must be at least 1 byte")
	case o.Count < 1:
		return fmt.Errorf("enginebench: --count must be at least 1")
	case o.Batch < 1:
		return fmt.Errorf("enginebench: --batch must be at least 1")
	case o.Producers < 1:
		return fmt.Errorf("enginebench: --producers must be at least 1")
	case o.Readers < 1:
		return fmt.Errorf("enginebench: --readers must be at least 1")
	case consuming && o.Batch > engine.MaxPullMessages:
		return fmt.Errorf("enginebench: --batch must be at most %d with --mode %s", engine.MaxPullMessages, o.Mode)
	case consuming && o.Consumers < 1:
		return fmt.Errorf("enginebench: --consumers must be at least 1")
	case consuming && o.WakeupCount < 1:
		return fmt.Errorf("enginebench: --wakeup-count must be at least 1")
	case o.WakeupInterval < 0:
		return fmt.Errorf("enginebench: --wakeup-interval must not be negative")
	case o.Mode == ModeSchedule && o.ScheduleLead <= 0:
		return fmt.Errorf("enginebench: --schedule-lead must be positive")
	case o.Mode == ModeSchedule && o.ScheduleWindow < 0:
		return fmt.Errorf("enginebench: --schedule-window must not be negative")
	case o.Mode == ModeSchedule && o.ScheduleLead+o.ScheduleWindow >= engine.DefaultTimerHorizon:
		return fmt.Errorf("enginebench: --schedule-lead plus --schedule-window must stay below the engine's timer horizon, %s", engine.DefaultTimerHorizon)
	case o.Queues < 1 || o.Queues > engine.MaxQueues:
		return fmt.Errorf("enginebench: --queues must be within 1..%d", engine.MaxQueues)
	case o.SegmentSize < 0:
		return fmt.Errorf("enginebench: --segment-size must not be negative")
	}
	return nil
}

// Result is one phase's line of output.
type Result struct {
	Phase      string  `json:"phase"`
	MsgsPerSec float64 `json:"msgs_per_sec,omitempty"`
	MBPerSec   float64 `json:"mb_per_sec"`
	P50us      float64 `json:"p50_us,omitempty"`
	P99us      float64 `json:"p99_us,omitempty"`
	P999us     float64 `json:"p999_us,omitempty"`
	MaxUs      float64 `json:"max_us,omitempty"`
	Count      int64   `json:"count,omitempty"`
	Size       int     `json:"size,omitempty"`
	Batch      int     `json:"batch,omitempty"`
	Producers  int     `json:"producers,omitempty"`
	Readers    int     `json:"readers,omitempty"`
	Consumers  int     `json:"consumers,omitempty"`
	// IntervalUs is the pause between sends (wake-up phases only).
	IntervalUs float64 `json:"interval_us,omitempty"`
	// WindowMs is the span the due times were spread over (deliver phase
	// only): msgs_per_sec there cannot exceed count / window.
	WindowMs  float64 `json:"window_ms,omitempty"`
	Flush     string  `json:"flush,omitempty"`
	Bytes     int64   `json:"bytes"`
	ElapsedMs float64 `json:"elapsed_ms"`
	// CPUMs is the CPU time (user and system) the whole process used
	// during the phase. On a shared machine msgs_per_sec depends on how
	// much CPU the run was given; cpu_ms per message much less so.
	CPUMs float64 `json:"cpu_ms,omitempty"`
	// DispatchMs is how long, after the last send returned, the engine
	// took to index everything (append phase only).
	DispatchMs *float64 `json:"dispatch_ms,omitempty"`
	// Ack latency quantiles, per Ack call (pop phase only).
	AckP50us  float64 `json:"ack_p50_us,omitempty"`
	AckP99us  float64 `json:"ack_p99_us,omitempty"`
	AckP999us float64 `json:"ack_p999_us,omitempty"`
	AckMaxUs  float64 `json:"ack_max_us,omitempty"`
	// Ratio is the transaction rate over the plain send rate of the same
	// run (txn phase only).
	Ratio float64 `json:"ratio,omitempty"`
}

// Run runs the benchmark, writing one JSON line per phase to out and a
// description of the machine and the options to info.
func Run(ctx context.Context, o Options, out, info io.Writer) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	dir := o.Data
	if dir == "" {
		dir, err = os.MkdirTemp("", "karman-bench-")
		if err != nil {
			return fmt.Errorf("enginebench: %w", err)
		}
		defer func() {
			if rerr := os.RemoveAll(dir); rerr != nil {
				err = errors.Join(err, fmt.Errorf("enginebench: remove %s: %w", dir, rerr))
			}
		}()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("enginebench: %w", err)
	}

	fmt.Fprintf(info, "karman bench engine: goos=%s goarch=%s cpus=%d go=%s\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	segment := o.SegmentSize
	if segment == 0 {
		segment = engine.DefaultSegmentSize
	}
	if o.Mode == "" {
		o.Mode = ModeAppend
	}
	switch o.Mode {
	case ModeAppend:
		fmt.Fprintf(info, "flags: mode=%s size=%d count=%d batch=%d producers=%d readers=%d queues=%d flush=%s segment-size=%d data=%s dd=%t\n",
			o.Mode, o.Size, o.Count, o.Batch, o.Producers, o.Readers, o.Queues, o.Flush, segment, dir, o.RawDisk)
	case ModeSchedule:
		fmt.Fprintf(info, "flags: mode=%s size=%d count=%d batch=%d producers=%d queues=%d schedule-lead=%s schedule-window=%s flush=%s segment-size=%d data=%s dd=%t\n",
			o.Mode, o.Size, o.Count, o.Batch, o.Producers, o.Queues, o.ScheduleLead, o.ScheduleWindow, o.Flush, segment, dir, o.RawDisk)
	case ModeTxn:
		fmt.Fprintf(info, "flags: mode=%s size=%d count=%d producers=%d queues=%d flush=%s segment-size=%d data=%s dd=%t\n",
			o.Mode, o.Size, o.Count, o.Producers, o.Queues, o.Flush, segment, dir, o.RawDisk)
	default:
		fmt.Fprintf(info, "flags: mode=%s size=%d count=%d batch=%d consumers=%d producers=%d queues=%d wakeup-count=%d wakeup-interval=%s flush=%s segment-size=%d data=%s dd=%t\n",
			o.Mode, o.Size, o.Count, o.Batch, o.Consumers, o.Producers, o.Queues, o.WakeupCount, o.WakeupInterval, o.Flush, segment, dir, o.RawDisk)
	}

	enc := json.NewEncoder(out)
	b := &bench{o: o, topic: "KarmanBench_" + strconv.FormatInt(time.Now().UnixNano(), 36), group: benchGroup}
	b.eng, err = engine.Open(dir, &engine.Options{
		SegmentSize:    o.SegmentSize,
		Flush:          o.Flush,
		MaxMessageSize: maxMessageSize(o),
		Logger:         o.Logger,
	})
	if err != nil {
		return fmt.Errorf("enginebench: open engine: %w", err)
	}
	defer func() {
		if cerr := b.eng.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("enginebench: close engine: %w", cerr))
		}
	}()
	if err := b.eng.CreateTopic(meta.Topic{Name: b.topic, ReadQueues: o.Queues, WriteQueues: o.Queues, Perm: meta.PermRW}); err != nil {
		return fmt.Errorf("enginebench: create topic: %w", err)
	}

	var phases []func(context.Context) (*Result, error)
	switch o.Mode {
	case ModeAppend:
		phases = []func(context.Context) (*Result, error){b.appendPhase, b.readPhase}
	case ModePull:
		if err := b.preload(ctx); err != nil {
			return err
		}
		phases = []func(context.Context) (*Result, error){b.pullPhase, b.wakeupPull}
	case ModePop:
		if err := b.eng.CreateGroup(meta.Group{Name: b.group}); err != nil {
			return fmt.Errorf("enginebench: create group: %w", err)
		}
		if err := b.preload(ctx); err != nil {
			return err
		}
		phases = []func(context.Context) (*Result, error){b.popPhase, b.wakeupPop}
	case ModeSchedule:
		defer b.stopTimers() // consumers of a run that failed midway
		phases = []func(context.Context) (*Result, error){b.schedulePhase, b.deliverPhase}
	case ModeTxn:
		phases = []func(context.Context) (*Result, error){b.sendPhase, b.txnPhase}
	}
	if o.CPUProfile != "" {
		stop, perr := startCPUProfile(o.CPUProfile)
		if perr != nil {
			return perr
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	for _, phase := range phases {
		res, err := phase(ctx)
		if err != nil {
			return err
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	if o.RawDisk {
		res, err := rawDisk(ctx, dir, o.Count*int64(o.Size))
		if err != nil {
			return err
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return nil
}

// startCPUProfile starts writing a CPU profile to path and returns the
// function that stops it.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("enginebench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("enginebench: cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("enginebench: cpu profile: %w", err)
		}
		return nil
	}, nil
}

// maxMessageSize is the engine's default, raised to fit --size and
// lowered to fit the segment (which must leave 64 KiB for headers).
func maxMessageSize(o Options) int {
	n := max(o.Size, engine.DefaultMaxMessageSize)
	if o.SegmentSize > 0 {
		n = min(n, int(o.SegmentSize-64<<10))
	}
	return max(n, 1)
}

// benchGroup is the consumer group of the pop phases.
const benchGroup = "KarmanBenchGroup"

type bench struct {
	o     Options
	eng   *engine.Engine
	topic string
	group string

	timers   *timerRun // ModeSchedule, from the schedule phase on
	sendRate float64   // ModeTxn: msgs/s of the send phase
}

// summarize fills the throughput and latency figures of r.
func summarize(r *Result, h *latency.Histogram, msgs int64, size int, elapsed, cpu time.Duration) {
	sec := elapsed.Seconds()
	if sec <= 0 {
		sec = 1e-9
	}
	r.Count = msgs
	r.Size = size
	r.Bytes = msgs * int64(size)
	r.MsgsPerSec = round(float64(msgs) / sec)
	r.MBPerSec = round(float64(r.Bytes) / 1e6 / sec)
	r.P50us = round(micros(h.Quantile(0.50)))
	r.P99us = round(micros(h.Quantile(0.99)))
	r.P999us = round(micros(h.Quantile(0.999)))
	r.MaxUs = round(micros(h.Max()))
	r.ElapsedMs = round(float64(elapsed.Microseconds()) / 1e3)
	r.CPUMs = round(float64(cpu.Microseconds()) / 1e3)
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// round keeps two decimals: enough for the figures and short to read.
func round(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 2, 64), 64)
	return v
}

// firstErr keeps the first error of several goroutines and cancels the
// rest.
type firstErr struct {
	once   sync.Once
	err    error
	cancel context.CancelFunc
}

func (f *firstErr) set(err error) {
	f.once.Do(func() {
		f.err = err
		f.cancel()
	})
}
