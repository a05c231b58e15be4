package meta

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const lazySyncChildEnv = "KARMAN_META_LAZY_SYNC_CHILD"

// TestLazySyncChild commits offsets and prints each one once the store
// says it is on disk; it does nothing unless run by TestLazySyncKill.
func TestLazySyncChild(t *testing.T) {
	dir := os.Getenv(lazySyncChildEnv)
	if dir == "" {
		return
	}
	s, err := Open(dir, nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	for off := int64(1); ; off++ {
		if err := s.CommitOffset("g", "T", 0, off); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		mine := s.lazy.writes.Load()
		for s.lazy.synced.Load() < mine {
			time.Sleep(time.Millisecond) // the child only reports; the parent never sleeps on it
		}
		fmt.Println("durable", off)
	}
}

// TestLazySyncKill: offsets committed without waiting for the disk are
// there after a kill -9 of the process once the store has synced them,
// although no later write asked for a sync.
func TestLazySyncKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLazySyncChild$")
	cmd.Env = append(os.Environ(), lazySyncChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// A child that never reports is killed, which ends the scan below.
	stuck := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer stuck.Stop()
	var durable int64
	sc := bufio.NewScanner(out)
	for durable < 5 && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "durable" {
			durable, _ = strconv.ParseInt(f[1], 10, 64)
		} else if len(f) > 0 && f[0] == "error" {
			t.Fatalf("child: %s", sc.Text())
		}
	}
	if durable < 5 {
		t.Fatalf("the child stopped after reporting offset %d durable", durable)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Offset("g", "T", 0)
	if err != nil || got < durable {
		t.Fatalf("after the kill the offset is %d (%v); %d was reported on disk before it", got, err, durable)
	}
}
