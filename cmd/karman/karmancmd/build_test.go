package karmancmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/builder"
	"github.com/karmanmq/karman/server"
)

// buildGOFLAGS is added to GOFLAGS for the builds of the tests.
var buildGOFLAGS string

// runBuild runs "karman build args..." in this process.
func runBuild(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if buildGOFLAGS != "" {
		t.Setenv("GOFLAGS", strings.TrimSpace(os.Getenv("GOFLAGS")+" "+buildGOFLAGS))
	}
	root := New(&server.Registry{})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"build"}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// TestBuildRefusesBadInput checks that bad input is a clear error and
// writes no binary.
func TestBuildRefusesBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "karman")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		err  error
		want []string
	}{
		{"no output", []string{"--with", "example.com/karman-echo"}, nil, builder.ErrNoOutput, []string{"--output"}},
		{"unknown module id", []string{"-o", out, "--without", "frontend.amqp"}, nil, builder.ErrUnknownModule,
			[]string{`"frontend.amqp"`, "frontend.grpc, frontend.mqtt, frontend.namesrv, frontend.remoting"}},
		{"invalid module path", []string{"-o", out, "--with", "example.com/karman echo"}, nil, builder.ErrInvalidPath,
			[]string{"--with", `"example.com/karman echo"`, "' '"}},
		{"file path as module", []string{"-o", out, "--with", "./testdata/echo"}, nil, builder.ErrInvalidPath,
			[]string{"PATH=DIR"}},
		{"no local directory", []string{"-o", out, "--with", "example.com/karman-echo=./testdata/absent"}, nil, builder.ErrLocalModule,
			[]string{"example.com/karman-echo=./testdata/absent", "no such file"}},
		{"no go.mod", []string{"-o", out, "--with", "example.com/karman-echo=./testdata"}, nil, builder.ErrLocalModule,
			[]string{"./testdata has no go.mod"}},
		{"another module", []string{"-o", out, "--with", "example.com/other=./testdata/echo"}, nil, builder.ErrLocalModule,
			[]string{`declares module "example.com/karman-echo"`, "example.com/other"}},
		{"no source tree", []string{"-o", out, "--src", t.TempDir()}, nil, builder.ErrNoSource,
			[]string{"no go.work"}},
		// With no proxy the go command refuses every version, as a
		// proxy refuses one it does not have.
		{"version refused", []string{"-o", out, "--with", "example.com/karman-absent@v1.2.3"}, []string{"GOPROXY=off"},
			builder.ErrGoCommand, []string{"module example.com/karman-absent@v1.2.3", "go get example.com/karman-absent@v1.2.3", "GOPROXY=off"}},
		{"karman version refused", []string{"-o", out, "--karman-version", "v0.0.1"}, []string{"GOPROXY=off"},
			builder.ErrGoCommand, []string{"module github.com/karmanmq/karman/cmd/karman@v0.0.1", "GOPROXY=off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			_, _, err := runBuild(t, tc.args...)
			if !errors.Is(err, tc.err) {
				t.Fatalf("build %v: %v, want %v", tc.args, err, tc.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("build %v: error %q lacks %q", tc.args, err, w)
				}
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("build %v wrote %s (%v)", tc.args, out, err)
			}
		})
	}
}

