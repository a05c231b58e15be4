//go:build race && unix

package compat

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	// Linking what the child tests link makes a change to it a change of
	// this test binary, which go test's result cache sees.
	_ "github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

// The Go client has data races of its own (in its shutdown and its
// process queues), so under the race detector the compatibility tests run
// in a child "go test" built without it, and TestBinary there drives a
// karman binary built with it: the server is checked for races under the
// real client's load, the client is not. The gRPC scenarios of the
// Node.js client run in the child too, and against the race-built binary
// in TestGRPCBinary.
func TestCompatibilityWithoutRaceInClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a second test binary")
	}
	// The child's inputs are inputs of this test for go test's result
	// cache: the package's files and the Node.js scripts.
	inputs, _ := filepath.Glob("*.go")
	scripts, _ := filepath.Glob(filepath.Join("testdata", "node", "*.js"))
	for _, f := range append(append(inputs, scripts...), filepath.Join("testdata", "node", "package-lock.json")) {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
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
		t.Fatalf("compatibility tests failed: %v\n%s", err, failures(out))
	}
}

// failures picks out of a go test output the failed tests' lines and
// what they logged, leaving out the clients' own log lines, so that the
// reason for a failure ends the output however long the log before it.
func failures(out []byte) string {
	var b strings.Builder
	inFailure := false
	for line := range strings.Lines(string(out)) {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "--- FAIL"), strings.HasPrefix(trimmed, "panic:"):
			inFailure = true
		case !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t"):
			inFailure = false
		}
		if inFailure && !strings.HasPrefix(trimmed, "time=") {
			b.WriteString(line)
		}
	}
	if b.Len() == 0 {
		return "(no failed test named; see the output above)"
	}
	return "failed:\n" + b.String()
}
