package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// On a full file system a send fails with an error matching ErrDiskFull,
// having stored nothing; later sends are refused at once
// while the disk stays full. Once space is freed the engine takes writes
// again by itself: the next send gets the next queue offset and every
// message sent is pulled. (Retention by disk ratio is off, so that it does
// not free the space, and the full ratio is 1, so that only the lack of
// space refuses sends.)
func TestSendOnFullFileSystem(t *testing.T) {
	dir := mountTmpfs(t, 24<<20)
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 10<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	e := openTest(t, filepath.Join(dir, "data"), &Options{SegmentSize: 1 << 20, RetentionDiskRatio: 1, DiskFullRatio: 1, DiskCheckInterval: 20 * time.Millisecond})
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
	// The reserve or the file system itself (ENOSPC) refuses it, whichever
	// the monitor sees first.
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("send %d on a full file system: %v, want ErrDiskFull", sent, err)
	}
	if _, err := e.Send(ctx, newMsg("T", body)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("second send on a full file system: %v, want ErrDiskFull", err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitDisk(t, e, DiskOK)
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