// TestBuildWithThirdPartyModule builds karman with the echo module of
// testdata, a Go module of its own, and runs it: list-modules shows it
// with the standard set, and serve starts it on its own address.
func TestBuildWithThirdPartyModule(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "karman-echo")
	start := time.Now()
	if _, stderr, err := runBuild(t, "-v", "--with", "example.com/karman-echo=./testdata/echo", "--output", bin); err != nil {
		t.Fatalf("build: %v\n%s", err, stderr)
	} else if !strings.Contains(stderr, "go build -o "+bin) || !strings.Contains(stderr, "go mod tidy") {
		t.Errorf("build -v printed no go commands:\n%s", stderr)
	}
	t.Logf("built in %v", time.Since(start).Round(time.Millisecond))

	mods := listBuilt(t, bin)
	for _, id := range []string{"frontend.echo", "frontend.grpc", "frontend.namesrv", "frontend.remoting"} {
		if !strings.Contains(mods, id+" ") {
			t.Errorf("list-modules lacks %s:\n%s", id, mods)
		}
	}
	if !strings.Contains(mods, "frontend.echo (devel) example.com/karman-echo\n") {
		t.Errorf("list-modules:\n%s", mods)
	}

	addrs := serveBuilt(t, bin, "--grpc-addr", "127.0.0.1:0", "--mqtt-addr", "127.0.0.1:0", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off", "--echo-addr", "127.0.0.1:0", "--echo-prefix", "echo: ")
	for _, name := range []string{"echo", "broker", "namesrv", "grpc", "http"} {
		if addrs[name] == "" {
			t.Errorf("serve announced no %s listener: %v", name, addrs)
		}
	}
	c, err := net.DialTimeout("tcp", addrs["echo"], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("hello\nkarman\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for _, want := range []string{"echo: hello\n", "echo: karman\n"} {
		line, err := r.ReadString('\n')
		if line != want {
			t.Errorf("echo port answered %q (%v), want %q", line, err, want)
		}
	}
}

// TestBuildWithoutGRPC builds karman without the gRPC front-end and the
// process plugins (which speak gRPC to their plugins): the binary holds no
// gRPC module, list-modules lacks both and serve has no --grpc-addr.
func TestBuildWithoutGRPC(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "karman-nogrpc")
	if _, stderr, err := runBuild(t, "--without", "frontend.grpc", "--without", "plugin.process", "-o", bin); err != nil {
		t.Fatalf("build: %v\n%s", err, stderr)
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	if !strings.Contains(string(out), "github.com/karmanmq/karman/server") {
		t.Fatalf("go version -m lists no karman module:\n%s", out)
	}
	// GOFLAGS reaches the go command.
	if strings.Contains(buildGOFLAGS, "-race") != strings.Contains(string(out), "\tbuild\t-race=true\n") {
		t.Errorf("GOFLAGS %q, the binary's build settings:\n%s", buildGOFLAGS, out)
	}
	for _, mod := range []string{"google.golang.org/grpc", "github.com/karmanmq/karman/protocol/grpc"} {
		if strings.Contains(string(out), "\t"+mod+"\t") {
			t.Errorf("the binary holds %s", mod)
		}
	}

	mods := listBuilt(t, bin)
	if strings.Contains(mods, "frontend.grpc") || strings.Contains(mods, "plugin.process") || !strings.Contains(mods, "frontend.remoting ") || !strings.Contains(mods, "frontend.namesrv ") {
		t.Errorf("list-modules:\n%s", mods)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg, err := exec.CommandContext(ctx, bin, "serve", "--grpc-addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "unknown flag: --grpc-addr") {
		t.Errorf("serve --grpc-addr: %v\n%s", err, msg)
	}
	addrs := serveBuilt(t, bin, "--mqtt-addr", "127.0.0.1:0", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off")
	if addrs["grpc"] != "" || addrs["broker"] == "" || addrs["namesrv"] == "" {
		t.Errorf("serve announced %v", addrs)
	}
}

// listBuilt returns what bin's list-modules prints.
func listBuilt(t *testing.T, bin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "list-modules").Output()
	if err != nil {
		t.Fatalf("list-modules: %v", err)
	}
	return string(out)
}

// serveBuilt starts "bin serve" on loopback ports picked by the system,
// with extra args, waits for it to be ready and returns the announced
// addresses by listener name. Cleanup stops it with SIGTERM and checks
// that it exits cleanly.
func serveBuilt(t *testing.T, bin string, args ...string) map[string]string {
	t.Helper()
	args = append([]string{"serve", "--data", t.TempDir(), "--http-addr", "127.0.0.1:0",
		"--broker-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0"}, args...)
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KARMAN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{})
	ready := make(chan map[string]string, 1)
	go func() {
		defer close(done)
		addrs := map[string]string{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if name, addr, ok := strings.Cut(strings.TrimPrefix(line, "karman: "), " listening on "); ok {
				addrs[name] = addr
			}
			if line == "karman: ready" {
				ready <- addrs
			}
		}
		waitErr = cmd.Wait()
	}()
	// stop ends the process: SIGTERM, then SIGKILL after 30s.
	stop := func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			return waitErr
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			return errors.New("no exit within 30s of SIGTERM")
		}
	}
	select {
	case addrs := <-ready:
		t.Cleanup(func() {
			if err := stop(); err != nil {
				t.Errorf("serve: %v\n%s", err, stderr.String())
			}
		})
		return addrs
	case <-done:
		t.Fatalf("serve exited before ready: %v\n%s", waitErr, stderr.String())
	case <-time.After(30 * time.Second):
		err := stop()
		t.Fatalf("serve not ready within 30s (%v)\n%s", err, stderr.String())
	}
	return nil
}
