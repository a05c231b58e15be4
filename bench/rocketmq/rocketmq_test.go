package rocketmq

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/internal/karmantest"
	"github.com/karmanmq/karman/engine"
)

func TestPhases(t *testing.T) {
	c := karmantest.Start(t, engine.FlushAsync)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	g, err := New(ctx, Options{NameServer: c.NameServer, Queues: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	targets := []bench.Target{{System: "karman", Client: "rocketmq", Generator: g}}
	var out bytes.Buffer
	p := bench.NewPrinter(&out, true)
	runs := []struct {
		mode bench.Mode
		w    bench.Workload
		want bench.Phase
	}{
		{bench.ModeProduce, bench.Workload{Topic: "R", Count: 200, Size: 100, Producers: 2}, bench.PhaseProduce},
		{bench.ModeProduce, bench.Workload{Topic: "R", Count: 500, Size: 100, Producers: 2, Inflight: 20}, bench.PhaseProduceAsync},
		{bench.ModeConsume, bench.Workload{Topic: "R", Count: 501, Size: 100, Producers: 2, Batch: 32}, bench.PhaseConsume},
	}
	for _, r := range runs {
		if err := bench.Run(ctx, r.mode, r.w, targets, p); err != nil {
			t.Fatalf("%s: %v", r.want, err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(runs) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(runs), out.String())
	}
	for i, line := range lines {
		var res bench.Result
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		w := runs[i].w
		if res.System != "karman" || res.Client != "rocketmq" || res.Phase != runs[i].want || res.Count != w.Count || res.MsgsPerSec <= 0 || res.P50us <= 0 {
			t.Errorf("line %d: %s", i, line)
		}
	}
}
