package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/karmanmq/karman/engine/meta"
)

// The crash test runs a writer in a child process (this test binary,
// re-executed), lets it acknowledge messages for a random while, kills it
// with SIGKILL and reopens the engine: every acknowledged message must be
// pullable and intact, queues gap-free and in order, and nothing torn may
// be served.

const crashChildEnv = "KARMAN_ENGINE_CRASH_CHILD"

var crashOpts = Options{SegmentSize: 256 << 10}

// crashBody is the deterministic body of message seq of round.
func crashBody(round, seq int) []byte {
	n := 50 + (round*7919+seq*104729)%3000
	head := fmt.Sprintf("%d/%d/", round, seq)
	return []byte(head + strings.Repeat(string(rune('a'+seq%26)), n))
}

// TestCrashChild is the writer; it does nothing unless run by TestCrash.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		return
	}
	var round int
	fmt.Sscan(os.Getenv(crashChildEnv+"_ROUND"), &round)
	e, err := Open(dir, &crashOpts)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if _, err := e.Topic("C"); err != nil {
		if err := e.CreateTopic(meta.Topic{Name: "C", ReadQueues: 3, WriteQueues: 3}); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
	}
	out := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	for seq := 0; ; seq++ {
		m := newMsg("C", string(crashBody(round, seq)), "KEYS", fmt.Sprintf("r%d-s%d", round, seq))
		res, err := e.Send(ctx, m)
		if err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			os.Exit(2)
		}
		fmt.Fprintf(out, "ack %d %d %d %d\n", res.QueueID, res.QueueOffset, round, seq)
		if seq%8 == 0 {
			out.Flush()
		}
	}
}

type crashAck struct{ round, seq int }

func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test kills child processes; skipped with -short")
	}
	dir := t.TempDir()
	rounds := 8
	acked := map[[2]int64]crashAck{} // (queue, offset) → message
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", crashChildEnv, round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 100 + rng.IntN(3000)
		sc := bufio.NewScanner(stdout)
		n, killed := 0, false
		for sc.Scan() {
			line := sc.Text()
			var q, off int64
			var a crashAck
			if _, err := fmt.Sscanf(line, "ack %d %d %d %d", &q, &off, &a.round, &a.seq); err != nil {
				if strings.HasPrefix(line, "error") {
					t.Fatalf("child: %s", line)
				}
				continue // go test's own output
			}
			if prev, dup := acked[[2]int64{q, off}]; dup {
				t.Fatalf("round %d: offset %d/%d acknowledged twice (%v and %v)", round, q, off, prev, a)
			}
			acked[[2]int64{q, off}] = a
			n++
			if n == killAfter && !killed {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child exited after %d acks before it was killed", round, n)
		}
		verifyCrashState(t, dir, acked)
	}
	t.Logf("%d rounds, %d acknowledged messages verified", rounds, len(acked))
}

func verifyCrashState(t *testing.T, dir string, acked map[[2]int64]crashAck) {
	t.Helper()
	e, err := Open(dir, &crashOpts)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer e.Close()
	for q := range int32(3) {
		got := pullAll(t, e, "C", q, 0, nil)
		for i, m := range got {
			if m.QueueOffset != int64(i) {
				t.Fatalf("queue %d: entry %d has offset %d (gap or disorder)", q, i, m.QueueOffset)
			}
			var round, seq int
			if _, err := fmt.Sscanf(string(m.Body), "%d/%d/", &round, &seq); err != nil || !bytes.Equal(m.Body, crashBody(round, seq)) {
				t.Fatalf("queue %d offset %d: body damaged (%d bytes)", q, i, len(m.Body))
			}
			if a, ok := acked[[2]int64{int64(q), int64(i)}]; ok && (a.round != round || a.seq != seq) {
				t.Fatalf("queue %d offset %d holds %d/%d, acknowledged as %d/%d", q, i, round, seq, a.round, a.seq)
			}
		}
		for key := range acked {
			if key[0] == int64(q) && key[1] >= int64(len(got)) {
				t.Fatalf("acknowledged message at %d/%d lost (queue holds %d)", key[0], key[1], len(got))
			}
		}
	}
}
