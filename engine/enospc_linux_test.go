package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// On a full file system a send fails with an error matching ENOSPC,
// having stored nothing, and the engine goes on: once space is freed the
// next send gets the next queue offset and every message sent is pulled.
// (Retention by disk ratio is off, so that it does not free the space.)
func TestSendOnFullFileSystem(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=24m"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	e := openTest(t, filepath.Join(dir, "data"), &Options{SegmentSize: 1 << 20, RetentionDiskRatio: 1})
	t.Cleanup(func() { e.Close() }) // before the unmount
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	body := string(make([]byte, 1000))
	sent := int64(0)
	var err error
	for ; sent < 50000; sent++ {
		if _, err = e.Send(ctx, newMsg("T", body)); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("send %d on a full file system: %v, want ENOSPC", sent, err)
	}
	if _, err := e.Send(ctx, newMsg("T", body)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second send on a full file system: %v, want ENOSPC", err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	res, err := e.Send(ctx, newMsg("T", body))
	if err != nil {
		t.Fatalf("send after space was freed: %v", err)
	}
	if res.QueueOffset != sent {
		t.Fatalf("send after space was freed got queue offset %d, want %d", res.QueueOffset, sent)
	}
	if got := pullAll(t, e, "T", 0, 0, nil); int64(len(got)) != sent+1 {
		t.Fatalf("pulled %d messages, %d were sent", len(got), sent+1)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
