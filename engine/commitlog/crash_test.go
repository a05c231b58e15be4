package commitlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash test re-runs the test binary as a writer process (TestCrashChild)
// and kills it with SIGKILL at random points.
const (
	crashEnvDir  = "COMMITLOG_CRASH_DIR"
	crashEnvMode = "COMMITLOG_CRASH_MODE"
	crashEnvSeed = "COMMITLOG_CRASH_SEED"
	// crashEnvFull makes the writer report ErrNoSpace with a line "FULL"
	// and stop that goroutine, instead of exiting.
	crashEnvFull = "COMMITLOG_CRASH_FULL"
	crashSegment = 64 << 10
	crashRounds  = 5
)

// crashPayload returns a payload of n bytes (at least 16) taken from pool,
// made unique by seq, whose first 8 bytes are the CRC-64 of the rest, so
// that any record can be checked on its own.
func crashPayload(pool []byte, rng *rand.Rand, seq uint64, n int) []byte {
	p := make([]byte, 16+n)
	binary.LittleEndian.PutUint64(p[8:], seq)
	copy(p[16:], pool[rng.IntN(len(pool)-n):])
	binary.LittleEndian.PutUint64(p, crc64.Checksum(p[8:], crcTable))
	return p
}

var crcTable = crc64.MakeTable(crc64.ECMA)

func selfConsistent(p []byte) bool {
	return len(p) >= 16 && binary.LittleEndian.Uint64(p) == crc64.Checksum(p[8:], crcTable)
}

// TestCrashChild is the writer process of TestCrash; it does nothing when
// run on its own. Four goroutines append batches and print one line per
// acknowledged record: "ACK <offset> <payload checksum>". It runs until
// killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("the writer process of TestCrash")
	}
	mode := FlushAsync
	if os.Getenv(crashEnvMode) == "sync" {
		mode = FlushSync
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashEnvSeed), 10, 64)
	out := bufio.NewWriter(os.Stdout)
	l, err := Open(dir, &Options{SegmentSize: crashSegment, Flush: mode, FlushInterval: 3 * time.Millisecond})
	if err != nil {
		fmt.Fprintf(out, "ERR open: %v\n", err)
		out.Flush()
		os.Exit(2)
	}
	// Never outlive the parent by much.
	time.AfterFunc(time.Minute, func() { os.Exit(3) })
	var mu sync.Mutex
	for w := 0; w < 4; w++ {
		go func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			pool := make([]byte, 64<<10)
			for i := range pool {
				pool[i] = byte(rng.Uint32())
			}
			var offs [8]int64
			for seq := uint64(w) << 48; ; seq++ {
				recs := make([][]byte, 1+rng.IntN(8))
				for k := range recs {
					recs[k] = crashPayload(pool, rng, seq, rng.IntN(3000))
				}
				err := l.Append(recs, nil, offs[:len(recs)])
				mu.Lock()
				if errors.Is(err, ErrNoSpace) && os.Getenv(crashEnvFull) != "" {
					fmt.Fprintf(out, "FULL %v\n", err)
					out.Flush()
					mu.Unlock()
					return
				}
				if err != nil {
					fmt.Fprintf(out, "ERR append: %v\n", err)
					out.Flush()
					os.Exit(2)
				}
				for k, p := range recs {
					fmt.Fprintf(out, "ACK %d %x\n", offs[k], binary.LittleEndian.Uint64(p))
				}
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestCrash kills a writer process at random points, several times over the
// same log, and checks after each kill that every acknowledged record is
// readable and intact and that Scan yields only whole records. The writer
// reports acknowledgements through a pipe, which is also what decides when
// to kill: no sleeps.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	acked := map[int64]uint64{} // offset -> checksum of every acknowledged record
	start := time.Now()
	for round := 0; round < crashRounds; round++ {
		mode := "async"
		if round%2 == 1 {
			mode = "sync"
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			crashEnvDir+"="+dir, crashEnvMode+"="+mode, crashEnvSeed+"="+strconv.FormatUint(seed+uint64(round), 10))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAt := 1 + rng.IntN(3000)
		r := bufio.NewReader(stdout)
		n, killed := 0, false
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break // EOF once the child is dead; a partial last line was never a whole acknowledgement
			}
			var off int64
			var h uint64
			switch {
			case strings.HasPrefix(line, "ACK "):
				if _, err := fmt.Sscanf(line, "ACK %d %x\n", &off, &h); err != nil {
					t.Fatalf("bad line %q: %v", line, err)
				}
				if prev, ok := acked[off]; ok && prev != h {
					t.Fatalf("round %d: offset %d acknowledged twice with different records", round, off)
				}
				acked[off] = h
				n++
			case strings.HasPrefix(line, "ERR "):
				t.Fatalf("round %d: writer: %s", round, line)
			}
			if !killed && n >= killAt {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		werr := cmd.Wait()
		if !killed {
			t.Fatalf("round %d: writer exited by itself: %v\n%s", round, werr, stderr.String())
		}
		if strings.Contains(stderr.String(), "DATA RACE") {
			t.Fatalf("round %d: writer:\n%s", round, stderr.String())
		}

		rec := &logRecorder{}
		l, err := Open(dir, &Options{SegmentSize: crashSegment, Logger: slog.New(rec)})
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		for off, h := range acked {
			p, err := l.Read(off, nil)
			if err != nil {
				t.Fatalf("round %d (%s, killed after %d acks): acknowledged record at %d: %v", round, mode, n, off, err)
			}
			if !selfConsistent(p) || binary.LittleEndian.Uint64(p) != h {
				t.Fatalf("round %d: acknowledged record at %d differs", round, off)
			}
		}
		seen := 0
		if _, err := l.Scan(l.MinOffset(), func(off, next int64, p []byte) error {
			if !selfConsistent(p) {
				t.Fatalf("round %d: Scan yielded a torn record at %d", round, off)
			}
			if _, ok := acked[off]; ok {
				seen++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if seen != len(acked) {
			t.Fatalf("round %d: Scan saw %d of %d acknowledged records", round, seen, len(acked))
		}
		if cs := l.Corruptions(); len(cs) != 0 {
			t.Fatalf("round %d: a kill left corruption: %v", round, cs)
		}
		t.Logf("round %d (%s): killed after %d acks; %d acknowledged records intact, end %d, torn tail truncated: %v",
			round, mode, n, len(acked), l.EndOffset(), rec.has("truncated torn tail"))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rounds in %v", crashRounds, time.Since(start))
}
