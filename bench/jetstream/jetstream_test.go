package jetstream

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/bench"
)

func TestPhases(t *testing.T) {
	for _, sync := range []bool{false, true} {
		name := "async-flush"
		if sync {
			name = "sync-always"
		}
		t.Run(name, func(t *testing.T) {
			srv, err := Start(ServerOptions{Dir: t.TempDir(), SyncAlways: sync})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			g, err := New(Options{URL: srv.URL()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			targets := []bench.Target{{System: "nats", Client: "nats.go", Generator: g}}
			var out bytes.Buffer
			p := bench.NewPrinter(&out, true)
			runs := []struct {
				mode bench.Mode
				w    bench.Workload
				want bench.Phase
			}{
				{bench.ModeProduce, bench.Workload{Count: 300, Size: 100, Producers: 3}, bench.PhaseProduce},
				{bench.ModeProduce, bench.Workload{Count: 1000, Size: 100, Producers: 2, Inflight: 50}, bench.PhaseProduceAsync},
				{bench.ModeConsume, bench.Workload{Count: 1001, Size: 100, Producers: 2, Consumers: 3, Batch: 32}, bench.PhaseConsume},
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
				if res.System != "nats" || res.Phase != runs[i].want || res.Count != w.Count || res.Size != 100 || res.MsgsPerSec <= 0 || res.P50us <= 0 || res.P99us < res.P50us {
					t.Errorf("line %d: %s", i, line)
				}
			}
		})
	}
}
