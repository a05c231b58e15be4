package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/bench"
)

// peerModules are modules only karman-bench may link: the peer brokers'
// code and the load generators' clients.
var peerModules = []string{
	"github.com/nats-io/nats-server/v2",
	"github.com/nats-io/nats.go",
	"github.com/apache/rocketmq-client-go/v2",
}

// linkedModules returns the modules "go version -m" lists for the binary
// at path.
func linkedModules(t *testing.T, path string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", path).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", path, err)
	}
	mods := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "mod" || f[0] == "dep") {
			mods[f[1]] = true
		}
	}
	return mods
}

// The server binary built by default links none of the peers' code; the
// benchmark binary does.
func TestNoPeersLinked(t *testing.T) {
	mods := linkedModules(t, karman)
	if !mods["github.com/karmanmq/karman/engine"] {
		t.Fatalf("go version -m lists no engine module; modules: %v", mods)
	}
	for _, m := range peerModules {
		if mods[m] {
			t.Errorf("karman links %s", m)
		}
	}
	mods = linkedModules(t, benchProgram(t))
	for _, m := range peerModules {
		if !mods[m] {
			t.Errorf("karman-bench does not link %s", m)
		}
	}
}

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

// benchProgram builds karman-bench beside the karman under test, once,
// with the same flags, and returns its path.
func benchProgram(t *testing.T) string {
	t.Helper()
	benchOnce.Do(func() {
		path := filepath.Join(filepath.Dir(karman), "karman-bench")
		build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", path, "./karman-bench")...)
		if out, err := build.CombinedOutput(); err != nil {
			benchErr = errors.New("build karman-bench: " + err.Error() + "\n" + string(out))
			return
		}
		benchPath = path
	})
	if benchErr != nil {
		t.Fatal(benchErr)
	}
	return benchPath
}

// TestBenchProduceExec runs "karman bench produce" through karman-bench
// beside karman.
func TestBenchProduceExec(t *testing.T) {
	benchProgram(t)
	stdout, stderr, code := run(t, nil, "bench", "produce", "--count", "400", "--producers", "2", "--size", "512",
		"--peer", "nats", "--json", "--data", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per system, got:\n%s", stdout)
	}
	for i, system := range []string{"karman", "nats"} {
		var r bench.Result
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatalf("%v: %s", err, lines[i])
		}
		if r.System != system || r.Phase != bench.PhaseProduce || r.Count != 400 || r.Size != 512 || r.Producers != 2 || r.MsgsPerSec <= 0 || r.P99us <= 0 {
			t.Errorf("line %d: %s", i, lines[i])
		}
	}
	for _, s := range []string{"machine: ", "flags: ", "--count=400", "karman: in process", "nats: in process"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, stderr)
		}
	}
}

// Help and errors come from karman-bench in karman's words, with its exit
// status.
func TestBenchExecHelpAndErrors(t *testing.T) {
	benchProgram(t)
	stdout, stderr, code := run(t, nil, "bench", "produce", "--help")
	if code != 0 || !strings.Contains(stdout, "karman bench produce [flags]") || !strings.Contains(stdout, "--peer") {
		t.Errorf("bench produce --help: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "produce", "--protocol", "kafka"}, `--protocol "kafka"`},
		{[]string{"bench", "consume", "--no-such-flag"}, "Run 'karman bench consume --help' for usage."},
	} {
		_, stderr, code := run(t, nil, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// SIGINT sent to karman reaches karman-bench, which stops the run,
// shuts its in-process Karman down and removes its temporary data.
func TestBenchExecSignal(t *testing.T) {
	benchProgram(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := command(ctx, nil, "bench", "produce", "--count", "100000000", "--size", "64")
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	var data string
	lines := bufio.NewScanner(stderr)
	var seen []string
	for data == "" && lines.Scan() {
		seen = append(seen, lines.Text())
		if _, rest, ok := strings.Cut(lines.Text(), "karman: in process, "); ok {
			_, after, _ := strings.Cut(rest, ", data ")
			data, _, _ = strings.Cut(after, ", flush ")
		}
	}
	if data == "" {
		t.Fatalf("no in-process Karman announced:\n%s", strings.Join(seen, "\n"))
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("data directory: %v", err)
	}
	go io.Copy(io.Discard, stderr)

	began := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		// A process the signal killed has no exit code (-1).
		t.Fatalf("after SIGINT: %v, want exit status 1 from the interrupted run", err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("took %v to stop", took)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("temporary data %s left behind: %v", data, err)
	}
}
