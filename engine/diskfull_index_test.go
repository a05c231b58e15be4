package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
)

// TestDiskFullIndexFlush fills the disk with the index's own flushes:
// messages with thousands of keys under a long topic name make the
// index (pebble, without a WAL) grow many times faster than the commit
// log, whose segments are allocated in advance. A flush then finds the
// disk full: sends are refused, the flush waits for space and the
// dispatcher stops without spinning a CPU, and once space is freed the
// flush and the dispatcher go on by themselves: a pull sees every
// acknowledged message and a key look-up finds the last one.
func TestDiskFullIndexFlush(t *testing.T) {
	root := mountTmpfs(t, 128<<20)
	e, err := Open(filepath.Join(root, "data"), &Options{
		SegmentSize:        32 << 20, // the test's messages fit in one
		DiskCheckInterval:  20 * time.Millisecond,
		DiskReserve:        1 << 20,
		DiskFullRatio:      1, // only the reserve and ENOSPC refuse writes
		RetentionDiskRatio: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	topic := "IndexFlush-" + strings.Repeat("t", message.MaxNameLength-len("IndexFlush-"))
	mustTopic(t, e, topic, 1)
	// Short random keys: few bytes in the log, many more in the index's
	// tables (each entry there holds the key, a time and an offset, and
	// every sixteenth the topic too), which cannot compress them much.
	rng := rand.New(rand.NewPCG(1, 2))
	var lastKey string
	keys := func() string {
		ks := make([]string, 1000)
		for i := range ks {
			ks[i] = fmt.Sprintf("%05x", rng.Uint32()&0xfffff)
		}
		lastKey = ks[len(ks)-1]
		return strings.Join(ks, " ")
	}
	ctx := context.Background()
	sent := 0
	send := func() error {
		m := newMsg(topic, fmt.Sprintf("m-%04d", sent), message.PropertyKeys, keys())
		_, err := e.Send(ctx, m)
		if err == nil {
			sent++
		}
		return err
	}

	// The log creates its next segment, and reserves blocks for its
	// appends, ahead of need: let it, so that once the disk is filled the
	// index needs space before the log does.
	if err := send(); err != nil {
		t.Fatal(err)
	}
	segs := filepath.Join(root, "data", "commitlog")
	waitFor(t, "the next segment to be created", func() bool {
		names, _ := filepath.Glob(filepath.Join(segs, "0*"))
		tmp, _ := filepath.Glob(filepath.Join(segs, "*.tmp"))
		return len(names) == 2 && len(tmp) == 0
	})
	// Leave a few MiB: the index's flushes take them.
	filler := filepath.Join(root, "filler")
	fill(t, e, filler, 3<<20)
	if h := e.Health(); h.Disk != DiskOK {
		t.Fatalf("health after filling: %v %s", h.Disk, h.Reason)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := send()
		if errors.Is(err, ErrDiskFull) {
			break
		}
		if err != nil {
			t.Fatalf("send %d: %v", sent, err)
		}
		if sent%16 == 0 {
			// Keep the dispatcher near the log's end, as it is when
			// messages carry few keys: its batches stay small.
			if err := e.WaitDispatched(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) || sent == 5000 {
			t.Fatalf("%d sends and the index has not filled the disk (health %+v)", sent, e.Health())
		}
	}
	h := waitDisk(t, e, DiskNoSpace)
	waitFor(t, "the index's flush to wait for space", func() bool { return e.idxFS.Stuck() })
	// Let the dispatcher index what it can: it stops at the log's end, or
	// where pebble stalls writes, its memtables full and unflushable.
	var pos int64 = -1
	waitFor(t, "the dispatcher to stop", func() bool {
		p := e.disp.pos.Load()
		if p == pos {
			return true
		}
		pos = p
		time.Sleep(200 * time.Millisecond)
		return false
	})
	t.Logf("%d messages sent before the index filled the disk; dispatched to %d of %d; %s", sent, e.disp.pos.Load(), e.log.EndOffset(), h.Reason)

	// Nothing spins while the disk stays full.
	const interval = time.Second
	before, began := cpuTime(), time.Now()
	time.Sleep(interval) // the quantity measured is what happens meanwhile
	used, elapsed := cpuTime()-before, time.Since(began)
	t.Logf("CPU time over %s with the disk full: %s", elapsed.Round(time.Millisecond), used)
	if used > elapsed/4 {
		t.Errorf("the process used %s of CPU in %s on a full disk: something spins", used, elapsed)
	}
	if err := send(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("send on a full disk = %v, want ErrDiskFull", err)
	}

	// Space freed: the flush, the dispatcher and sends go on.
	os.Remove(filler)
	waitDisk(t, e, DiskOK)
	waitFor(t, "the index's flush to finish", func() bool { return !e.idxFS.Stuck() })
	if err := send(); err != nil {
		t.Fatalf("send after space returned: %v", err)
	}
	got := pullAll(t, e, topic, 0, 0, nil)
	if len(got) != sent {
		t.Fatalf("pulled %d messages after space returned, want %d", len(got), sent)
	}
	for i, m := range got {
		if want := fmt.Sprintf("m-%04d", i); string(m.Body) != want {
			t.Fatalf("message %d is %q, want %q", i, m.Body, want)
		}
	}
	last := fmt.Sprintf("m-%04d", sent-1)
	byKey, err := e.MessagesByKey(topic, lastKey, 0, time.Now().Add(time.Minute).UnixMilli(), 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(byKey) == 0 || string(byKey[len(byKey)-1].Body) != last {
		t.Fatalf("key look-up found %d messages, want the last %s", len(byKey), last)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
