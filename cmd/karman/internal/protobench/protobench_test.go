package protobench

import (
	"bytes"
	"encoding/json"
	"os/exec"
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

// TestBenchMQTTPeer runs "mqtt" against a mosquitto it starts, every shape
// small, and checks one JSON line per phase with the comparison fields.
func TestBenchMQTTPeer(t *testing.T) {
	if _, err := exec.LookPath("mosquitto"); err != nil {
		if _, err := exec.LookPath("/usr/sbin/mosquitto"); err != nil {
			t.Skip("mosquitto is not installed")
		}
	}
	out, err := runBench(t, "mqtt", "--peer", "mosquitto", "--count", "1000", "--pairs", "2", "--fanout-subscribers", "10",
		"--fanout-count", "20", "--shared-publishers", "4", "--shared-subscribers", "2", "--qos", "1",
		"--shapes", "p2p,fanout,shared")
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		for _, k := range []string{"system", "phase", "msgs_per_sec", "p50_us", "p99_us", "rss_mb"} {
			if _, ok := r[k]; !ok {
				t.Errorf("no %s in %s", k, line)
			}
		}
		if r["system"] != "mosquitto" || r["msgs_per_sec"].(float64) <= 0 || r["rss_mb"].(float64) <= 0 {
			t.Errorf("implausible: %s", line)
		}
		if r["phase"] != "p2p_qos0" && r["lost"].(float64) != 0 {
			t.Errorf("QoS 1 lost messages: %s", line)
		}
		phases = append(phases, r["phase"].(string))
	}
	if want := []string{"p2p_qos0", "p2p_qos1", "fanout", "shared"}; !slices.Equal(phases, want) {
		t.Fatalf("phases %v, want %v", phases, want)
	}
	if _, err := runBench(t, "mqtt"); err == nil || !strings.Contains(err.Error(), "--addr") {
		t.Fatalf("without a broker: %v", err)
	}
	if _, err := runBench(t, "mqtt", "--peer", "mosquitto", "--shapes", "p2p,nope"); err == nil {
		t.Fatal("unknown shape accepted")
	}
}

// bench mqtt's progress line names the system and the shape running, on
// stderr; stdout keeps the results alone.
func TestBenchMQTTProgressLine(t *testing.T) {
	if _, err := exec.LookPath("mosquitto"); err != nil {
		if _, err := exec.LookPath("/usr/sbin/mosquitto"); err != nil {
			t.Skip("mosquitto is not installed")
		}
	}
	root := New("karman-bench")
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"mqtt", "--peer", "mosquitto", "--shapes", "p2p", "--count", "200", "--pairs", "1", "--progress"})
	if err := root.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "bench mqtt: mosquitto p2p") {
		t.Errorf("no progress line on stderr:\n%q", errOut.String())
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "{") {
		t.Errorf("stdout %q, want the two p2p results alone", out.String())
	}
}

// The progress line goes to stderr only on a terminal or with --progress:
// a buffer gets none, unless asked; stdout stays the results alone.
func TestBenchProgressLine(t *testing.T) {
	useModules(t, namesrvfe.Info, brokerfe.Info)
	for _, tc := range []struct {
		flags []string
		drawn bool
	}{
		{nil, false},
		{[]string{"--progress"}, true},
	} {
		root := New("karman-bench")
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"produce", "--count", "50", "--size", "64", "--json", "--data", t.TempDir()}, tc.flags...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v\n%s", tc.flags, err, errOut.String())
		}
		if drawn := strings.Contains(errOut.String(), "bench produce: karman (1 of 1), 50 messages"); drawn != tc.drawn {
			t.Errorf("%v: progress line drawn %v, want %v; stderr:\n%q", tc.flags, drawn, tc.drawn, errOut.String())
		}
		var r bench.Result
		if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &r) != nil || r.Count != 50 {
			t.Errorf("%v: stdout %q, want one result", tc.flags, out.String())
		}
	}
}
