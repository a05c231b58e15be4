package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/bench/latency"
)

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		total int64
		n     int
	}{{10, 3}, {1, 4}, {1_000_000, 16}, {7, 7}, {0, 2}} {
		var sum int64
		for i := range tc.n {
			s := Share(tc.total, tc.n, i)
			if s < tc.total/int64(tc.n) || s > tc.total/int64(tc.n)+1 {
				t.Errorf("Share(%d, %d, %d) = %d", tc.total, tc.n, i, s)
			}
			sum += s
		}
		if sum != tc.total {
			t.Errorf("shares of %d over %d add up to %d", tc.total, tc.n, sum)
		}
	}
}

func TestWorkloadDefaultsAndValidate(t *testing.T) {
	var w Workload
	w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	if w.Topic != DefaultTopic || w.Size != DefaultSize || w.Count != DefaultCount || w.Producers != 1 || w.Inflight != 1 || w.Batch != DefaultBatch || w.Flush != "async" {
		t.Errorf("defaults: %+v", w)
	}
	if w.ProducePhase() != PhaseProduce {
		t.Errorf("inflight 1 is phase %s", w.ProducePhase())
	}
	w.Inflight = 2
	if w.ProducePhase() != PhaseProduceAsync {
		t.Errorf("inflight 2 is phase %s", w.ProducePhase())
	}
	for _, bad := range []func(*Workload){
		func(w *Workload) { w.Topic = "" },
		func(w *Workload) { w.Size = 0 },
		func(w *Workload) { w.Count = -1 },
		func(w *Workload) { w.Producers = 0 },
		func(w *Workload) { w.Inflight = 0 },
		func(w *Workload) { w.Batch = 0 },
		func(w *Workload) { w.Consumers = -1 },
	} {
		v := w
		bad(&v)
		if v.Validate() == nil {
			t.Errorf("%+v validates", v)
		}
	}
	if b := (&Workload{Size: 30}).Body(); len(b) != 30 || b[0] != 'a' || b[26] != 'a' {
		t.Errorf("body %q", b)
	}
}

// fixed is a Generator that reports the same measurement every time.
type fixed struct {
	m   Measurement
	err error
}

func (f fixed) Produce(context.Context, Workload) (Measurement, error) { return f.m, f.err }
func (f fixed) Consume(context.Context, Workload) (Measurement, error) { return f.m, f.err }

func fixedMeasurement() Measurement {
	h := new(latency.Histogram)
	for i := range 100 {
		h.Record(time.Duration(i+1) * 10 * time.Microsecond)
	}
	return Measurement{Messages: 5000, Elapsed: 250 * time.Millisecond, Latency: h, Consumers: 4}
}

func TestRunJSON(t *testing.T) {
	var out bytes.Buffer
	targets := []Target{
		{System: "karman", Client: "karman", Protocol: "remoting", Generator: fixed{m: fixedMeasurement()}},
		{System: "nats", Client: "nats.go", Protocol: "nats", Generator: fixed{m: fixedMeasurement()}},
	}
	w := Workload{Count: 5000, Producers: 16, Inflight: 8}
	if err := Run(context.Background(), ModeProduce, w, targets, NewPrinter(&out, true)); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), ModeConsume, w, targets[:1], NewPrinter(&out, true)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`{"system":"karman","phase":"produce_async","msgs_per_sec":20000,"p50_us":500,"p99_us":990,"count":5000,"size":1024,"producers":16,"inflight":8,"client":"karman","protocol":"remoting","flush":"async","mb_per_sec":20.5,"p999_us":1000,"max_us":1000,"elapsed_ms":250}`,
		`{"system":"nats","phase":"produce_async","msgs_per_sec":20000,"p50_us":500,"p99_us":990,"count":5000,"size":1024,"producers":16,"inflight":8,"client":"nats.go","protocol":"nats","flush":"async","mb_per_sec":20.5,"p999_us":1000,"max_us":1000,"elapsed_ms":250}`,
		`{"system":"karman","phase":"consume","msgs_per_sec":20000,"p50_us":500,"p99_us":990,"count":5000,"size":1024,"producers":16,"inflight":8,"client":"karman","protocol":"remoting","flush":"async","mb_per_sec":20.5,"p999_us":1000,"max_us":1000,"elapsed_ms":250,"batch":32,"consumers":4}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), out.String())
	}
	for i := range want {
		// Quantiles are bucket midpoints: compare them within 2%.
		var got, exp map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal([]byte(want[i]), &exp)
		for k, v := range exp {
			g, ok := got[k]
			if f, isNum := v.(float64); isNum && ok && strings.HasSuffix(k, "_us") {
				if gf := g.(float64); gf < f*0.98 || gf > f*1.02 {
					t.Errorf("line %d: %s = %v, want about %v", i, k, g, v)
				}
				continue
			}
			if !ok || g != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, g, v)
			}
		}
		if len(got) != len(exp) {
			t.Errorf("line %d has keys %v, want %v", i, got, exp)
		}
	}
}

func TestRunTableAndErrors(t *testing.T) {
	var out bytes.Buffer
	targets := []Target{{System: "karman", Client: "karman", Generator: fixed{m: fixedMeasurement()}}}
	if err := Run(context.Background(), ModeProduce, Workload{}, targets, NewPrinter(&out, false)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "system") || !strings.Contains(lines[1], "20000") || !strings.HasPrefix(lines[1], "karman      produce ") {
		t.Errorf("table:\n%s", out.String())
	}

	boom := errors.New("boom")
	err := Run(context.Background(), ModeProduce, Workload{}, []Target{{System: "x", Generator: fixed{err: boom}}}, NewPrinter(&out, true))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "x produce") {
		t.Errorf("generator error: %v", err)
	}
	if err := Run(context.Background(), "fetch", Workload{}, targets, NewPrinter(&out, true)); err == nil {
		t.Error("unknown mode accepted")
	}
	if err := Run(context.Background(), ModeProduce, Workload{Size: -1}, targets, NewPrinter(&out, true)); err == nil {
		t.Error("invalid workload accepted")
	}
}

type recorder struct {
	name   string
	events *[]string
}

func (r recorder) Begin() { *r.events = append(*r.events, r.name+" begin") }
func (r recorder) End()   { *r.events = append(*r.events, r.name+" end") }

func TestObserver(t *testing.T) {
	var events []string
	ctx := WithObserver(context.Background(), recorder{"a", &events})
	Begin(ctx)
	Begin(Unobserved(ctx))
	End(ctx)
	Begin(context.Background())
	ctx = WithObserver(ctx, recorder{"b", &events})
	Begin(ctx)
	End(ctx)
	if got := strings.Join(events, ","); got != "a begin,a end,a begin,b begin,b end,a end" {
		t.Errorf("events %s", got)
	}
}
