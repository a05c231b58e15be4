package kv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/karmanmq/karman/engine/internal/disk"
)

const (
	fsTotal   = 64 << 20
	fsReserve = 64 << 10
)

// smallFS is an in-memory file system with room for a set number of
// bytes: a write beyond it writes what fits and fails with ENOSPC, as a
// full disk does. Its statfs tells a disk monitor the room left, and it
// records every write that reached it.
type smallFS struct {
	vfs.FS

	mu      sync.Mutex
	room    int64
	writes  []span // the byte ranges written, in order, per file name
	ioErr   error  // when set, every write and sync fails with it
	creates int    // creations left before one fails with ENOSPC; -1 no limit
}

type span struct {
	name     string
	off, len int64
}

func newSmallFS(room int64) *smallFS {
	return &smallFS{FS: vfs.NewMem(), room: room, creates: -1}
}

func (s *smallFS) free(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.room += n
	if s.creates == 0 {
		s.creates = -1
	}
}

func (s *smallFS) statfs(string) (used, total uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fsTotal - uint64(s.room), fsTotal, nil
}

func (s *smallFS) written() []span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]span(nil), s.writes...)
}

// take reserves up to n bytes and says how many fit.
func (s *smallFS) take(name string, off int64, n int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ioErr != nil {
		return 0, s.ioErr
	}
	fit := min(int64(n), s.room)
	s.room -= fit
	if fit > 0 {
		s.writes = append(s.writes, span{name, off, fit})
	}
	if fit < int64(n) {
		return int(fit), &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
	}
	return n, nil
}

func (s *smallFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	s.mu.Lock()
	if s.creates == 0 {
		s.mu.Unlock()
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	if s.creates > 0 {
		s.creates--
	}
	s.mu.Unlock()
	f, err := s.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return &smallFile{File: f, fs: s, name: name}, nil
}

type smallFile struct {
	vfs.File
	fs   *smallFS
	name string
	off  int64
}

func (f *smallFile) Write(p []byte) (int, error) {
	n, err := f.fs.take(f.name, f.off, len(p))
	m, werr := f.File.Write(p[:n])
	f.off += int64(m)
	return m, errors.Join(err, werr)
}

func (f *smallFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.fs.take(f.name, off, len(p))
	m, werr := f.File.WriteAt(p[:n], off)
	return m, errors.Join(err, werr)
}

func (f *smallFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.fs.ioErr
}

func (f *smallFile) Preallocate(off, n int64) error {
	return &os.PathError{Op: "fallocate", Path: f.name, Err: syscall.EOPNOTSUPP}
}

// newDiskFS returns a DiskFS over a smallFS with room bytes free, watched
// by a monitor checking every few milliseconds (started when start).
func newDiskFS(t *testing.T, room int64, start bool) (*DiskFS, *smallFS, *disk.Monitor) {
	t.Helper()
	small := newSmallFS(room)
	m := disk.New("/data", disk.Options{Reserve: fsReserve, FullRatio: 1, Interval: 2 * time.Millisecond, Statfs: small.statfs})
	if start {
		m.Start()
	}
	t.Cleanup(m.Close)
	return NewDiskFS(small, m), small, m
}

// pattern returns n bytes that differ from one position to the next, so
// that a byte written twice or at the wrong place shows.
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i * 7 / 3)
	}
	return p
}

// waitUntil polls cond until it holds, failing the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDiskFSWriteWaitsForSpace: a write that fills the disk waits, with
// the monitor in NoSpace, until space is freed, and then writes the rest,
// once, from where it stopped.
func TestDiskFSWriteWaitsForSpace(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write func(f vfs.File, p []byte) (int, error)
		at    int64 // where the data lands in the file
	}{
		{"Write", func(f vfs.File, p []byte) (int, error) { return f.Write(p) }, 0},
		{"WriteAt", func(f vfs.File, p []byte) (int, error) { return f.WriteAt(p, 1000) }, 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const room, size = 300 << 10, 1 << 20
			fs, small, m := newDiskFS(t, room, true)
			f, err := fs.Create("000007.sst", vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			data := pattern(size)
			// Pebble's in-memory files scramble what they are given in
			// race builds (to catch callers that reuse it): write a copy.
			arg := bytes.Clone(data)
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := tt.write(f, arg)
				done <- result{n, err}
			}()
			waitUntil(t, "the write waits for space", fs.Stuck)
			if st := m.Status(); st.State != disk.NoSpace {
				t.Fatalf("monitor %v while a write waits for space, want no-space", st.State)
			}
			select {
			case r := <-done:
				t.Fatalf("the write returned %d, %v on a full disk", r.n, r.err)
			default:
			}
			// Some room, less than twice the reserve: still waiting.
			small.free(fsReserve + fsReserve/2)
			m.Check()
			if m.Status().State != disk.NoSpace || !fs.Stuck() {
				t.Fatalf("the write went on with %d bytes free, below twice the reserve", fsReserve+fsReserve/2)
			}
			small.free(size)
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the write did not resume once space was freed")
			}
			if r.n != size || r.err != nil {
				t.Fatalf("write = %d, %v; want %d, nil", r.n, r.err, size)
			}
			if fs.Stuck() {
				t.Error("Stuck after the write resumed")
			}
			got := make([]byte, size)
			if _, err := f.ReadAt(got, tt.at); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("the file does not hold the data written")
			}
			// Every byte reached the file system once, in order: the
			// remainder after the wait started where the first try
			// stopped.
			next := tt.at
			var total int64
			for _, w := range small.written() {
				if w.off != next {
					t.Fatalf("writes %+v: one starts at %d, want %d", small.written(), w.off, next)
				}
				next += w.len
				total += w.len
			}
			if total != size {
				t.Fatalf("%d bytes reached the file system, want %d", total, size)
			}
			if len(small.written()) < 2 {
				t.Fatalf("writes %+v: the write never stopped for space", small.written())
			}
		})
	}
}

