package enginebench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
)

// decodeLines decodes out's JSON lines strictly and checks their phases.
func decodeLines(t *testing.T, out string, phases ...string) []Result {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(phases) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(phases), out)
	}
	rs := make([]Result, len(lines))
	for i, line := range lines {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rs[i]); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		if rs[i].Phase != phases[i] {
			t.Fatalf("line %d: phase %q, want %q", i+1, rs[i].Phase, phases[i])
		}
	}
	return rs
}

// checkStored reopens the engine of a run and checks that every topic of
// the benchmark holds want messages.
func checkStored(t *testing.T, o Options, topics int, want int64) {
	t.Helper()
	e, err := engine.Open(o.Data, &engine.Options{SegmentSize: o.SegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	found := 0
	for _, tp := range e.Topics() {
		if !strings.HasPrefix(tp.Name, "KarmanBench_") {
			continue
		}
		found++
		var n int64
		for q := range tp.ReadQueues {
			end, err := e.MaxOffset(tp.Name, q)
			if err != nil {
				t.Fatal(err)
			}
			n += end
		}
		if n != want {
			t.Errorf("%s holds %d messages, want %d", tp.Name, n, want)
		}
	}
	if found != topics {
		t.Errorf("found %d benchmark topics, want %d", found, topics)
	}
}

// throughputMatches reports whether r's MB/s is its msgs/s times size, as
// rounded; a slow run of tiny messages rounds to 0.00 MB/s.
func throughputMatches(r Result, size int) bool {
	return r.MsgsPerSec > 0 && math.Abs(r.MBPerSec-r.MsgsPerSec*float64(size)/1e6) <= 0.01
}

// TestRunSchedule runs the schedule mode with small counts. The deliver
// phase itself fails when a message arrives early, twice, or not at all.
func TestRunSchedule(t *testing.T) {
	for _, o := range []Options{
		{Size: 1024, Count: 2001, Producers: 3, Queues: 4, ScheduleWindow: 200 * time.Millisecond, ScheduleLead: time.Second},
		// Every message due at once, bodies shorter than the header, more
		// queues than messages per producer, sync flush: a send waits for
		// the disk, which on a busy machine takes a few milliseconds, so
		// sending needs a longer lead.
		{Size: 5, Count: 1000, Producers: 2, Queues: 3, Flush: engine.FlushSync, SegmentSize: 1 << 20, ScheduleLead: 4 * time.Second},
	} {
		o.Mode = ModeSchedule
		o.Data = t.TempDir()
		o.Batch, o.Readers = 32, 1
		var out, info bytes.Buffer
		if err := Run(context.Background(), o, &out, &info); err != nil {
			t.Fatalf("%+v: %v\n%s", o, err, info.String())
		}
		rs := decodeLines(t, out.String(), "schedule", "deliver")
		size := max(o.Size, timerHeader)
		for i, r := range rs {
			if r.Count != o.Count || r.Size != size || r.Bytes != o.Count*int64(size) || !throughputMatches(r, size) ||
				r.ElapsedMs <= 0 || r.P99us < r.P50us || r.MaxUs < r.P99us || r.Flush != o.Flush.String() {
				t.Errorf("line %d: %s", i+1, out.String())
			}
			if cpuTime() > 0 && r.CPUMs <= 0 {
				t.Errorf("line %d: no CPU time", i+1)
			}
		}
		if s := rs[0]; s.Producers != o.Producers || s.DispatchMs == nil || s.P50us <= 0 || s.ElapsedMs >= float64(o.ScheduleLead.Milliseconds()) {
			t.Errorf("schedule line: %+v", s)
		}
		// The last message is due a window after the first, and arrives no
		// earlier.
		if d := rs[1]; d.Consumers != int(o.Queues) || d.Batch != 32 || d.WindowMs != float64(o.ScheduleWindow.Milliseconds()) ||
			d.ElapsedMs < d.WindowMs-1 || d.P50us < 0 {
			t.Errorf("deliver line: %+v", d)
		}
		checkStored(t, o, 1, o.Count)
	}
}

// TestRunScheduleLeadTooShort checks that a run fails when messages fall
// due before they are all sent.
func TestRunScheduleLeadTooShort(t *testing.T) {
	o := Options{Mode: ModeSchedule, Size: 100, Count: 500, Batch: 32, Producers: 1, Readers: 1, Queues: 2,
		ScheduleLead: time.Microsecond, Data: t.TempDir()}
	var out, info bytes.Buffer
	err := Run(context.Background(), o, &out, &info)
	if err == nil || !strings.Contains(err.Error(), "--schedule-lead") {
		t.Fatalf("err = %v, want one about --schedule-lead", err)
	}
}

// TestTimerReceive checks the arrival checks of the deliver phase: early
// and repeated deliveries, and bodies that are not the run's.
func TestTimerReceive(t *testing.T) {
	began := time.Now()
	r := &timerRun{began: began, beganNs: began.UnixNano(), lead: time.Second, window: time.Second, count: 2, size: 20,
		seen: makeSeenSet([]int64{2}), done: make(chan struct{})}
	record := func(seq, due int64, size int) []byte {
		body := make([]byte, size)
		binary.BigEndian.PutUint64(body, uint64(seq))
		binary.BigEndian.PutUint64(body[8:], uint64(due))
		rec, err := message.AppendStored(nil, &message.Message{Topic: "T", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	var h latency.Histogram
	due0, due1 := r.dueMs(0), r.dueMs(1)
	if due1-due0 < 999 || due1-due0 > 1001 {
		t.Fatalf("due times %d and %d, want a second apart", due0, due1)
	}
	at0 := r.sinceBegan(due0)
	for name, c := range map[string]struct {
		rec []byte
		now time.Duration
	}{
		"early":     {record(0, due0, 20), at0 - time.Microsecond},
		"short":     {record(0, due0, 16), at0},
		"wrong due": {record(0, due0+1, 20), at0 + time.Second},
		"beyond":    {record(2, due0, 20), at0},
	} {
		if err := r.receive(c.rec, c.now, &h); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := r.receive(record(0, due0, 20), at0, &h); err != nil {
		t.Fatal(err)
	}
	if err := r.receive(record(0, due0, 20), at0+time.Millisecond, &h); err == nil {
		t.Error("a second delivery was accepted")
	}
	if r.finished() {
		t.Fatal("finished after one of two messages")
	}
	if err := r.receive(record(1, due1, 20), r.sinceBegan(due1)+5*time.Millisecond, &h); err != nil {
		t.Fatal(err)
	}
	if !r.finished() || time.Duration(r.last.Load()) != r.sinceBegan(due1)+5*time.Millisecond || h.Count() != 2 || h.Max() < 5*time.Millisecond {
		t.Errorf("finished %t, last %s, %d recorded, max %s", r.finished(), time.Duration(r.last.Load()), h.Count(), h.Max())
	}
}

// TestRunTxn runs the txn mode with small counts. Each phase itself fails
// unless its topic holds every message exactly once; the test also reopens
// the engine and counts them.
func TestRunTxn(t *testing.T) {
	for _, o := range []Options{
		{Size: 1024, Count: 3001, Producers: 4, Queues: 8},
		{Size: 5, Count: 999, Producers: 3, Queues: 3, Flush: engine.FlushSync, SegmentSize: 1 << 20},
	} {
		o.Mode = ModeTxn
		o.Data = t.TempDir()
		o.Batch, o.Readers = 32, 1
		var out, info bytes.Buffer
		if err := Run(context.Background(), o, &out, &info); err != nil {
			t.Fatalf("%+v: %v\n%s", o, err, info.String())
		}
		rs := decodeLines(t, out.String(), "send", "txn")
		size := max(o.Size, seqSize)
		for i, r := range rs {
			if r.Count != o.Count || r.Size != size || r.Bytes != o.Count*int64(size) || !throughputMatches(r, size) ||
				r.ElapsedMs <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.MaxUs < r.P99us ||
				r.Producers != o.Producers || r.Batch != 1 || r.DispatchMs == nil {
				t.Errorf("line %d: %s", i+1, out.String())
			}
		}
		if rs[0].Ratio != 0 {
			t.Errorf("send line has a ratio: %+v", rs[0])
		}
		if want := round(rs[1].MsgsPerSec / rs[0].MsgsPerSec); rs[1].Ratio <= 0 || rs[1].Ratio < want-0.01 || rs[1].Ratio > want+0.01 {
			t.Errorf("ratio %v, want %v", rs[1].Ratio, want)
		}
		checkStored(t, o, 2, o.Count)
	}
}
