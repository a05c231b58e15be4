//go:build unix

package meta

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const holdEnv = "KARMAN_META_HOLD_DIR"

// A store whose directory another process holds is refused with an error
// that says so, not with the lock's errno alone. The other process is this
// test binary, run again: it opens the store, says so, and waits until its
// standard input closes.
func TestOpenInUse(t *testing.T) {
	if dir := os.Getenv(holdEnv); dir != "" {
		s, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		os.Stdout.WriteString("held\n")
		bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes it
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenInUse$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "held" {
	}
	go func() {
		for sc.Scan() {
		}
	}()

	_, err = Open(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("Open of a directory another process holds = %v, want an error saying it is in use", err)
	}
}
