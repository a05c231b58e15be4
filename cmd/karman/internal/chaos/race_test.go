//go:build race && unix

package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The Go client has data races of its own, so under the race detector
// the harness's cluster tests run in a child "go test" built without it
// (the harness's own logic is checked with -race by the tests without
// a cluster, which run here).
func TestClusterRunsWithoutRaceInClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a second test binary")
	}
	// The package's files are inputs of this test for go test's cache.
	inputs, _ := filepath.Glob("*.go")
	for _, f := range inputs {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	run := exec.Command("go", "test", "-count=1", "-run", "TestKillMaster|TestPauseMaster|TestPartitionMaster|TestKillControllerLeader|TestTruncateReplica|TestKillReplicaOnLoopback", ".")
	out, err := run.CombinedOutput()
	t.Logf("go test (without -race):\n%s", out)
	if err != nil {
		t.Fatalf("the cluster tests failed: %v", err)
	}
}