// TestDiskFSCreateWaitsForSpace: a file creation that finds no space
// waits and is tried again.
func TestDiskFSCreateWaitsForSpace(t *testing.T) {
	fs, small, m := newDiskFS(t, 0, true)
	small.creates = 0
	done := make(chan error, 1)
	go func() {
		f, err := fs.Create("MANIFEST-000002", vfs.WriteCategoryUnspecified)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	waitUntil(t, "the creation waits for space", fs.Stuck)
	if m.Status().State != disk.NoSpace {
		t.Fatalf("monitor %v, want no-space", m.Status().State)
	}
	small.free(1 << 20)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("create once space returned: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the creation did not resume")
	}
}

// TestDiskFSNotStarted: while the stores open the monitor is not started
// and nothing would end a wait, so a write that finds no space fails at
// once, saying how much it wrote.
func TestDiskFSNotStarted(t *testing.T) {
	fs, _, m := newDiskFS(t, 100, false)
	f, err := fs.Create("000001.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.Write(pattern(1000))
	if n != 100 || !disk.IsSpace(err) {
		t.Fatalf("write = %d, %v; want 100, ENOSPC", n, err)
	}
	if fs.Stuck() || m.Status().State != disk.NoSpace {
		t.Fatalf("stuck %v, monitor %v; want not stuck, no-space", fs.Stuck(), m.Status().State)
	}
}

// TestDiskFSClosedWhileWaiting: when the monitor closes, a waiting write
// of a table fails with its ENOSPC, while a write of pebble's log, which
// pebble cannot see fail, stays parked, unless the database writes no
// log (NoLog): its .log files are then like any other.
func TestDiskFSClosedWhileWaiting(t *testing.T) {
	for _, tt := range []struct {
		name   string
		noLog  bool
		parked bool
	}{{"000009.sst", false, false}, {"000010.log", false, true}, {"000011.log", true, false}} {
		t.Run(fmt.Sprintf("%s/NoLog=%v", tt.name, tt.noLog), func(t *testing.T) {
			fs, _, m := newDiskFS(t, 10, true)
			fs.NoLog = tt.noLog
			f, err := fs.Create(tt.name, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := f.Write(pattern(100))
				done <- result{n, err}
			}()
			waitUntil(t, "the write waits for space", fs.Stuck)
			m.Close()
			if tt.parked {
				waitUntil(t, "the write of the log is parked for good", func() bool { return fs.stuck.Load() })
				select {
				case r := <-done:
					t.Fatalf("the write of a log returned %d, %v after the monitor closed", r.n, r.err)
				default:
				}
				return
			}
			select {
			case r := <-done:
				if r.n != 10 || !disk.IsSpace(r.err) {
					t.Fatalf("write = %d, %v after the monitor closed; want 10, ENOSPC", r.n, r.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the write of a table still waits after the monitor closed")
			}
		})
	}
}

// TestDiskFSIOErrorParks: a write or sync that fails with EIO fails the
// disk and never returns; a later creation (a retried flush) parks too.
func TestDiskFSIOErrorParks(t *testing.T) {
	for _, tt := range []struct {
		name string
		op   func(f vfs.File) error
	}{
		{"write", func(f vfs.File) error { _, err := f.Write([]byte("x")); return err }},
		{"sync", func(f vfs.File) error { return f.Sync() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs, small, m := newDiskFS(t, 1<<20, true)
			f, err := fs.Create("000011.sst", vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			small.mu.Lock()
			small.ioErr = &os.PathError{Op: tt.name, Path: "000011.sst", Err: syscall.EIO}
			small.mu.Unlock()
			done := make(chan error, 2)
			go func() { done <- tt.op(f) }()
			waitUntil(t, "the disk fails", func() bool { return m.Status().State == disk.Failed && fs.Stuck() })
			go func() {
				_, err := fs.Create("000012.sst", vfs.WriteCategoryUnspecified)
				done <- err
			}()
			// Parked calls never return: nothing signals that they have
			// not, so give them a moment to show a wrong return.
			select {
			case err := <-done:
				t.Fatalf("a call returned %v on a failed disk", err)
			case <-time.After(50 * time.Millisecond):
			}
			if err := m.Refuse(disk.Full); !errors.Is(err, disk.ErrFailed) {
				t.Fatalf("Refuse = %v, want ErrFailed", err)
			}
		})
	}
}

// TestDiskFSPreallocateUnsupported: a file system without fallocate
// reserves nothing and loses nothing: Preallocate succeeds.
func TestDiskFSPreallocateUnsupported(t *testing.T) {
	fs, _, _ := newDiskFS(t, 1<<20, true)
	f, err := fs.Create("000013.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Preallocate(0, 4096); err != nil {
		t.Fatalf("Preallocate = %v", err)
	}
	if _, err := io.WriteString(f, "after"); err != nil {
		t.Fatal(err)
	}
}
