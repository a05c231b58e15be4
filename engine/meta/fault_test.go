package meta

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/karmanmq/karman/engine/internal/disk"
)

// callDeadline bounds every store call of the fault tests: a call that
// takes longer hangs.
const callDeadline = 10 * time.Second

// within runs fn and fails the test if it does not return in time.
func within[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(callDeadline):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s did not return within %s; goroutines:\n%s", what, callDeadline, buf[:runtime.Stack(buf, true)])
		panic("unreachable")
	}
}

// ioInjector fails the at-th write, preallocation or sync (counting from
// 1 once armed) with EIO, and every one after it on the same file kind,
// as a disk that has gone bad does.
type ioInjector struct {
	armed atomic.Bool
	count atomic.Int64
	at    int64
}

func (in *ioInjector) String() string { return fmt.Sprintf("EIO at write or sync %d", in.at) }

func (in *ioInjector) MaybeError(op errorfs.Op) error {
	if !in.armed.Load() {
		return nil
	}
	switch op.Kind {
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFilePreallocate,
		errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
	default:
		return nil
	}
	if n := in.count.Add(1); n >= in.at && in.at > 0 {
		return &os.PathError{Op: "injected", Path: op.Path, Err: syscall.EIO}
	}
	return nil
}

// faultWorkload is what each fault run does once the injector is armed:
// offset commits (which do not wait for the disk), pop states, writes
// that wait for it, and a flush of the memtable, so that the log, its
// syncs, sstables and the MANIFEST are all written.
func faultWorkload(s *Store) []func() error {
	var steps []func() error
	for i := range 4 {
		steps = append(steps,
			func() error { return s.CommitOffset("g", "T", 0, int64(100+i)) },
			func() error {
				return s.SavePopStates([]PopRecord{{Group: "g", Topic: "T", Queue: 1, State: []byte{byte(i)}, Offset: int64(i)}}, i%2 == 0)
			},
			func() error { return s.PutGroup(Group{Name: fmt.Sprintf("g%d", i)}) },
			func() error { return s.write("flush", s.db.Flush) },
		)
	}
	steps = append(steps, func() error { return s.PutSecret("k", []byte("v")) })
	return steps
}

// TestFaultEIO injects EIO at every write and every sync of the metadata
// store in turn: no call panics or hangs, the first failed call and every
// later write return a clear error (the store failed, restart), and reads
// keep working.
func TestFaultEIO(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the workload once per write and sync")
	}
	// A clean run counts the writes and syncs of the workload.
	total := func() int64 {
		in := &ioInjector{}
		s, m := openFaulty(t, in)
		in.armed.Store(true)
		for i, step := range faultWorkload(s) {
			if err := within(t, fmt.Sprintf("step %d", i), step); err != nil {
				t.Fatalf("step %d without faults: %v", i, err)
			}
		}
		m.Close()
		if err := within(t, "Close", s.Close); err != nil {
			t.Fatal(err)
		}
		return in.count.Load()
	}()
	if total < 10 {
		t.Fatalf("the workload does only %d writes and syncs", total)
	}
	for at := int64(1); at <= total; at++ {
		t.Run(fmt.Sprintf("eio-at-%d", at), func(t *testing.T) {
			in := &ioInjector{at: at}
			s, m := openFaulty(t, in)
			in.armed.Store(true)
			failed := false
			for i, step := range faultWorkload(s) {
				err := within(t, fmt.Sprintf("step %d", i), step)
				switch {
				case err == nil && failed:
					t.Fatalf("step %d succeeded after a write failed", i)
				case err != nil && !errors.Is(err, disk.ErrFailed):
					t.Fatalf("step %d: %v, want an error matching disk.ErrFailed", i, err)
				case err != nil:
					failed = true
				}
				// Reads keep working, whatever happened.
				if err := within(t, "Topic", func() error { _, err := s.Topic("T"); return err }); err != nil {
					t.Fatalf("read topic after step %d: %v", i, err)
				}
				if err := within(t, "Offset", func() error { _, err := s.Offset("g", "T", 0); return err }); err != nil {
					t.Fatalf("read offset after step %d: %v", i, err)
				}
			}
			// The failure is seen sooner or later (an error in a background
			// flush, or in the log after a commit that did not wait for it):
			// then every write is refused, fast and clearly, and the disk
			// monitor says the disk failed.
			if in.count.Load() >= at {
				err := within(t, "CommitOffset", func() error { return s.CommitOffset("g", "T", 0, 1) })
				if !errors.Is(err, disk.ErrFailed) {
					t.Fatalf("commit after the injected EIO = %v, want disk.ErrFailed", err)
				}
				if st := m.Status(); st.State != disk.Failed {
					t.Fatalf("monitor state %v after EIO, want failed", st.State)
				}
			}
			m.Close()
			within(t, "Close", s.Close)
		})
	}
}

// openFaulty opens a store whose files go through in, with a disk monitor
// that sees plenty of space, and stores the topic and offset the fault
// runs read.
func openFaulty(t *testing.T, in errorfs.Injector) (*Store, *disk.Monitor) {
	t.Helper()
	dir := t.TempDir()
	m := disk.New(dir, disk.Options{Statfs: func(string) (uint64, uint64, error) { return 1 << 30, 100 << 30, nil }})
	s, err := Open(dir, &Options{Disk: m, FS: errorfs.Wrap(vfs.Default, in)})
	if err != nil {
		t.Fatal(err)
	}
	mustNil(t, s.PutTopic(Topic{Name: "T", ReadQueues: 1, WriteQueues: 1}))
	mustNil(t, s.CommitOffset("g", "T", 0, 7))
	return s, m
}
