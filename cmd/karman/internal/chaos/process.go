package chaos

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startTimeout bounds a process's start, up to "karman: ready".
const startTimeout = 60 * time.Second

// proc is one karman process of the cluster, started again with the same
// arguments after a kill.
type proc struct {
	name string // node name: c1, a1, ...
	bin  string
	args []string
	net  *network

	mu      sync.Mutex
	pid     int
	running bool
	exited  chan struct{}
	stderr  *tailBuffer
	addrs   map[string]string // announced listeners by name
}

// start runs the process and waits for "karman: ready".
func (p *proc) start(ctx context.Context) error {
	cmd := p.net.command(context.WithoutCancel(ctx), p.name, p.bin, p.args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KARMAN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// A group of its own: a kill of the group takes whatever it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr := &tailBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("chaos: %s: %w", p.name, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.pid, p.running, p.exited, p.stderr = cmd.Process.Pid, true, exited, stderr
	p.mu.Unlock()

	ready := make(chan map[string]string, 1)
	go func() {
		addrs := map[string]string{}
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			line := strings.TrimPrefix(lines.Text(), "karman: ")
			if name, addr, ok := strings.Cut(line, " listening on "); ok {
				addrs[name] = addr
			}
			if line == "ready" {
				ready <- addrs
				break
			}
		}
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		p.mu.Lock()
		p.running = false
		p.mu.Unlock()
		close(exited)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case addrs := <-ready:
		p.mu.Lock()
		p.addrs = addrs
		p.mu.Unlock()
		return nil
	case <-exited:
		return fmt.Errorf("chaos: %s exited before it was ready:\n%s", p.name, stderr.String())
	case <-timer.C:
	case <-ctx.Done():
		p.kill()
		return fmt.Errorf("chaos: start %s: %w", p.name, context.Cause(ctx))
	}
	p.kill()
	return fmt.Errorf("chaos: %s not ready within %s:\n%s", p.name, startTimeout, stderr.String())
}

// signal sends sig to the process (not its group).
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	pid, running := p.pid, p.running
	p.mu.Unlock()
	if !running {
		return fmt.Errorf("chaos: %s is not running", p.name)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("chaos: signal %s to %s: %w", sig, p.name, err)
	}
	return nil
}

// kill ends the process group with SIGKILL and waits for the process.
func (p *proc) kill() {
	p.mu.Lock()
	pid, running, exited := p.pid, p.running, p.exited
	p.mu.Unlock()
	if exited == nil {
		return
	}
	if running {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	<-exited
}

// isRunning reports whether the process runs.
func (p *proc) isRunning() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// log returns the tail of the process's standard error.
func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stderr == nil {
		return ""
	}
	return p.stderr.String()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(b)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// errNotReady is a poll's condition not yet met.
var errNotReady = errors.New("chaos: not yet")

// poll calls cond every interval until it returns nil, the timeout passes
// or ctx ends; it returns cond's last error on a timeout.
func poll(ctx context.Context, what string, timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: %s: not within %s: %w", what, timeout, err)
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("chaos: %s: %w", what, context.Cause(ctx))
		case <-t.C:
		}
	}
}
