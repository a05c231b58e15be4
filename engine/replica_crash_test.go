package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/karmanmq/karman/engine/epoch"
	"github.com/karmanmq/karman/engine/meta"
)

// The replica crash test runs a master and a replica in a child process
// (this test binary, re-executed): the master takes sends, the replica
// copies its log with Replicate and the child prints the replica's end
// after each copy. It is killed with SIGKILL at a random moment, in the
// middle of a copy or not, and the parent reopens both: the replica's
// log must be a prefix of the master's, record for record at the same
// offsets, reach at least the last end it reported, serve no torn or
// corrupt record, and agree with the master on epochs and queues. The
// next round goes on from there, the master in a new epoch.

const replicaCrashEnv = "KARMAN_ENGINE_REPLICA_CRASH_CHILD"

var replicaCrashOpts = Options{SegmentSize: 128 << 10}

func TestReplicaCrashChild(t *testing.T) {
	dir := os.Getenv(replicaCrashEnv)
	if dir == "" {
		return
	}
	var round int
	fmt.Sscan(os.Getenv(replicaCrashEnv+"_ROUND"), &round)
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	mo := replicaCrashOpts
	ro := replicaCrashOpts
	ro.Replica = true
	if round%2 == 1 {
		ro.Flush = FlushSync // the write-through path
	}
	master, err := Open(filepath.Join(dir, "master"), &mo)
	if err != nil {
		fail(err)
	}
	replica, err := Open(filepath.Join(dir, "replica"), &ro)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	if err := master.Promote(ctx, uint32(round+1)); err != nil {
		fail(err)
	}
	for _, e := range []*Engine{master, replica} {
		if _, err := e.Topic("C"); err != nil {
			if err := e.CreateTopic(meta.Topic{Name: "C", ReadQueues: 2, WriteQueues: 2}); err != nil {
				fail(err)
			}
		}
	}
	// Where the two agree; a real replica asks its master the same.
	_, mEnd := master.LogRange()
	point, ok := epoch.ConsistentPoint(replica.Epochs(), replicaEnd(replica), master.Epochs(), mEnd)
	if !ok {
		fail(fmt.Errorf("no consistent point between %v and %v", replica.Epochs(), master.Epochs()))
	}
	if point < replicaEnd(replica) {
		if err := replica.Truncate(point); err != nil {
			fail(err)
		}
	}
	out := bufio.NewWriter(os.Stdout)
	for seq := 0; ; seq++ {
		m := newMsg("C", string(crashBody(round, seq)))
		if _, err := master.Send(ctx, m); err != nil {
			fail(err)
		}
		if seq%3 != 0 {
			continue
		}
		err := copyFrames(master, replica, func(end int64) {
			fmt.Fprintf(out, "replicated %d\n", end)
			out.Flush()
		})
		if err != nil {
			fail(err)
		}
	}
}

func TestReplicaCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test kills child processes; skipped with -short")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReplicaCrashChild$")
		cmd.Env = append(os.Environ(), replicaCrashEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", replicaCrashEnv, round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 50 + rng.IntN(1500)
		sc := bufio.NewScanner(stdout)
		var reported int64
		n, killed := 0, false
		for sc.Scan() {
			line := sc.Text()
			var end int64
			if _, err := fmt.Sscanf(line, "replicated %d", &end); err != nil {
				if strings.HasPrefix(line, "error") {
					t.Fatalf("child: %s", line)
				}
				continue
			}
			reported = max(reported, end)
			if n++; n == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		cmd.Wait()
		if !killed {
			t.Fatalf("round %d: the child stopped by itself after %d copies", round, n)
		}
		master := openTest(t, filepath.Join(dir, "master"), &replicaCrashOpts)
		ro := replicaCrashOpts
		ro.Replica = true
		replica := openTest(t, filepath.Join(dir, "replica"), &ro)
		checkReplicaPrefix(t, round, master, replica, reported)
		master.Close()
		replica.Close()
	}
}

// checkReplicaPrefix checks that replica holds a prefix of master's log,
// at least up to reported, with nothing corrupt.
func checkReplicaPrefix(t *testing.T, round int, master, replica *Engine, reported int64) {
	t.Helper()
	_, rEnd := replica.LogRange()
	if rEnd < reported {
		t.Fatalf("round %d: the replica ends at %d, it reported %d before the kill", round, rEnd, reported)
	}
	if n := replica.corrupt.Load(); n > 0 {
		t.Fatalf("round %d: the replica found %d corrupt records", round, n)
	}
	ctx := context.Background()
	mf, err := master.Follow(0)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := replica.Follow(0)
	if err != nil {
		t.Fatal(err)
	}
	var want []LogRecord
	var wantData []byte
	for rf.Position() < rEnd {
		recs, err := rf.Next(ctx)
		if err != nil {
			t.Fatalf("round %d: the replica's log at %d: %v", round, rf.Position(), err)
		}
		for _, r := range recs {
			for len(want) == 0 {
				ms, err := mf.Next(ctx)
				if err != nil {
					t.Fatalf("round %d: the master's log at %d (the replica has a record at %d): %v", round, mf.Position(), r.Offset, err)
				}
				want = slices.Clone(ms)
				wantData = wantData[:0]
				for i := range want {
					at := len(wantData)
					wantData = append(wantData, want[i].Data...)
					want[i].Data = wantData[at:len(wantData):len(wantData)]
				}
			}
			w := want[0]
			want = want[1:]
			if w.Offset != r.Offset || w.Next != r.Next || !bytes.Equal(w.Data, r.Data) {
				t.Fatalf("round %d: the replica's record at %d (%d bytes) is not the master's at %d (%d bytes)", round, r.Offset, len(r.Data), w.Offset, len(w.Data))
			}
		}
	}
	// Epochs: the replica holds the master's, in order, at least those
	// its records belong to (one more may start at its end: recorded,
	// and the kill came before its first records).
	got, all := replica.Epochs(), master.Epochs()
	if len(got) > len(all) || !slices.Equal(got, all[:len(got)]) {
		t.Fatalf("round %d: replica epochs %v are not a prefix of the master's %v", round, got, all)
	}
	for _, e := range all[len(got):] {
		if e.Start < rEnd {
			t.Fatalf("round %d: replica epochs %v miss %v, below its end %d", round, got, e, rEnd)
		}
	}
}
