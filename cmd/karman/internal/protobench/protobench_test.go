package protobench

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/server"
	brokerfe "github.com/karmanmq/karman/server/modules/broker"
	grpcfe "github.com/karmanmq/karman/server/modules/grpc"
	namesrvfe "github.com/karmanmq/karman/server/modules/namesrv"
)

// runBench runs "karman-bench <args>" and returns standard output.
func runBench(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := New("karman-bench")
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		t.Logf("stderr:\n%s", errOut.String())
	}
	return out.String(), err
}

// useModules makes the in-process server of the test offer only infos.
func useModules(t *testing.T, infos ...server.ModuleInfo) {
	reg := &server.Registry{}
	for _, mi := range infos {
		reg.Register(mi)
	}
	old := benchModules
	benchModules = func() *server.Registry { return reg }
	t.Cleanup(func() { benchModules = old })
}

func TestBenchProtocolInProcess(t *testing.T) {
	useModules(t, namesrvfe.Info, brokerfe.Info)

	for _, tc := range []struct {
		args   []string
		phase  bench.Phase
		client string
	}{
		{[]string{"produce", "--count", "400", "--producers", "4", "--size", "512"}, bench.PhaseProduce, "karman"},
		{[]string{"produce", "--count", "400", "--producers", "2", "--inflight", "20", "--size", "512", "--flush", "sync"}, bench.PhaseProduceAsync, "karman"},
		{[]string{"consume", "--count", "400", "--producers", "2", "--size", "512", "--queues", "4"}, bench.PhaseConsume, "karman"},
		{[]string{"produce", "--count", "100", "--producers", "2", "--size", "512", "--client", "rocketmq"}, bench.PhaseProduce, "rocketmq"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runBench(t, append(tc.args, "--peer", "nats", "--json", "--data", t.TempDir())...)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 {
				t.Fatalf("want one line per system, got:\n%s", out)
			}
			for i, system := range []string{"karman", "nats"} {
				var r bench.Result
				if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
					t.Fatalf("%v: %s", err, lines[i])
				}
				if r.System != system || r.Phase != tc.phase || r.Count < 100 || r.Size != 512 || r.MsgsPerSec <= 0 || r.P99us <= 0 {
					t.Errorf("line %d: %s", i, lines[i])
				}
				if system == "karman" && r.Client != tc.client {
					t.Errorf("client %q, want %q", r.Client, tc.client)
				}
			}
		})
	}
}

// TestBenchProtocolGRPC runs both protocols against one in-process Karman,
// as the comparison of the two is measured.
func TestBenchProtocolGRPC(t *testing.T) {
	useModules(t, namesrvfe.Info, brokerfe.Info, grpcfe.Info)

	for _, tc := range []struct {
		args  []string
		phase bench.Phase
	}{
		{[]string{"produce", "--count", "400", "--producers", "4", "--size", "512"}, bench.PhaseProduce},
		{[]string{"consume", "--count", "400", "--producers", "2", "--size", "512", "--queues", "4"}, bench.PhaseConsume},
		{[]string{"produce", "--count", "400", "--producers", "4", "--size", "512", "--client", "grpc-go"}, bench.PhaseProduce},
		{[]string{"consume", "--count", "400", "--producers", "2", "--size", "512", "--queues", "4", "--client", "grpc-go"}, bench.PhaseConsume},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runBench(t, append(tc.args, "--protocol", "grpc", "--peer", "remoting", "--json", "--data", t.TempDir())...)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 {
				t.Fatalf("want one line per protocol, got:\n%s", out)
			}
			for i, protocol := range []string{"grpc", "remoting"} {
				var r bench.Result
				if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
					t.Fatalf("%v: %s", err, lines[i])
				}
				if r.System != "karman" || r.Protocol != protocol || r.Phase != tc.phase || r.Count != 400 || r.Size != 512 || r.MsgsPerSec <= 0 || r.P99us <= 0 {
					t.Errorf("line %d: %s", i, lines[i])
				}
				wantClient := "karman"
				if protocol == "grpc" && slices.Contains(tc.args, "grpc-go") {
					wantClient = "grpc-go"
				}
				if r.Client != wantClient {
					t.Errorf("line %d: client %q, want %q", i, r.Client, wantClient)
				}
			}
		})
	}
}

func TestBenchProtocolTable(t *testing.T) {
	useModules(t, namesrvfe.Info, brokerfe.Info)
	out, err := runBench(t, "produce", "--count", "50", "--size", "64")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "system") || !strings.HasPrefix(lines[1], "karman      produce") {
		t.Errorf("table:\n%s", out)
	}
}

func TestBenchProtocolFlags(t *testing.T) {
	for _, args := range [][]string{
		{"produce", "--protocol", "kafka"},
		{"produce", "--peer", "remoting"},
		{"produce", "--protocol", "grpc", "--peer", "remoting", "--addr", "127.0.0.1:8081"},
		{"produce", "--client", "java"},
		{"consume", "--peer", "kafka"},
		{"produce", "--flush", "never"},
		{"produce", "--count", "0"},
		{"produce", "--inflight", "-1"},
		{"produce", "--addr", "127.0.0.1:9876", "--data", "/nonexistent"},
	} {
		if _, err := runBench(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	// Without the front-ends compiled in, only --addr works.
	useModules(t)
	if _, err := runBench(t, "produce", "--count", "1"); err == nil || !strings.Contains(err.Error(), "--addr") {
		t.Errorf("no front-ends: %v", err)
	}
}
