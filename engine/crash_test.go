package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/registry"
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
	e, err := Open(dir, crashChildOptions(round))
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

// crashChildOptions are the writer's options in round: odd rounds
// acknowledge only what is synced (FlushSync, whose appends write through
// the segment file), even rounds what is in the page cache.
func crashChildOptions(round int) *Options {
	o := crashOpts
	if round%2 == 1 {
		o.Flush = FlushSync
	}
	return &o
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

const timerChildEnv = "KARMAN_ENGINE_TIMER_CHILD"

// TestTimerCrashChild schedules timer messages and transactions until it
// is killed; it does nothing unless run by TestCrashTimersAndTransactions.
func TestTimerCrashChild(t *testing.T) {
	dir := os.Getenv(timerChildEnv)
	if dir == "" {
		return
	}
	var round int
	fmt.Sscan(os.Getenv(timerChildEnv+"_ROUND"), &round)
	e, err := Open(dir, &crashOpts)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if _, err := e.Topic("C"); err != nil {
		e.CreateTopic(meta.Topic{Name: "C", ReadQueues: 2, WriteQueues: 2})
	}
	out := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	for seq := 0; ; seq++ {
		due := time.Now().Add(time.Duration(100+seq%700) * time.Millisecond).UnixMilli()
		body := fmt.Sprintf("%d/%d/%d", round, seq, due)
		var m *message.Message
		if seq%4 == 3 { // every fourth is a transaction, committed at once or left to the checker
			m = newMsg("C", "txn:"+body, message.PropertyTransactionPrepared, "true", message.PropertyProducerGroup, "PG")
		} else {
			m = newMsg("C", body, message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10))
		}
		res, err := e.Send(ctx, m)
		if err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			os.Exit(2)
		}
		if seq%8 == 3 {
			if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: res.CommitLogOffset, QueueOffset: -1, Decision: Commit}); err != nil {
				fmt.Fprintln(out, "error", err)
				out.Flush()
				os.Exit(2)
			}
		}
		fmt.Fprintf(out, "ack %d %d\n", round, seq)
		out.Flush()
	}
}

func TestCrashTimersAndTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test kills child processes; skipped with -short")
	}
	dir := t.TempDir()
	acked := map[string]bool{} // "round/seq"
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTimerCrashChild$")
		cmd.Env = append(os.Environ(), timerChildEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", timerChildEnv, round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 50 + rng.IntN(400)
		sc := bufio.NewScanner(stdout)
		n := 0
		for sc.Scan() {
			var r, s int
			if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &r, &s); err != nil {
				if strings.HasPrefix(sc.Text(), "error") {
					t.Fatalf("child: %s", sc.Text())
				}
				continue
			}
			acked[fmt.Sprintf("%d/%d", r, s)] = true
			if n++; n == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		cmd.Wait()
	}
	// Reopen with a checker that commits every half message it is asked about.
	o := crashOpts
	o.TransactionTimeout, o.TransactionScanInterval = 100*time.Millisecond, 20*time.Millisecond
	e, err := Open(dir, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetTransactionChecker("test", func(ctx context.Context, _ registry.ClientInfo, h HalfMessage) error {
		go e.EndTransaction(context.Background(), EndTransactionRequest{ProducerGroup: h.ProducerGroup, CommitLogOffset: h.CommitLogOffset, QueueOffset: -1, Decision: Commit})
		return nil
	})
	e.Clients().Heartbeat(registry.Heartbeat{Client: "p", Protocol: "test", Conn: &testConn{"p"}, Producers: []string{"PG"}})
	seen := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		clear(seen)
		for q := range int32(2) {
			for _, m := range pullAll(t, e, "C", q, 0, nil) {
				body := strings.TrimPrefix(string(m.Body), "txn:")
				var r, s int
				var due int64
				fmt.Sscanf(body, "%d/%d/%d", &r, &s, &due)
				key := fmt.Sprintf("%d/%d", r, s)
				seen[key]++
				if !strings.HasPrefix(string(m.Body), "txn:") && m.StoreTimestamp < due {
					t.Fatalf("timer message %s delivered %d ms early", key, due-m.StoreTimestamp)
				}
			}
		}
		missing := 0
		for k := range acked {
			if seen[k] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for k := range acked {
		if seen[k] != 1 {
			t.Fatalf("acknowledged message %s delivered %d times", k, seen[k])
		}
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("message %s delivered %d times", k, c)
		}
	}
	t.Logf("%d acknowledged timer and transactional messages each delivered once", len(acked))
}
