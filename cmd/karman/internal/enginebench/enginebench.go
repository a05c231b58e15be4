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
	"strconv"
	"sync"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/latency"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
)

// PullBatch is the number of messages each Pull asks for.
const PullBatch = 32

// Options describe one benchmark run.
type Options struct {
	// Size is the body size of every message in bytes.
	Size int
	// Count is the total number of messages sent.
	Count int64
	// Batch is the number of messages per send; above 1, SendBatch is used.
	Batch int
	// Producers is the number of goroutines sending.
	Producers int
	// Readers is the number of goroutines pulling; queues are shared out
	// among them.
	Readers int
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
	// Logger receives the engine's log records.
	Logger *slog.Logger
}

// Validate reports the first option out of range.
func (o *Options) Validate() error {
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
	Flush      string  `json:"flush,omitempty"`
	Bytes      int64   `json:"bytes"`
	ElapsedMs  float64 `json:"elapsed_ms"`
	// DispatchMs is how long, after the last send returned, the engine
	// took to index everything (append phase only).
	DispatchMs *float64 `json:"dispatch_ms,omitempty"`
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
	fmt.Fprintf(info, "flags: size=%d count=%d batch=%d producers=%d readers=%d queues=%d flush=%s segment-size=%d data=%s dd=%t\n",
		o.Size, o.Count, o.Batch, o.Producers, o.Readers, o.Queues, o.Flush, segment, dir, o.RawDisk)

	enc := json.NewEncoder(out)
	b := &bench{o: o, topic: "KarmanBench_" + strconv.FormatInt(time.Now().UnixNano(), 36)}
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

	res, err := b.appendPhase(ctx)
	if err != nil {
		return err
	}
	if err := enc.Encode(res); err != nil {
		return err
	}
	res, err = b.readPhase(ctx)
	if err != nil {
		return err
	}
	if err := enc.Encode(res); err != nil {
		return err
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

// maxMessageSize is the engine's default, raised to fit --size and
// lowered to fit the segment (which must leave 64 KiB for headers).
func maxMessageSize(o Options) int {
	n := max(o.Size, engine.DefaultMaxMessageSize)
	if o.SegmentSize > 0 {
		n = min(n, int(o.SegmentSize-64<<10))
	}
	return max(n, 1)
}

type bench struct {
	o     Options
	eng   *engine.Engine
	topic string
}

// summarize fills the throughput and latency figures of r.
func summarize(r *Result, h *latency.Histogram, msgs int64, size int, elapsed time.Duration) {
	sec := elapsed.Seconds()
	if sec <= 0 {
		sec = 1e-9
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	r.Count = msgs
	r.Size = size
	r.Bytes = msgs * int64(size)
	r.MsgsPerSec = round(float64(msgs) / sec)
	r.MBPerSec = round(float64(r.Bytes) / 1e6 / sec)
	r.P50us = round(us(h.Quantile(0.50)))
	r.P99us = round(us(h.Quantile(0.99)))
	r.P999us = round(us(h.Quantile(0.999)))
	r.MaxUs = round(us(h.Max()))
	r.ElapsedMs = round(float64(elapsed.Microseconds()) / 1e3)
}

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
