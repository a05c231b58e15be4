//go:build !race && unix

package compat

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// binaryEnv names a karman binary for TestBinary to run instead of
// building one (the race-mode driver passes a race-built binary).
const binaryEnv = "KARMAN_COMPAT_BINARY"

// karmanBinary returns the karman binary under test, building it when
// binaryEnv does not name one.
func karmanBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(binaryEnv); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "karman")
	build := exec.Command("go", "build", "-o", bin, "../..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build karman: %v\n%s", err, out)
	}
	return bin
}

// The real binary, started as a user would: a producer and a push
// consumer of the Go client work against it, and it stops cleanly (with
// no race report when it was built with the race detector).
func TestBinary(t *testing.T) {
	bin := karmanBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--data", t.TempDir(), "--segment-size", "64MiB",
		"--http-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0")
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
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	k := &karman{t: t}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		if a, ok := strings.CutPrefix(line, "karman: namesrv listening on "); ok {
			k.namesrv = a
		}
		if a, ok := strings.CutPrefix(line, "karman: broker listening on "); ok {
			k.broker = a
		}
		if line == "karman: ready" {
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if k.namesrv == "" || k.broker == "" {
		t.Fatalf("karman did not start\nstderr:\n%s", stderr.String())
	}
	admin, err := peer.Dial(ctx, k.broker, peer.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	k.admin = admin

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
	admin.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("karman exited with %v\nstderr:\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "DATA RACE") {
		t.Fatalf("race detected in karman:\n%s", stderr.String())
	}
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
