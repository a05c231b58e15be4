package engine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// fullDiskFS fails the creation of files, as a full disk does, once full
// is set.
type fullDiskFS struct {
	vfs.FS
	full atomic.Bool
}

func (f *fullDiskFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f.full.Load() {
		return nil, &os.PathError{Op: "create", Path: name, Err: syscall.ENOSPC}
	}
	return f.FS.Create(name, c)
}

// TestCloseWithFullDisk: when the index cannot be flushed (pebble retries
// a failed flush for ever), Close still returns, says the index was not
// flushed, and the next Open dispatches again what the index lost.
func TestCloseWithFullDisk(t *testing.T) {
	dir := t.TempDir()
	fs := &fullDiskFS{FS: vfs.Default}
	e := openTest(t, dir, &Options{indexFS: fs, AutoCreateTopics: true})
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	for i := range 50 {
		if _, err := e.Send(ctx, newMsg("T", fmt.Sprintf("m-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	fs.full.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		if err == nil || !strings.Contains(err.Error(), "index not flushed") && !strings.Contains(err.Error(), "index left unclosed") {
			t.Fatalf("Close with a full disk = %v, want an error saying the index was not flushed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close hangs when the index cannot be flushed")
	}

	e = openTest(t, dir, nil)
	defer e.Close()
	got := 0
	for q := range int32(2) {
		got += len(pullAll(t, e, "T", q, 0, nil))
	}
	if got != 50 {
		t.Fatalf("after reopening, the queues hold %d messages, want 50", got)
	}
}
