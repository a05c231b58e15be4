//go:build unix

package engine

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const historyChildEnv = "KARMAN_ENGINE_HISTORY_CHILD"

// TestHistoryCrashChild records a group's history, says "ready" once a
// save holds it, then records into another group without pause while the
// history is saved every millisecond, until it is killed. It does
// nothing unless run by TestDeliveriesCrash.
func TestHistoryCrashChild(t *testing.T) {
	dir := os.Getenv(historyChildEnv)
	if dir == "" {
		return
	}
	deliverySaveInterval = time.Millisecond
	e, err := Open(dir, &Options{AutoCreateGroups: true, SegmentSize: 1 << 20})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if len(e.history.all("G")) == 0 {
		for i := range 4 {
			e.history.add("G", Delivery{Kind: DeliveryPop, Topic: "T", From: int64(i), To: int64(i), Attempt: 1, Client: "c"})
		}
	}
	path := filepath.Join(dir, deliveryFile)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if g, err := decodeDeliveries(b); err == nil && len(g["G"]) >= 4 {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("ready")
	for i := int64(1); ; i++ {
		e.history.add("H", Delivery{Kind: DeliveryCommit, Topic: "T", To: i})
	}
}

// TestDeliveriesCrash kills a process that saves its history all the
// time with SIGKILL, at a different moment each round, and reopens the
// engine: the file always decodes (a save is never torn) and holds the
// history saved before the kill.
func TestDeliveriesCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes; skipped with -short")
	}
	dir := t.TempDir()
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryCrashChild$")
		cmd.Env = append(os.Environ(), historyChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		ready := false
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "error") {
				t.Fatalf("child: %s", line)
			} else if line == "ready" {
				ready = true
				break
			}
		}
		if !ready {
			cmd.Wait()
			t.Fatalf("round %d: the child ended before its history was saved", round)
		}
		// Saves run every millisecond: a kill a few of them later lands
		// in one or between two.
		time.Sleep(time.Duration(5+round*7) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		b, err := os.ReadFile(filepath.Join(dir, deliveryFile))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		groups, err := decodeDeliveries(b)
		if err != nil {
			t.Fatalf("round %d: the history file after a kill: %v", round, err)
		}
		if len(groups["G"]) != 4 {
			t.Fatalf("round %d: group G has %d records, want the 4 saved before the kill", round, len(groups["G"]))
		}
		e := openTest(t, dir, nil)
		if got := e.history.all("G"); len(got) != 4 || got[3].From != 3 || got[3].Client != "c" {
			t.Fatalf("round %d: G's history after reopening: %+v", round, got)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
