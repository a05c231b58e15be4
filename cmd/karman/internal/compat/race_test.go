//go:build race && unix

package compat

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The Go client has data races of its own (in its shutdown and its
// process queues), so under the race detector the compatibility tests run
// in a child "go test" built without it, and TestBinary there drives a
// karman binary built with it: the server is checked for races under the
// real client's load, the client is not.
func TestCompatibilityWithoutRaceInClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a second test binary")
	}
	bin := filepath.Join(t.TempDir(), "karman")
	build := exec.Command("go", "build", "-race", "-o", bin, "../..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build karman with -race: %v\n%s", err, out)
	}
	run := exec.Command("go", "test", "-count=1", ".")
	run.Env = append(os.Environ(), "KARMAN_COMPAT_BINARY="+bin)
	out, err := run.CombinedOutput()
	t.Logf("go test (without -race):\n%s", out)
	if err != nil {
		t.Fatalf("compatibility tests failed: %v", err)
	}
}
