//go:build !race && unix

package compat

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// binaryEnv names a karman binary for the tests to run instead of
// building one (the race-mode driver passes a race-built binary).
const binaryEnv = "KARMAN_COMPAT_BINARY"

// built is the binary the tests built, once per run, when binaryEnv names
// none.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// karmanBinary returns the karman binary under test, building it when
// binaryEnv does not name one.
func karmanBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(binaryEnv); bin != "" {
		return bin
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "karman-compat-bin-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "karman")
		out, err := exec.Command("go", "build", "-o", built.path, "../..").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("build karman: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// removeBuiltBinary deletes the binary karmanBinary built, if any.
func removeBuiltBinary() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// karmanProcess is the karman binary running "serve" as a child process.
type karmanProcess struct {
	*karman
	cmd    *exec.Cmd
	stderr *lockedBuffer
	cancel context.CancelFunc
}

// startBinary runs "karman serve" with a fresh data directory and every
// listener on a loopback port, and waits until it is ready. The process
// is killed when the test ends unless stop ended it first.
func startBinary(t *testing.T, args ...string) *karmanProcess {
	t.Helper()
	bin := karmanBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	args = slices.Concat([]string{"serve", "--data", t.TempDir(), "--segment-size", "64MiB"}, listenArgs, args)
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KARMAN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &karmanProcess{karman: &karman{t: t}, cmd: cmd, stderr: &lockedBuffer{}, cancel: cancel}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait() // gone, its files closed, before earlier clean-ups (an unmount) run; an error if stop waited already
		cancel()
	})
	started := p.readAnnouncements(stdout)
	go io.Copy(io.Discard, stdout)
	if !started {
		t.Fatalf("karman did not start\nstderr:\n%s", p.stderr.String())
	}
	admin, err := peer.Dial(ctx, p.broker, peer.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	p.admin = admin
	return p
}

// stop shuts the process down with SIGTERM and fails the test unless it
// exits cleanly, without a race report (when it was built with the race
// detector).
func (p *karmanProcess) stop() {
	p.t.Helper()
	p.admin.Close()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("karman exited with %v\nstderr:\n%s", err, p.stderr.String())
	}
	if strings.Contains(p.stderr.String(), "DATA RACE") {
		p.t.Fatalf("race detected in karman:\n%s", p.stderr.String())
	}
}

// The real binary, started as a user would: a producer and a push
// consumer of the Go client work against it, and it stops cleanly (with
// no race report when it was built with the race detector).
func TestBinary(t *testing.T) {
	k := startBinary(t)
	const topic, group, n = "BinaryTopic", "binary", 20
	p := k.producer()
	for i := range n {
		p.send(primitive.NewMessage(topic, []byte("bin-"+strconv.Itoa(i))).WithKeys([]string{"bin-key"}))
	}
	got := newReceived()
	c := k.pushConsumer(group, topic, "*", func(msgs ...*primitive.MessageExt) consumer.ConsumeResult {
		got.add(msgs...)
		return consumer.ConsumeSuccess
	})
	got.waitFor(t, "every message", time.Minute, func() bool { return got.distinct() == n })
	resp := k.invoke(wire.QueryMessage, &wire.QueryMessageRequestHeader{Topic: topic, Key: "bin-key", MaxNum: 64, EndTimestamp: time.Now().UnixMilli() + 1000}, nil)
	if resp.ResponseCode() != wire.Success || bytes.Count(resp.Body, []byte("bin-key")) != n {
		t.Fatalf("query by key: %s %s", resp.ResponseCode(), resp.Remark)
	}
	c.Shutdown()
	p.p.Shutdown()
	k.stop()
}

// lockedBuffer is a bytes.Buffer safe for the writer goroutine of exec
// and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
