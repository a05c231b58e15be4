package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Generator drives one system through one client.
type Generator interface {
	// Produce sends w.Count messages from w.Producers producers, each
	// with w.Inflight sends outstanding, and measures it.
	Produce(ctx context.Context, w Workload) (Measurement, error)
	// Consume pre-loads w.Count messages (not measured), then pulls them
	// all, w.Batch per request, and measures the pulling.
	Consume(ctx context.Context, w Workload) (Measurement, error)
}

// Target is one column of the comparison.
type Target struct {
	// System is the server measured: "karman" or "nats".
	System string
	// Client names the client library driving it.
	Client string
	// Protocol is what the client speaks: "remoting", "grpc", "nats".
	Protocol string
	// Generator does the work.
	Generator Generator
}

// Run makes every target do w in mode, one after the other, and hands
// each Result to out as soon as it is known. It stops at the first error.
func Run(ctx context.Context, mode Mode, w Workload, targets []Target, out *Printer) error {
	w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return err
	}
	for _, t := range targets {
		var (
			m     Measurement
			err   error
			phase Phase
		)
		switch mode {
		case ModeProduce:
			phase = w.ProducePhase()
			m, err = t.Generator.Produce(ctx, w)
		case ModeConsume:
			phase = PhaseConsume
			m, err = t.Generator.Consume(ctx, w)
		default:
			return fmt.Errorf("bench: unknown mode %q", mode)
		}
		if err != nil {
			return fmt.Errorf("bench: %s %s: %w", t.System, phase, err)
		}
		r := w.Result(phase, m)
		r.System, r.Client, r.Protocol = t.System, t.Client, t.Protocol
		if err := out.Print(r); err != nil {
			return err
		}
		// Leave the next system a clean heap.
		runtime.GC()
	}
	return nil
}

// Printer writes Results as JSON lines or as the rows of a table.
type Printer struct {
	w      io.Writer
	json   bool
	header bool
}

// NewPrinter returns a Printer to w: JSON lines when asJSON, otherwise a
// table with fixed-width columns, its header before the first row.
func NewPrinter(w io.Writer, asJSON bool) *Printer { return &Printer{w: w, json: asJSON} }

const tableRow = "%-11s %-13s %12s %9s %10s %10s %10s %10s %6s %9s %8s %-8s %-8s\n"

// Print writes one Result.
func (p *Printer) Print(r Result) error {
	if p.json {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		_, err = p.w.Write(append(b, '\n'))
		return err
	}
	if !p.header {
		p.header = true
		if _, err := fmt.Fprintf(p.w, tableRow, "system", "phase", "msgs/s", "MB/s", "p50 us", "p99 us", "p999 us", "count", "size", "producers", "inflight", "client", "protocol"); err != nil {
			return err
		}
	}
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	_, err := fmt.Fprintf(p.w, tableRow, r.System, r.Phase, fmt.Sprintf("%.0f", r.MsgsPerSec), f(r.MBPerSec),
		f(r.P50us), f(r.P99us), f(r.P999us), fmt.Sprint(r.Count), fmt.Sprint(r.Size), fmt.Sprint(r.Producers),
		fmt.Sprint(r.Inflight), r.Client, r.Protocol)
	return err
}

// WriteMachine writes the machine, the Go version and the given flags
// to w (standard error, so standard output stays machine-readable).
func WriteMachine(w io.Writer, flags string) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs (GOMAXPROCS %d)%s, host %s\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuModel(), host)
	fmt.Fprintf(w, "go: %s", runtime.Version())
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				fmt.Fprintf(w, ", commit %s", s.Value)
			}
		}
	}
	fmt.Fprintf(w, "\nflags: %s\nstarted: %s\n", flags, time.Now().Format(time.RFC3339))
}

// cpuModel returns ", <model name>" from /proc/cpuinfo, or "".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return ", " + strings.TrimSpace(v)
		}
	}
	return ""
}
