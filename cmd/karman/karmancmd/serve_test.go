package karmancmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/server"
	"github.com/prometheus/client_golang/prometheus"
)

// echo is a test double for a protocol front-end module: it echoes every
// byte back and records how serve drove it.
type echo struct {
	info     server.ModuleInfo
	mu       sync.Mutex
	host     server.Host
	started  int
	stopped  int
	deadline bool
	wg       sync.WaitGroup
	failWith error
}

var (
	_ server.Starter = (*echo)(nil)
	_ server.Stopper = (*echo)(nil)
)

func (e *echo) KarmanModule() server.ModuleInfo { return e.info }

// register adds e to reg as module test.<name> listening on addr.
func (e *echo) register(reg *server.Registry, name, addr string) {
	e.info = server.ModuleInfo{ID: server.ModuleID("test." + name), Name: name, DefaultAddr: addr,
		Usage: name + " test listen address", New: func() server.Module { return e }}
	reg.Register(e.info)
}

func (e *echo) Start(_ context.Context, h server.Host) error {
	if e.failWith != nil {
		return e.failWith
	}
	e.mu.Lock()
	e.host = h
	e.started++
	e.mu.Unlock()
	served := prometheus.NewCounter(prometheus.CounterOpts{Name: "karman_echo_connections_total", Help: "Connections echoed."})
	h.Metrics.MustRegister(served)
	e.wg.Go(func() {
		for {
			c, err := h.Listener.Accept()
			if err != nil {
				return
			}
			served.Inc()
			e.wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
			})
		}
	})
	return nil
}

func (e *echo) Stop(ctx context.Context) error {
	_, ok := ctx.Deadline()
	e.mu.Lock()
	e.stopped++
	e.deadline = ok
	h := e.host
	e.mu.Unlock()
	err := h.Listener.Close()
	e.wg.Wait()
	return err
}

// running is a serve command started in-process.
type running struct {
	lines  chan string
	done   chan error
	cancel context.CancelFunc
	addrs  map[string]string
}

// startServe runs "karman serve args..." with reg until it announces it is
// ready, and returns the bound addresses it announced.
func startServe(t *testing.T, reg *server.Registry, args ...string) *running {
	t.Helper()
	return startCommand(t, reg, append([]string{"serve"}, args...)...)
}

// startCommand runs "karman args..." with reg until it announces it is
// ready, and returns the bound addresses it announced.
func startCommand(t *testing.T, reg *server.Registry, args ...string) *running {
	t.Helper()
	root := New(reg)
	pr, pw := io.Pipe()
	root.SetOut(pw)
	var stderr strings.Builder
	root.SetErr(&lockedWriter{w: &stderr})
	root.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{lines: make(chan string, 16), done: make(chan error, 1), cancel: cancel, addrs: map[string]string{}}
	go func() {
		err := root.ExecuteContext(ctx)
		pw.Close()
		r.done <- err
	}()
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			r.lines <- s.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			t.Errorf("%s did not stop", args[0])
		}
	})
	for line := range r.lines {
		if name, addr, ok := strings.Cut(strings.TrimPrefix(line, "karman: "), " listening on "); ok {
			r.addrs[name] = addr
		}
		if line == "karman: ready" {
			return r
		}
	}
	t.Fatalf("%s ended before it was ready: %v\n%s", args[0], <-r.done, stderr.String())
	return nil
}

// stop cancels the serve context and returns its result.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for Cleanup
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20s")
		return nil
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestServeStartsRegisteredFrontend(t *testing.T) {
	fake := &echo{}
	reg := &server.Registry{}
	fake.register(reg, "echo", ":0")

	var help strings.Builder
	root := New(reg)
	root.SetOut(&help)
	root.SetArgs([]string{"serve", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help.String(), "--echo-addr") {
		t.Fatalf("serve --help lacks --echo-addr:\n%s", help.String())
	}

	data := t.TempDir()
	r := startServe(t, reg, "--data", data, "--http-addr", "127.0.0.1:0", "--echo-addr", "127.0.0.1:0", "--log-level", "warn")

	fake.mu.Lock()
	h, started := fake.host, fake.started
	fake.mu.Unlock()
	if started != 1 || h.Engine == nil || h.Logger == nil || h.Metrics == nil {
		t.Fatalf("front-end started %d times with host %+v", started, h)
	}
	if h.Addrs["echo"].String() != r.addrs["echo"] || h.Addrs["http"].String() != r.addrs["http"] {
		t.Errorf("host addrs %v, announced %v", h.Addrs, r.addrs)
	}

	c, err := net.DialTimeout("tcp", r.addrs["echo"], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(c, "hello\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || line != "hello\n" {
		t.Fatalf("echo answered %q, %v", line, err)
	}

	code, body := get(t, "http://"+r.addrs["http"]+"/healthz")
	if code != http.StatusOK || body != "{\"status\":\"ok\"}\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	_, body = get(t, "http://"+r.addrs["http"]+"/metrics")
	for _, want := range []string{"karman_echo_connections_total 1", "karman_engine_up 1", "karman_append_duration_seconds_count"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	if err := r.stop(t); err != nil {
		t.Fatalf("serve returned %v after cancel", err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.stopped != 1 || !fake.deadline {
		t.Errorf("front-end stopped %d times (with deadline %t), want once with a deadline", fake.stopped, fake.deadline)
	}
	// The engine was closed: the data directory opens again.
	e, err := engine.Open(data, nil)
	if err != nil {
		t.Fatalf("reopen after serve: %v", err)
	}
	e.Close()
}

func TestServeFrontendOff(t *testing.T) {
	fake := &echo{}
	reg := &server.Registry{}
	fake.register(reg, "echo", "127.0.0.1:0")
	r := startServe(t, reg, "--data", t.TempDir(), "--http-addr", "off", "--echo-addr", "off")
	if len(r.addrs) != 0 {
		t.Errorf("listeners announced with every address off: %v", r.addrs)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if fake.started != 0 {
		t.Error("front-end started although its address is off")
	}
}

func TestServeFrontendStartFails(t *testing.T) {
	reg := &server.Registry{}
	(&echo{failWith: errors.New("no luck")}).register(reg, "broken", "127.0.0.1:0")
	data := t.TempDir()
	root := New(reg)
	var out, errOut strings.Builder
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"serve", "--data", data, "--http-addr", "127.0.0.1:0"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "no luck") {
		t.Fatalf("serve returned %v, want the front-end's start error", err)
	}
	e, err := engine.Open(data, nil)
	if err != nil {
		t.Fatalf("reopen after failed start: %v", err)
	}
	e.Close()
}
