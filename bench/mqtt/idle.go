package mqtt

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"golang.org/x/sync/errgroup"
)

// IdleWorker is the work of one idle-connection process.
type IdleWorker struct {
	Addr    string
	Count   int
	LocalIP string // source address, 127.0.0.x
	Version byte
	Prefix  string // client id prefix
}

// idleReport is the line a worker prints once every connection is up.
type idleReport struct {
	Connected int      `json:"connected"`
	Micros    []uint32 `json:"micros"` // CONNECT to CONNACK of each
	Error     string   `json:"error,omitempty"`
}

// RunIdleWorker opens w.Count connections (64 dialing at a time), prints
// one JSON report line to out, then holds them until in reaches EOF (the
// parent closing the pipe or dying), and closes them.
func RunIdleWorker(ctx context.Context, w IdleWorker, in io.Reader, out io.Writer) error {
	ip := net.ParseIP(w.LocalIP)
	if w.LocalIP != "" && ip == nil {
		return fmt.Errorf("bench mqtt: bad source address %q", w.LocalIP)
	}
	conns := make([]*Conn, w.Count)
	micros := make([]uint32, w.Count)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range conns {
		g.Go(func() error {
			dctx, cancel := context.WithTimeout(gctx, 30*time.Second)
			defer cancel()
			t0 := time.Now()
			c, err := Dial(dctx, w.Addr, DialOptions{ClientID: fmt.Sprintf("%s-%d", w.Prefix, i), Version: w.Version,
				KeepAlive: 600, LocalIP: ip})
			if err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
			micros[i] = uint32(min(time.Since(t0).Microseconds(), 1<<32-1))
			conns[i] = c
			return nil
		})
	}
	rep := idleReport{Connected: w.Count, Micros: micros}
	err := g.Wait()
	if err != nil {
		rep = idleReport{Error: err.Error()}
	}
	b, _ := json.Marshal(rep)
	if _, werr := out.Write(append(b, '\n')); werr != nil && err == nil {
		err = werr
	}
	if err == nil {
		_, _ = io.Copy(io.Discard, in)
	}
	for _, c := range conns {
		if c != nil {
			c.nc.Close()
		}
	}
	return err
}

// Idle opens o.Connections idle connections to t from worker processes of
// at most o.PerProcess connections each, worker i using source address
// 127.0.0.(i+2). command returns the command that runs RunIdleWorker for
// a worker (this program re-executed). msgs_per_sec is connections
// established per second, p50/p99 the CONNECT-to-CONNACK time, rss_mb the
// broker's with every connection open.
func Idle(ctx context.Context, t Target, o Options, command func(IdleWorker) *exec.Cmd) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	workers := (o.Connections + o.PerProcess - 1) / o.PerProcess
	if workers > 250 {
		return Result{}, fmt.Errorf("bench mqtt: %d worker processes: lower --connections or raise the per-process limit", workers)
	}
	type running struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	var procs []running
	defer func() {
		for _, p := range procs {
			p.stdin.Close()
		}
		for _, p := range procs {
			p.cmd.Wait()
		}
	}()
	start := time.Now()
	left := o.Connections
	for i := 0; i < workers; i++ {
		n := min(left, o.PerProcess)
		left -= n
		cmd := command(IdleWorker{Addr: t.Addr, Count: n, LocalIP: fmt.Sprintf("127.0.0.%d", i+2), Version: o.Version,
			Prefix: fmt.Sprintf("kb-idle-%d-%d", os.Getpid(), i)})
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return Result{}, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return Result{}, err
		}
		if err := cmd.Start(); err != nil {
			return Result{}, fmt.Errorf("bench mqtt: idle worker: %w", err)
		}
		procs = append(procs, running{cmd, stdin, bufio.NewReader(stdout)})
	}
	var (
		mu   sync.Mutex
		h    latency.Histogram
		last time.Time
	)
	g, _ := errgroup.WithContext(ctx)
	for i, p := range procs {
		g.Go(func() error {
			line, err := p.out.ReadBytes('\n')
			if err != nil {
				return fmt.Errorf("bench mqtt: idle worker %d: %w", i, err)
			}
			var rep idleReport
			if err := json.Unmarshal(line, &rep); err != nil {
				return fmt.Errorf("bench mqtt: idle worker %d: %w", i, err)
			}
			if rep.Error != "" {
				return fmt.Errorf("bench mqtt: idle worker %d: %s", i, rep.Error)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, us := range rep.Micros {
				h.Record(time.Duration(us) * time.Microsecond)
			}
			last = time.Now()
			return nil
		})
	}
	// A worker that hangs is ended by the context: kill them all then.
	waitErr := make(chan error, 1)
	go func() { waitErr <- g.Wait() }()
	var err error
	select {
	case err = <-waitErr:
	case <-ctx.Done():
		for _, p := range procs {
			p.cmd.Process.Kill()
		}
		err = fmt.Errorf("bench mqtt: idle connections: %w", ctx.Err())
	}
	if err != nil {
		return Result{}, err
	}
	elapsed := last.Sub(start)
	r := Result{System: t.System, Phase: PhaseIdle, Connections: o.Connections, Delivered: int64(o.Connections),
		Version: o.Version, ElapsedMs: round(elapsed.Seconds()*1e3, 1), RSSMB: RSSMB(t.PID),
		P50us: round(float64(h.Quantile(0.50))/1e3, 1), P99us: round(float64(h.Quantile(0.99))/1e3, 1)}
	if s := elapsed.Seconds(); s > 0 {
		r.MsgsPerSec = float64(int64(float64(o.Connections) / s))
	}
	return r, nil
}
