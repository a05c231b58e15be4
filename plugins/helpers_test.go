package plugins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// bin holds the plugin programs the tests run, built on first use.
var (
	bin      string
	buildErr error
	build    sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if bin != "" {
		os.RemoveAll(bin)
	}
	os.Exit(code)
}

// program returns the path of a built plugin program, building the
// programs the first time.
func program(name string) string {
	build.Do(func() {
		dir, err := os.MkdirTemp("", "karman-plugins-test")
		if err != nil {
			buildErr = err
			return
		}
		bin = dir
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
			"./examples/webhook", "./examples/filesource", "./examples/headerauth", "./internal/testplugin")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the plugins: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		panic(buildErr)
	}
	return filepath.Join(bin, name)
}

// load loads a plugin and closes it at the end of the test.
func load(t testing.TB, spec string, opts Options) *Plugin {
	t.Helper()
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(context.Background(), sp, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// openEngine opens an engine in dir with hooks and topic T (one queue).
func openEngine(t testing.TB, dir string, hooks []any) *engine.Engine {
	t.Helper()
	e, err := engine.Open(dir, &engine.Options{Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, _, err := e.EnsureTopic(meta.Topic{Name: "T", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	return e
}

// msg returns a message to T with the given properties (name, value…).
func msg(body string, props ...string) *message.Message {
	m := &message.Message{Topic: "T", Body: []byte(body)}
	for i := 0; i+1 < len(props); i += 2 {
		m.SetProperty(props[i], props[i+1])
	}
	return m
}

// pullAll returns the messages of T's queue 0 from offset 0.
func pullAll(t testing.TB, e *engine.Engine) []*message.Message {
	t.Helper()
	if err := e.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := e.Pull(context.Background(), "T", 0, 0, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []*message.Message
	for _, r := range res.Records {
		m, _, err := message.DecodeStored(r)
		if err != nil {
			t.Fatal(err)
		}
		m.Body = append([]byte(nil), m.Body...)
		m.LoadProperties()
		out = append(out, m)
	}
	return out
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func killPID(pid int) error {
	if pid == 0 {
		return errors.New("no plugin process")
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// testLogger logs to the test's log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
