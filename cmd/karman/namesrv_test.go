package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// TestNamesrvCommand runs "karman namesrv" alone, asks it for its topics
// over the remoting protocol and stops it with SIGTERM.
func TestNamesrvCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := command(ctx, nil, "namesrv", "--addr", "127.0.0.1:0")
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

	var addr string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if a, ok := strings.CutPrefix(lines.Text(), "karman: namesrv listening on "); ok {
			addr = a
		}
		if lines.Text() == "karman: ready" {
			break
		}
	}
	if addr == "" {
		cmd.Wait()
		t.Fatalf("namesrv did not announce its address and readiness\nstderr:\n%s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)

	p, err := peer.Dial(ctx, addr, peer.Options{RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Invoke(ctx, wire.NewRequest(wire.GetAllTopicListFromNameServer, nil))
	p.Close()
	if err != nil || resp.ResponseCode() != wire.Success || string(resp.Body) != `{"topicList":[]}` {
		t.Fatalf("topic list: %v %v", resp, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("namesrv exited with %v after SIGTERM\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("no graceful shutdown logged:\n%s", stderr.String())
	}
}

func TestNamesrvBadAddr(t *testing.T) {
	_, stderr, code := run(t, nil, "namesrv", "--addr", "9876")
	if code != 1 || !strings.Contains(stderr, "--addr") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
