package commitlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// allocatedBytes returns the bytes of disk the files of dir take (stat's
// blocks, not their sizes).
func allocatedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(dir, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		n += st.Blocks * 512
	}
	return n
}

// A fresh log with a few records takes a few MiB of disk, not its two
// full-size segments (the active one and the one made ahead).
func TestFreshLogIsSmallOnDisk(t *testing.T) {
	for _, mode := range []FlushMode{FlushAsync, FlushSync} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, &Options{Flush: mode}) // 1 GiB segments
			for i := range 100 {
				appendOne(t, l, payload(i, 1000))
			}
			// Wait for the segment made ahead, so that it is counted too.
			next := segPath(dir, DefaultSegmentSize)
			for deadline := time.Now().Add(10 * time.Second); ; {
				if fi, err := os.Stat(next); err == nil && fi.Size() == DefaultSegmentSize {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the next segment was not made ahead")
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, base := range []int64{0, DefaultSegmentSize} {
				fi, err := os.Stat(segPath(dir, base))
				if err != nil || fi.Size() != DefaultSegmentSize {
					t.Fatalf("segment %d: %v, %v; want a file of %d bytes", base, fi, err, DefaultSegmentSize)
				}
			}
			if got := l.reserved.Load(); got < l.EndOffset() {
				t.Fatalf("reserved up to %d, below the end %d", got, l.EndOffset())
			}
			// The records, the window reserved ahead (4 MiB), the checkpoint.
			const limit = 16 << 20
			if got := allocatedBytes(t, dir); got > limit {
				t.Fatalf("a log of %d bytes takes %d bytes of disk, want at most %d", l.EndOffset(), got, limit)
			}
			closeLog(t, l)
			if got := allocatedBytes(t, dir); got > limit {
				t.Fatalf("closed, the log takes %d bytes of disk, want at most %d", got, limit)
			}
		})
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts
// it when the test ends; it skips the test where mounting is not allowed.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// On a file system that fills up, appends fail with ENOSPC instead of the
// process dying of SIGBUS; the log stays usable, appends go on once space
// is freed, and every acknowledged record reads back, also after
// reopening. tmpfs is the strict case: a store into a page it cannot back
// raises SIGBUS, whether through the mapping or a read of a hole.
func TestFullFileSystem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  FlushMode
		zeros bool // reserve by writing zeros, as where fallocate is not supported
	}{
		{"async", FlushAsync, false},
		{"sync", FlushSync, false},
		{"async-zeros", FlushAsync, true},
		{"sync-zeros", FlushSync, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mode := tc.mode
			fs := mountTmpfs(t, 8<<20)
			ballast := filepath.Join(fs, "ballast")
			if err := os.WriteFile(ballast, make([]byte, 2<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(fs, "log")
			o := &Options{SegmentSize: 1 << 20, Flush: mode}
			l := openLog(t, dir, o)
			l.noFallocate.Store(tc.zeros)
			var offs []int64
			add := func(i int) error {
				var off [1]int64
				err := l.Append([][]byte{payload(i, 1000)}, nil, off[:])
				if err == nil {
					offs = append(offs, off[0])
				}
				return err
			}
			var err error
			for i := 0; i < 20000 && err == nil; i++ {
				err = add(i)
			}
			if err == nil {
				t.Fatalf("%d appends of 1,000 bytes fit in an 8 MiB file system", len(offs))
			}
			if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append on a full file system: %v, want ErrNoSpace and ENOSPC", err)
			}
			t.Logf("full after %d records (%d bytes of log): %v", len(offs), l.EndOffset(), err)
			if len(offs) < 3000 {
				t.Fatalf("only %d records fit in 6 MiB", len(offs))
			}
			// Still full: still an error, and no harm done.
			if err := add(len(offs)); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("second append on a full file system: %v, want ENOSPC", err)
			}
			check := func(l *Log) {
				t.Helper()
				for i, off := range offs {
					got, err := l.Read(off, nil)
					if err != nil || !bytes.Equal(got, payload(i, 1000)) {
						t.Fatalf("record %d at %d: %d bytes, %v", i, off, len(got), err)
					}
				}
			}
			check(l)
			if err := os.Remove(ballast); err != nil {
				t.Fatal(err)
			}
			n := len(offs)
			for i := n; i < n+1000; i++ { // the append that failed first
				if err := add(i); err != nil {
					t.Fatalf("append %d after space was freed: %v", i, err)
				}
			}
			check(l)
			closeLog(t, l)
			l = openLog(t, dir, o)
			l.noFallocate.Store(tc.zeros)
			check(l)
			if got := len(scanAll(t, l)); got != len(offs) {
				t.Fatalf("after reopening, scan found %d records, %d were acknowledged", got, len(offs))
			}
			closeLog(t, l)
		})
	}
}

// A writer killed with SIGKILL once the file system is full leaves a log
// that opens on the still full file system without a fault (recovery does
// not read the holes past the end, which tmpfs would have to allocate),
// with every acknowledged record intact, and that takes appends again once
// space is freed.
func TestCrashOnFullFileSystem(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	fs := mountTmpfs(t, 4<<20)
	ballast := filepath.Join(fs, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(fs, "log")
	for _, round := range []struct {
		mode string
		keep int64 // ballast bytes left afterwards, to make room for the next round
	}{{"async", 512 << 10}, {"sync", 0}} {
		mode := round.mode
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvMode+"="+mode, crashEnvSeed+"=1", crashEnvFull+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := map[int64]uint64{}
		full, killed := false, false
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			switch {
			case strings.HasPrefix(line, "ACK "):
				var off int64
				var h uint64
				if _, err := fmt.Sscanf(line, "ACK %d %x\n", &off, &h); err != nil {
					t.Fatalf("bad line %q: %v", line, err)
				}
				acked[off] = h
			case strings.HasPrefix(line, "FULL "):
				if !strings.Contains(line, "no space left on device") {
					t.Fatalf("writer: %s", line)
				}
				full = true
			case strings.HasPrefix(line, "ERR "):
				t.Fatalf("%s: writer: %s", mode, line)
			}
			if full && !killed {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		werr := cmd.Wait()
		if !killed {
			t.Fatalf("%s: writer exited without filling the file system: %v\n%s", mode, werr, stderr.String())
		}
		// Take what little room is left too: a single page is enough to
		// read a hole.
		filler := filepath.Join(fs, "filler")
		fillUp(t, filler)
		o := &Options{SegmentSize: crashSegment}
		check := func(l *Log) {
			t.Helper()
			for off, h := range acked {
				p, err := l.Read(off, nil)
				if err != nil || !selfConsistent(p) || binary.LittleEndian.Uint64(p) != h {
					t.Fatalf("%s: acknowledged record at %d: %v", mode, off, err)
				}
			}
		}
		l, err := Open(dir, o) // still full
		if err != nil {
			t.Fatalf("%s: Open on the full file system: %v", mode, err)
		}
		check(l)
		if err := l.Append([][]byte{[]byte("x")}, nil, nil); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s: append on the full file system after the crash: %v, want ENOSPC", mode, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: killed when full, %d acknowledged records intact", mode, len(acked))
		if err := os.Truncate(ballast, round.keep); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	l := openLog(t, dir, &Options{SegmentSize: crashSegment})
	appendOne(t, l, []byte("after"))
	closeLog(t, l)
}

// fillUp writes the file path until the file system is full.
func fillUp(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
