package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// karman is the binary under test, built once by TestMain with
// buildFlags.
var (
	karman     string
	buildFlags []string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "karman-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	karman = filepath.Join(dir, "karman")
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", karman, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build karman:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// command returns karman args... with a clean environment plus env.
func command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, karman, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KARMAN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs karman to completion and returns its outputs and exit code.
func run(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command(ctx, env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("karman %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// loopbackAddrs gives every front-end of serve a loopback port chosen at
// run time, so tests never collide with a server on the default ports.
var loopbackAddrs = []string{"--http-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
	"--mqtt-addr", "127.0.0.1:0", "--mqtt-ws-addr", "127.0.0.1:0", "--mqtt-tls-addr", "127.0.0.1:0"}

func TestServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := command(ctx, nil, append([]string{"serve", "--data", t.TempDir()}, loopbackAddrs...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	// Wait for the announcements: the bound address, then readiness.
	var addr string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		if a, ok := strings.CutPrefix(line, "karman: http listening on "); ok {
			addr = a
		}
		if line == "karman: ready" {
			break
		}
	}
	if addr == "" {
		cmd.Wait()
		t.Fatalf("serve did not announce its HTTP address and readiness\nstderr:\n%s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)

	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "{\"status\":\"ok\"}\n" {
		t.Errorf("/healthz = %d %q, want 200 {\"status\":\"ok\"}", resp.StatusCode, body)
	}

	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{
		"karman_engine_up 1",
		"karman_append_duration_seconds_bucket",
		"karman_disk_bytes",
		"karman_commitlog_end_offset_bytes",
		"karman_build_info",
		"go_goroutines",
		"process_cpu_seconds_total",
	} {
		if !bytes.Contains(body, []byte(name)) {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	began := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\nstderr:\n%s", err, stderr.String())
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("serve took %v to stop", took)
	}
	if !strings.Contains(stderr.String(), "engine closed") {
		t.Errorf("no graceful shutdown logged:\n%s", stderr.String())
	}
}

func TestServePortTaken(t *testing.T) {
	// The first server holds the port; a second one on it must fail cleanly.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := command(ctx, nil, append([]string{"serve", "--data", t.TempDir()}, loopbackAddrs...)...)
	stdout, _ := first.StdoutPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		first.Process.Signal(syscall.SIGTERM)
		first.Wait()
	}()
	var addr string
	lines := bufio.NewScanner(stdout)
	for addr == "" && lines.Scan() {
		addr, _ = strings.CutPrefix(lines.Text(), "karman: http listening on ")
	}
	go io.Copy(io.Discard, stdout)

	args := append([]string{"serve", "--data", t.TempDir()}, loopbackAddrs...)
	_, stderr, code := run(t, nil, append(args, "--http-addr", addr)...)
	if code != 1 || !strings.Contains(stderr, "http listener") {
		t.Errorf("second serve on %s: exit %d, stderr %q", addr, code, stderr)
	}
}

// A listener that cannot be bound fails the start, naming the listener,
// before any listener is announced.
func TestServeBadAddress(t *testing.T) {
	args := append([]string{"serve", "--data", t.TempDir()}, loopbackAddrs...)
	stdout, stderr, code := run(t, nil, append(args, "--broker-addr", "127.0.0.1:no-such-port")...)
	if code != 1 || !strings.Contains(stderr, "broker listener") {
		t.Errorf("serve with a bad broker address: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stdout, "listening") {
		t.Errorf("listeners announced before the start failed:\n%s", stdout)
	}
}

// serve takes the names RocketMQ deployments give the replication
// settings: each reaches the module flag it stands for, whose check then
// names it.
func TestServeTakesRocketMQFlagNames(t *testing.T) {
	args := append([]string{"serve", "--data", t.TempDir()}, loopbackAddrs...)
	master := []string{"--ha-role", "master", "--ha-addr", "127.0.0.1:0"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(master, "--replication", "eventually"), `--ha-replication "eventually"`},
		{append(master, "--min-insync-replicas", "0"), "--ha-min-insync-replicas 0"},
		{[]string{"--controller-addrs", "127.0.0.1:1"}, "--ha-controller needs --ha-broker-id"},
	} {
		_, stderr, code := run(t, nil, append(slices.Clone(args), c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "unknown flag") {
			t.Errorf("serve %v: exit %d, stderr %q; want the module's refusal naming %s", c.args, code, stderr, c.want)
		}
	}
}

func TestBenchEngine(t *testing.T) {
	stdout, stderr, code := run(t, nil, "bench", "engine", "--count", "20000", "--size", "256", "--segment-size", "64MiB")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines on stdout, want 2:\n%s", len(lines), stdout)
	}
	for i, phase := range []string{"append", "read"} {
		var r struct {
			Phase      string  `json:"phase"`
			MsgsPerSec float64 `json:"msgs_per_sec"`
			MBPerSec   float64 `json:"mb_per_sec"`
			P50        float64 `json:"p50_us"`
			P99        float64 `json:"p99_us"`
			Count      int64   `json:"count"`
			Size       int     `json:"size"`
			Batch      int     `json:"batch"`
			Flush      string  `json:"flush"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, lines[i])
		}
		if r.Phase != phase || r.Count != 20000 || r.Size != 256 || r.Flush != "async" {
			t.Errorf("line %d: %+v", i+1, r)
		}
		if r.MsgsPerSec <= 0 || r.MBPerSec <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("line %d has non-positive or inconsistent figures: %s", i+1, lines[i])
		}
	}
	for _, want := range []string{"goos=", "cpus=", "go=go", "count=20000"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestBenchEngineBatchProducersDD(t *testing.T) {
	data := t.TempDir()
	stdout, stderr, code := run(t, nil, "bench", "engine", "--count", "10000", "--size", "1KiB", "--batch", "32",
		"--producers", "4", "--readers", "2", "--flush", "sync", "--dd", "--data", data, "--segment-size", "64MiB")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), stdout)
	}
	var raw struct {
		Phase    string  `json:"phase"`
		MBPerSec float64 `json:"mb_per_sec"`
		Bytes    int64   `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &raw); err != nil || raw.Phase != "raw_disk" || raw.MBPerSec <= 0 || raw.Bytes != 10000*1024 {
		t.Errorf("raw disk line %q: %+v %v", lines[2], raw, err)
	}
	if !strings.Contains(lines[0], `"batch":32`) || !strings.Contains(lines[0], `"producers":4`) || !strings.Contains(lines[0], `"flush":"sync"`) {
		t.Errorf("append line does not echo the flags: %s", lines[0])
	}
	if _, err := os.Stat(filepath.Join(data, "raw-disk.bench")); !os.IsNotExist(err) {
		t.Errorf("raw disk file left behind: %v", err)
	}
}

func TestConfigPrecedence(t *testing.T) {
	env := []string{"KARMAN_DATA=/from/env", "KARMAN_HTTP_ADDR=:9999", "KARMAN_FLUSH=sync"}
	stdout, stderr, code := run(t, env, "config", "print", "--data", "/from/flag")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(stdout), &cfg); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	for k, want := range map[string]any{
		"data":               "/from/flag", // flag beats env
		"http-addr":          ":9999",      // env beats default
		"flush":              "sync",
		"segment-size":       float64(1 << 30), // default
		"auto-create-topics": true,
	} {
		if cfg[k] != want {
			t.Errorf("%s = %#v, want %#v", k, cfg[k], want)
		}
	}

	stdout, _, code = run(t, env, "config", "print", "--format", "kv")
	if code != 0 || !strings.Contains(stdout, "data=/from/env\n") || !strings.Contains(stdout, "http-addr=:9999\n") {
		t.Errorf("kv: exit %d\n%s", code, stdout)
	}
}

// TestUnknownEnv checks that a KARMAN_ variable naming no flag is
// ignored with a warning that names the flag it looks like.
func TestUnknownEnv(t *testing.T) {
	env := []string{"KARMAN_DATTA=/x", "KARMAN_PORT=tcp://10.0.0.7:9876"}
	stdout, stderr, code := run(t, env, "config", "print")
	if code != 0 || !strings.Contains(stderr, "KARMAN_DATTA names no flag and is ignored; did you mean KARMAN_DATA (--data)?") || !strings.Contains(stdout, `"data": "./data"`) {
		t.Errorf("config print with KARMAN_DATTA: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if strings.Contains(stderr, "KARMAN_PORT") {
		t.Errorf("a Kubernetes service link was warned about: %q", stderr)
	}
	// serve logs the warning before it checks its flags.
	_, stderr, code = run(t, env, "serve", "--http-addr", "127.0.0.1:0", "--default-queues", "0")
	if code != 1 || !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "did you mean KARMAN_DATA") {
		t.Errorf("serve with KARMAN_DATTA: exit %d, stderr %q", code, stderr)
	}
}

func TestBadInvocations(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--nope"}, "unknown flag: --nope"},
		{[]string{"serve", "--flush", "weird"}, "flush"},
		{[]string{"serve", "--segment-size", "big"}, "segment-size"},
		{[]string{"serve", "--http-addr", "8080"}, "http-addr"},
		{[]string{"serve", "--segment-size", "0"}, "--segment-size 0 must be"},
		{[]string{"serve", "--segment-size", "100GiB"}, "--segment-size 100GiB must be"},
		{[]string{"serve", "--default-queues", "0"}, "--default-queues 0 must be"},
		{[]string{"serve", "--max-message-size", "0"}, "--max-message-size 0 must be positive"},
		{[]string{"serve", "--retention-disk-ratio", "0"}, "--retention-disk-ratio 0 must be"},
		{[]string{"serve", "--max-message-size", "20MiB", "--segment-size", "64MiB"}, "more than the broker front-end can carry"},
		{[]string{"serve", "extra-arg"}, "unknown command"},
		{[]string{"bench", "engine", "--count", "abc"}, "count"},
		{[]string{"bench", "engine", "--batch", "0"}, "batch"},
		{[]string{"bench", "engine", "--producers", "-1"}, "producers"},
		{[]string{"bench", "engine", "--flush", "never"}, "flush"},
		{[]string{"config", "print", "--format", "xml"}, "format"},
		{[]string{"nosuchcommand"}, "unknown command"},
	} {
		stdout, stderr, code := run(t, nil, tc.args...)
		if code != 1 || !strings.Contains(stderr, "Error:") || !strings.Contains(stderr, tc.want) {
			t.Errorf("karman %v: exit %d, stderr %q; want exit 1 and an error about %q", tc.args, code, stderr, tc.want)
		}
		if strings.Contains(stdout, "listening") {
			t.Errorf("karman %v bound a listener before refusing its configuration:\n%s", tc.args, stdout)
		}
		if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
			t.Errorf("karman %v panicked:\n%s", tc.args, stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	stdout, _, code := run(t, nil, "version")
	if code != 0 || !strings.HasPrefix(stdout, "karman ") || !strings.Contains(stdout, "go1") {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
}
