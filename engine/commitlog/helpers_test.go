package commitlog

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// logRecorder is a slog handler that keeps messages so that tests can
// assert what was logged.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	r.mu.Lock()
	r.msgs = append(r.msgs, b.String())
	r.mu.Unlock()
	return nil
}

// has reports whether a message containing s was logged.
func (r *logRecorder) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func (r *logRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.msgs, "\n")
}

// openLog opens a log and closes it when the test ends (if the test did not).
func openLog(t testing.TB, dir string, o *Options) *Log {
	t.Helper()
	l, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func closeLog(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// payload returns a deterministic payload of n bytes for record i.
func payload(i, n int) []byte {
	b := make([]byte, n)
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	for j := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = byte(x)
	}
	return b
}

// appendOne appends a single record and returns its offset.
func appendOne(t testing.TB, l *Log, p []byte) int64 {
	t.Helper()
	var offs [1]int64
	if err := l.Append([][]byte{p}, nil, offs[:]); err != nil {
		t.Fatalf("Append: %v", err)
	}
	return offs[0]
}

type scanned struct {
	off, next int64
	payload   []byte
}

// scanAll scans the whole log and returns copies of the records.
func scanAll(t testing.TB, l *Log) []scanned {
	t.Helper()
	var out []scanned
	end, err := l.Scan(l.MinOffset(), func(off, next int64, p []byte) error {
		out = append(out, scanned{off, next, append([]byte(nil), p...)})
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if end != l.EndOffset() {
		t.Fatalf("Scan ended at %d, EndOffset is %d", end, l.EndOffset())
	}
	return out
}

func segPath(dir string, base int64) string {
	return filepath.Join(dir, segmentName(base))
}

// patchFile overwrites bytes of a file of a closed log.
func patchFile(t testing.TB, path string, at int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func readFileAt(t testing.TB, path string, at int64, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	return b
}

// flipBit flips one bit of the byte at log offset off of a closed log.
func flipBit(t testing.TB, dir string, segSize, off int64) {
	t.Helper()
	base := off - off%segSize
	b := readFileAt(t, segPath(dir, base), off-base, 1)
	b[0] ^= 0x10
	patchFile(t, segPath(dir, base), off-base, b)
}

// writeCheckpoint replaces the checkpoint of a closed log.
func writeCheckpoint(t testing.TB, dir string, off, segSize int64) {
	t.Helper()
	var b [checkpointSize]byte
	encodeCheckpoint(b[:], checkpoint{offset: off}, segSize)
	if err := os.WriteFile(filepath.Join(dir, checkpointName), b[:], 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkFrameOnDisk verifies, independently of decodeFrame, that a record
// frame holding p is stored at log offset off of a closed log.
func checkFrameOnDisk(t testing.TB, dir string, segSize, off int64, p []byte) {
	t.Helper()
	base := off - off%segSize
	b := readFileAt(t, segPath(dir, base), off-base, headerSize+len(p))
	if m := binary.LittleEndian.Uint32(b); m != recordMagic {
		t.Fatalf("frame at %d: magic %#x", off, m)
	}
	if n := binary.LittleEndian.Uint32(b[8:]); int(n) != len(p) {
		t.Fatalf("frame at %d: length %d, want %d", off, n, len(p))
	}
	if string(b[headerSize:]) != string(p) {
		t.Fatalf("frame at %d: payload differs", off)
	}
	var o [8]byte
	binary.LittleEndian.PutUint64(o[:], uint64(off))
	want := crc32.Checksum(append(o[:], b[8:]...), crc32.MakeTable(crc32.Castagnoli))
	if got := binary.LittleEndian.Uint32(b[4:]); got != want {
		t.Fatalf("frame at %d: crc %#x, want %#x", off, got, want)
	}
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}
