//go:build linux

package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// A namespace left by a harness process that died is removed by the next
// run; one of a live process stays.
func TestRemoveStale(t *testing.T) {
	if err := NetnsSupport(); err != nil {
		t.Skipf("needs namespaces: %v", err)
	}
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s-kctest-%d-c1", nsPrefix, dead.Process.Pid)
	live := fmt.Sprintf("%s-kctest-%d-c1", nsPrefix, 1)
	for _, ns := range []string{stale, live} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	removeStale(ctx)
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), stale) {
		t.Errorf("the namespace of a dead harness is still there:\n%s", out)
	}
	if !strings.Contains(string(out), live) {
		t.Errorf("the namespace of a live harness (pid 1) was removed:\n%s", out)
	}
}
