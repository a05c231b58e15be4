package enginebench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
)

func TestRun(t *testing.T) {
	for _, o := range []Options{
		{Size: 100, Count: 3001, Batch: 1, Producers: 3, Readers: 1, Queues: 8, Flush: engine.FlushAsync},
		// Uneven batches and readers, sync flush, several small segments.
		{Size: 700, Count: 3001, Batch: 7, Producers: 3, Readers: 3, Queues: 4, Flush: engine.FlushSync, SegmentSize: 1 << 20, RawDisk: true},
	} {
		o.Data = t.TempDir()
		var out, info bytes.Buffer
		if err := Run(context.Background(), o, &out, &info); err != nil {
			t.Fatalf("%+v: %v\n%s", o, err, info.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		want := []string{"append", "read"}
		if o.RawDisk {
			want = append(want, "raw_disk")
		}
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
		}
		for i, phase := range want {
			var r Result
			if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
				t.Fatal(err)
			}
			if r.Phase != phase || r.MBPerSec <= 0 || r.Bytes != o.Count*int64(o.Size) {
				t.Errorf("line %d: %s", i+1, lines[i])
			}
			if phase != "raw_disk" && (r.Count != o.Count || r.MsgsPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us) {
				t.Errorf("line %d: %s", i+1, lines[i])
			}
		}
	}
}

