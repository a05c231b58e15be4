package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/meta"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory, unmounted
// when the test ends. It skips the test where mounting is not permitted.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("disk-full tests need to mount a tmpfs (root): mount: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file of zeros at path until the file system has at most
// leave bytes free (ENOSPC ends it when leave is 0).
func fill(t *testing.T, e *Engine, path string, leave uint64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		e.disk.Check()
		st := e.disk.Status()
		if st.Free() <= leave {
			return
		}
		n := min(uint64(len(buf)), st.Free()-leave)
		if _, err := f.Write(buf[:n]); err != nil {
			if leave == 0 {
				return
			}
			t.Fatal(err)
		}
	}
}

// waitDisk polls the engine's health until its disk state is want.
func waitDisk(t *testing.T, e *Engine, want DiskState) Health {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h := e.Health()
		if h.Disk == want {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("disk state %v (%s), want %v", h.Disk, h.Reason, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDiskFull runs the engine on a small tmpfs that another file fills:
// above the full ratio sends are refused and consumers go on reading and
// committing; with the disk truly full every write is refused, fast;
// nothing acknowledged is lost; freeing the space brings writes back
// without a restart; and a restart on a full disk fails fast, naming the
// directory and the free space.
func TestDiskFull(t *testing.T) {
	root := mountTmpfs(t, 96<<20)
	dir := filepath.Join(root, "data")
	opts := &Options{
		SegmentSize:        4 << 20,
		DiskCheckInterval:  20 * time.Millisecond,
		DiskReserve:        2 << 20,
		RetentionDiskRatio: 1, // retention would delete what the test checks
	}
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	sent := 0
	send := func() error {
		_, err := e.Send(ctx, newMsg("T", fmt.Sprintf("m-%d", sent)))
		if err == nil {
			sent++
		}
		return err
	}
	for range 100 {
		if err := send(); err != nil {
			t.Fatal(err)
		}
	}
	if h := e.Health(); h.Disk != DiskOK {
		t.Fatalf("health before filling: %v %s", h.Disk, h.Reason)
	}

	// Above the full ratio: sends refused, consumers go on.
	filler := filepath.Join(root, "filler")
	st := e.disk.Status()
	fill(t, e, filler, st.Total/20) // 95 % full
	h := waitDisk(t, e, DiskFull)
	if !strings.Contains(h.Reason, "full ratio") {
		t.Errorf("reason %q does not name the full ratio", h.Reason)
	}
	err = send()
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("send above the full ratio = %v, want ErrDiskFull", err)
	}
	if got := len(pullAll(t, e, "T", 0, 0, nil)); got != sent {
		t.Fatalf("pulled %d messages above the full ratio, want %d", got, sent)
	}
	if err := e.CommitOffset("g", "T", 0, 50); err != nil {
		t.Fatalf("offset commit above the full ratio: %v", err)
	}

	// Truly full: every write refused at once, reads served.
	fill(t, e, filler+"2", 0)
	waitDisk(t, e, DiskNoSpace)
	began := time.Now()
	if err := e.CommitOffset("g", "T", 0, 60); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("offset commit on a full disk = %v, want ErrDiskFull", err)
	}
	if err := send(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("send on a full disk = %v, want ErrDiskFull", err)
	}
	if err := e.CreateTopic(meta.Topic{Name: "U", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("topic creation on a full disk = %v, want ErrDiskFull", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("refusals took %s", d)
	}
	if got := len(pullAll(t, e, "T", 0, 0, nil)); got != sent {
		t.Fatalf("pulled %d messages on a full disk, want %d", got, sent)
	}
	if off, err := e.ConsumerOffset("g", "T", 0); err != nil || off != 50 {
		t.Fatalf("offset on a full disk = %d, %v; want the acknowledged 50", off, err)
	}

	// A restart on the full disk fails fast and says why.
	if err := e.Close(); err != nil {
		t.Logf("close on a full disk: %v", err)
	}
	fill(t, e, filler+"3", 0) // closing freed a little
	began = time.Now()
	if e2, err := Open(dir, opts); err == nil {
		e2.Close()
		t.Fatal("open on a full disk succeeded")
	}
	_, err = Open(dir, opts)
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), "free") {
		t.Fatalf("open on a full disk = %v, want ErrDiskFull naming %s and the free space", err, root)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("open on a full disk took %s to fail", d)
	}

	// Space freed: the engine opens, takes writes, and lost nothing.
	os.Remove(filler + "2")
	os.Remove(filler + "3")
	if e, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	waitDisk(t, e, DiskFull)
	os.Remove(filler)
	waitDisk(t, e, DiskOK)
	if err := send(); err != nil {
		t.Fatalf("send after space returned: %v", err)
	}
	if err := e.CommitOffset("g", "T", 0, 70); err != nil {
		t.Fatalf("offset commit after space returned: %v", err)
	}
	if got := len(pullAll(t, e, "T", 0, 0, nil)); got != sent {
		t.Fatalf("pulled %d messages after space returned, want %d", got, sent)
	}
}

// TestDiskFullRecoversWithoutRestart fills the disk under a running engine
// until a write fails with ENOSPC, then frees the space: the engine
// leaves the state by itself and takes writes again.
func TestDiskFullRecoversWithoutRestart(t *testing.T) {
	root := mountTmpfs(t, 64<<20)
	e, err := Open(filepath.Join(root, "data"), &Options{SegmentSize: 4 << 20, DiskCheckInterval: 20 * time.Millisecond, RetentionDiskRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	mustTopic(t, e, "T", 1)
	filler := filepath.Join(root, "filler")
	fill(t, e, filler, 0)
	h := waitDisk(t, e, DiskNoSpace)
	if h.Reason == "" {
		t.Error("no reason given")
	}
	if _, err := e.Send(context.Background(), newMsg("T", "x")); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("send on a full disk = %v", err)
	}
	os.Remove(filler)
	waitDisk(t, e, DiskOK)
	if _, err := e.Send(context.Background(), newMsg("T", "x")); err != nil {
		t.Fatalf("send after space returned: %v", err)
	}
	if err := e.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.CommitOffset("g", "T", 0, 1); err != nil {
		t.Fatalf("commit after space returned: %v", err)
	}
}
