//go:build !race && unix

package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// nodeDir is the Node.js project whose scripts drive the gRPC endpoint
// with the RocketMQ Node.js client (rocketmq-client-nodejs, pinned in its
// package.json and package-lock.json).
const nodeDir = "testdata/node"

// nodeClient is the npm package under test.
const nodeClient = "rocketmq-client-nodejs"

// minNodeMajor is the oldest Node.js major version the scripts run on.
const minNodeMajor = 18

var nodeSetup struct {
	once sync.Once
	err  error
}

// requireNode fails the test unless Node.js and npm are installed; it
// installs the project's locked dependencies with "npm ci" when they are
// missing or another client version than the pinned one is installed.
// The compatibility tests are not optional, so nothing here skips.
func requireNode(t *testing.T) {
	t.Helper()
	nodeSetup.once.Do(func() { nodeSetup.err = setUpNode() })
	if nodeSetup.err != nil {
		t.Fatal(nodeSetup.err)
	}
}

func setUpNode() error {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the gRPC compatibility tests need Node.js %d or later and npm on PATH "+
				"(Debian: apt-get install nodejs npm): %w", minNodeMajor, err)
		}
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return fmt.Errorf("node --version: %w", err)
	}
	version := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNodeMajor {
		return fmt.Errorf("the gRPC compatibility tests need Node.js %d or later, found %s", minNodeMajor, version)
	}
	// Reading the scripts makes them inputs of the test for go test's
	// result cache, so that a changed script runs the tests again.
	scripts, _ := filepath.Glob(filepath.Join(nodeDir, "*.js"))
	for _, f := range append(scripts, filepath.Join(nodeDir, "package-lock.json")) {
		if _, err := os.ReadFile(f); err != nil {
			return err
		}
	}
	want, err := pinnedClient()
	if err != nil {
		return err
	}
	if installedClient() == want {
		return nil
	}
	// Concurrent test processes install one at a time.
	dir, err := os.Open(nodeDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := syscall.Flock(int(dir.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", nodeDir, err)
	}
	defer syscall.Flock(int(dir.Fd()), syscall.LOCK_UN)
	if installedClient() == want {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	npm.Dir = nodeDir
	if out, err := npm.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", nodeDir, err, out)
	}
	if got := installedClient(); got != want {
		return fmt.Errorf("npm ci installed %s %q, package.json pins %q", nodeClient, got, want)
	}
	return nil
}

// pinnedClient returns the client version package.json pins.
func pinnedClient() (string, error) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	data, err := os.ReadFile(filepath.Join(nodeDir, "package.json"))
	if err == nil {
		err = json.Unmarshal(data, &pkg)
	}
	if err != nil {
		return "", fmt.Errorf("%s/package.json: %w", nodeDir, err)
	}
	v := pkg.Dependencies[nodeClient]
	if v == "" {
		return "", fmt.Errorf("%s/package.json does not depend on %s", nodeDir, nodeClient)
	}
	return v, nil
}

// installedClient returns the installed client version, or "".
func installedClient() string {
	var pkg struct {
		Version string `json:"version"`
	}
	data, err := os.ReadFile(filepath.Join(nodeDir, "node_modules", nodeClient, "package.json"))
	if err != nil || json.Unmarshal(data, &pkg) != nil {
		return ""
	}
	return pkg.Version
}

// maxNodeArg is the most parameters a script takes: Linux limits one
// argument to 128 KiB. Large bodies are sent as a short body repeated.
const maxNodeArg = 100 << 10

// nodeTimeout bounds one script unless the test gives another.
const nodeTimeout = 90 * time.Second

// nodeScript is one running scenario script.
type nodeScript struct {
	t       *testing.T
	name    string
	timeout time.Duration
	cmd     *exec.Cmd
	stdout  lockedBuffer
	stderr  lockedBuffer
	done    chan struct{}
	err     error
}

// startNode runs testdata/node/<script>.js against k's gRPC endpoint.
// params are handed to the script as a JSON object; a "deadlineMs" entry
// is added so that the script gives up (and says why) shortly before the
// test would kill it.
func (k *karman) startNode(script string, params map[string]any) *nodeScript {
	return k.startNodeTimeout(script, nodeTimeout, params)
}

func (k *karman) startNodeTimeout(script string, timeout time.Duration, params map[string]any) *nodeScript {
	t := k.t
	t.Helper()
	requireNode(t)
	if params == nil {
		params = map[string]any{}
	}
	params["deadlineMs"] = (timeout - 5*time.Second).Milliseconds()
	arg, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if len(arg) > maxNodeArg {
		t.Fatalf("node %s: %d bytes of parameters, more than one argument may carry (%d)", script, len(arg), maxNodeArg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, "node", script+".js", k.grpc, string(arg))
	cmd.Dir = nodeDir
	// The client also logs to $HOME/logs/rocketmq; keep that in the test's
	// own directory.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if k.nodeTLS != "" {
		cmd.Env = append(cmd.Env, "COMPAT_TLS=1", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH="+k.nodeTLS)
	}
	if k.nodeNamespace != "" {
		cmd.Env = append(cmd.Env, "COMPAT_NAMESPACE="+k.nodeNamespace)
	}
	cmd.WaitDelay = 5 * time.Second
	n := &nodeScript{t: t, name: script, timeout: timeout, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout = &n.stdout
	cmd.Stderr = &n.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("node %s: %v", script, err)
	}
	go func() {
		n.err = cmd.Wait()
		cancel()
		close(n.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-n.done
	})
	return n
}

// wait waits for the script to end and decodes its JSON line into out. It
// fails the test if the script exited with an error or printed no result.
func (n *nodeScript) wait(out any) {
	n.t.Helper()
	<-n.done
	stderr := n.stderr.String()
	if stderr != "" {
		n.t.Logf("node %s stderr:\n%s", n.name, stderr)
	}
	if n.err != nil {
		var ee *exec.ExitError
		if errors.As(n.err, &ee) && !ee.Exited() {
			n.t.Fatalf("node %s was killed after %s (%v)", n.name, n.timeout, n.err)
		}
		n.t.Fatalf("node %s failed: %v", n.name, n.err)
	}
	line := lastLine(n.stdout.String())
	if err := json.Unmarshal([]byte(line), out); err != nil {
		n.t.Fatalf("node %s printed no result (%v):\n%s", n.name, err, n.stdout.String())
	}
}

// node runs a script to its end and decodes its result into out.
func (k *karman) node(script string, params map[string]any, out any) {
	k.t.Helper()
	k.startNode(script, params).wait(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace([]byte(lines[i])); len(l) > 0 && l[0] == '{' {
			return string(l)
		}
	}
	return ""
}