// TestRunConsume runs the pull and pop modes with small counts. The phases
// themselves fail unless every pre-loaded message was consumed exactly
// once; the test checks the lines and, for pop, reopens the engine to see
// every message acknowledged.
func TestRunConsume(t *testing.T) {
	for _, o := range []Options{
		{Mode: ModePull, Size: 1024, Count: 3001, Batch: 32, Consumers: 4, Queues: 8},
		// More consumers than queues, uneven batches, bodies shorter than
		// the wake-up sequence number, several producers and segments.
		{Mode: ModePull, Size: 5, Count: 2999, Batch: 7, Consumers: 5, Producers: 2, Queues: 3, SegmentSize: 1 << 20},
		{Mode: ModePop, Size: 1024, Count: 3001, Batch: 32, Consumers: 4, Queues: 8},
		{Mode: ModePop, Size: 5, Count: 2999, Batch: 7, Consumers: 3, Producers: 2, Queues: 3, Flush: engine.FlushSync, SegmentSize: 1 << 20},
	} {
		t.Run(string(o.Mode), func(t *testing.T) {
			o.Data = t.TempDir()
			o.Readers = 1
			o.Producers = max(o.Producers, 1)
			o.WakeupCount = 100
			o.WakeupInterval = 200 * time.Microsecond
			var out, info bytes.Buffer
			if err := Run(context.Background(), o, &out, &info); err != nil {
				t.Fatalf("%+v: %v\n%s", o, err, info.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			want := []string{string(o.Mode), "wakeup_" + string(o.Mode)}
			if len(lines) != len(want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
			}
			for i, phase := range want {
				var r Result
				dec := json.NewDecoder(strings.NewReader(lines[i]))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&r); err != nil {
					t.Fatal(err)
				}
				count, size := o.Count, o.Size
				if i == 1 {
					count, size = int64(o.WakeupCount), max(o.Size, seqSize)
				}
				// A wake-up line of 8-byte bodies sent 200µs apart rounds to
				// 0.00 MB/s.
				if r.MBPerSec <= 0 && (i == 0 || size > seqSize) {
					t.Errorf("line %d: no throughput: %s", i+1, lines[i])
				}
				if r.Phase != phase || r.Count != count || r.Size != size || r.Bytes != count*int64(size) ||
					r.MsgsPerSec <= 0 || r.ElapsedMs <= 0 || r.Batch != o.Batch ||
					r.P50us <= 0 || r.P99us < r.P50us || r.MaxUs < r.P99us ||
					r.Consumers < 1 || r.Consumers > o.Consumers || r.Consumers > int(o.Queues) && o.Mode == ModePull {
					t.Errorf("line %d: %s", i+1, lines[i])
				}
				if i == 0 && cpuTime() > 0 && r.CPUMs <= 0 {
					t.Errorf("line %d: no CPU time: %s", i+1, lines[i])
				}
				if i == 1 && r.IntervalUs != 200 {
					t.Errorf("line %d: interval %v, want 200", i+1, r.IntervalUs)
				}
				if phase == "pop" && (r.AckP50us <= 0 || r.AckP99us < r.AckP50us || r.AckMaxUs < r.AckP99us) {
					t.Errorf("line %d: ack latency missing: %s", i+1, lines[i])
				}
			}
			if o.Mode == ModePop {
				checkAcked(t, o)
			}
		})
	}
}

// checkAcked reopens the engine of a pop run and checks that the group's
// committed offsets cover every message of both topics.
func checkAcked(t *testing.T, o Options) {
	t.Helper()
	e, err := engine.Open(o.Data, &engine.Options{SegmentSize: o.SegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	topics := e.Topics()
	found := 0
	for _, tp := range topics {
		if !strings.HasPrefix(tp.Name, "KarmanBench_") {
			continue
		}
		found++
		want := o.Count
		if strings.HasSuffix(tp.Name, "_wakeup") {
			want = int64(o.WakeupCount)
		}
		offs, err := e.ConsumerOffsets(benchGroup, tp.Name)
		if err != nil {
			t.Fatal(err)
		}
		var acked, stored int64
		for q := range tp.ReadQueues {
			end, err := e.MaxOffset(tp.Name, q)
			if err != nil {
				t.Fatal(err)
			}
			if offs[q] != end {
				t.Errorf("%s queue %d: acknowledged below %d, holds %d", tp.Name, q, offs[q], end)
			}
			acked += offs[q]
			stored += end
		}
		if acked != want || stored != want {
			t.Errorf("%s: %d acknowledged, %d stored, want %d", tp.Name, acked, stored, want)
		}
	}
	if found != 2 {
		t.Errorf("found %d benchmark topics, want 2", found)
	}
}

func TestSeenSet(t *testing.T) {
	s := makeSeenSet([]int64{70, 0, 3})
	for _, m := range []struct {
		q   int32
		off int64
	}{{0, 0}, {0, 63}, {0, 64}, {0, 69}, {2, 2}} {
		if err := s.mark(m.q, m.off); err != nil {
			t.Fatalf("mark(%d, %d): %v", m.q, m.off, err)
		}
	}
	for _, m := range []struct {
		q   int32
		off int64
	}{{0, 64}, {2, 2}, {0, 70}, {1, 0}, {2, 3}, {3, 0}, {-1, 0}, {0, -1}} {
		if err := s.mark(m.q, m.off); err == nil {
			t.Errorf("mark(%d, %d) accepted", m.q, m.off)
		}
	}
	if n := s.count(); n != 5 {
		t.Errorf("count = %d, want 5", n)
	}
}

func TestValidate(t *testing.T) {
	good := Options{Size: 1, Count: 1, Batch: 1, Producers: 1, Readers: 1, Queues: 1, Consumers: 1, WakeupCount: 1, ScheduleLead: time.Second}
	for _, m := range []Mode{"", ModeAppend, ModePull, ModePop, ModeSchedule, ModeTxn} {
		o := good
		o.Mode = m
		if err := o.Validate(); err != nil {
			t.Fatalf("mode %q: %v", m, err)
		}
	}
	for name, mut := range map[string]func(*Options){
		"size":      func(o *Options) { o.Size = 0 },
		"count":     func(o *Options) { o.Count = 0 },
		"batch":     func(o *Options) { o.Batch = 0 },
		"producers": func(o *Options) { o.Producers = -1 },
		"readers":   func(o *Options) { o.Readers = 0 },
		"queues":    func(o *Options) { o.Queues = engine.MaxQueues + 1 },
		"segment":   func(o *Options) { o.SegmentSize = -1 },
		"mode":      func(o *Options) { o.Mode = "push" },
		"consumers": func(o *Options) { o.Mode, o.Consumers = ModePop, 0 },
		"wakeup":    func(o *Options) { o.Mode, o.WakeupCount = ModePull, 0 },
		"interval":  func(o *Options) { o.WakeupInterval = -time.Millisecond },
		"pop batch": func(o *Options) { o.Mode, o.Batch = ModePop, engine.MaxPullMessages+1 },
		"lead":      func(o *Options) { o.Mode, o.ScheduleLead = ModeSchedule, 0 },
		"window":    func(o *Options) { o.Mode, o.ScheduleWindow = ModeSchedule, -time.Second },
		"horizon":   func(o *Options) { o.Mode, o.ScheduleWindow = ModeSchedule, engine.DefaultTimerHorizon },
	} {
		o := good
		mut(&o)
		if o.Validate() == nil {
			t.Errorf("%s: invalid options accepted", name)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"append", "pull", "pop", "schedule", "txn"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseMode("push"); err == nil {
		t.Error("ParseMode(push) accepted")
	}
}
