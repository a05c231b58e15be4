package engine

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// warnings is a slog handler that keeps the warnings logged.
type warnings struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recs = append(w.recs, r.Clone())
	return nil
}

// find returns the attributes of the warnings whose message contains msg.
func (w *warnings) find(msg string) []map[string]slog.Value {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]slog.Value
	for _, r := range w.recs {
		if !strings.Contains(r.Message, msg) {
			continue
		}
		attrs := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		out = append(out, attrs)
	}
	return out
}

const unconsumedWarning = "retention deleted messages that consumer groups had not consumed"

// A retention run that deletes messages a group had not consumed says so:
// one warning with the count of messages and groups and the groups that
// lost most, and the engine's counter. A group that had consumed
// everything deleted is not counted, and a later run counts only what it
// deleted itself.
func TestRetentionCountsUnconsumed(t *testing.T) {
	w := &warnings{}
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 10, RetentionAge: time.Hour, Logger: slog.New(w)})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	mustTopic(t, e, "U", 1)
	ctx := context.Background()
	body := string(bytes.Repeat([]byte("r"), 4000))
	send := func(topic string, n int) {
		t.Helper()
		for range n {
			if _, err := e.Send(ctx, newMsg(topic, body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("T", 100) // about 6 segments
	send("U", 2)
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	commit := func(group, topic string, off int64) {
		t.Helper()
		if err := e.CommitOffset(group, topic, 0, off); err != nil {
			t.Fatal(err)
		}
	}
	commit("half", "T", 50)
	commit("all", "T", 100)
	commit("none", "U", 0) // U lives in the active segment: it stays, this time

	if got := e.Stats().RetentionUnconsumedDeleted; got != 0 {
		t.Fatalf("counter %d before any retention", got)
	}
	removed, err := e.ApplyRetention(time.Now().Add(2 * time.Hour))
	if err != nil || removed == 0 {
		t.Fatalf("retention removed %d segments, %v", removed, err)
	}
	first, err := e.MinOffset("T", 0)
	if err != nil || first <= 50 || first >= 100 {
		t.Fatalf("T starts at %d after retention (%v); the test needs it between 50 and 100", first, err)
	}
	if got, want := e.Stats().RetentionUnconsumedDeleted, first-50; got != want {
		t.Errorf("counter %d, want %d (messages [50, %d) that half had not consumed)", got, want, first)
	}
	ws := w.find(unconsumedWarning)
	if len(ws) != 1 {
		t.Fatalf("%d warnings about unconsumed messages, want 1", len(ws))
	}
	if got := ws[0]["messages"].Int64(); got != first-50 {
		t.Errorf("warning says %d messages, want %d", got, first-50)
	}
	if got := ws[0]["groups"].Int64(); got != 1 {
		t.Errorf("warning says %d groups, want 1", got)
	}
	if got, want := ws[0]["worst"].String(), fmt.Sprintf("T/half: %d", first-50); got != want {
		t.Errorf("warning names %q, want %q", got, want)
	}

	// More messages, and "all" falls behind now: the next run counts what
	// it deletes, not again what the first did. U's two messages go too.
	send("T", 60)
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	if removed, err := e.ApplyRetention(time.Now().Add(4 * time.Hour)); err != nil || removed == 0 {
		t.Fatalf("second retention removed %d segments, %v", removed, err)
	}
	second, err := e.MinOffset("T", 0)
	if err != nil || second <= 100 {
		t.Fatalf("T starts at %d after the second run (%v); the test needs it past 100", second, err)
	}
	if u, err := e.MinOffset("U", 0); err != nil || u != 2 {
		t.Fatalf("U starts at %d after the second run (%v), want 2", u, err)
	}
	// half loses [first, second), all [100, second), none U's [0, 2).
	wantTotal := (first - 50) + (second - first) + (second - 100) + 2
	if got := e.Stats().RetentionUnconsumedDeleted; got != wantTotal {
		t.Errorf("counter %d after the second run, want %d", got, wantTotal)
	}
	ws = w.find(unconsumedWarning)
	if len(ws) != 2 {
		t.Fatalf("%d warnings about unconsumed messages, want 2", len(ws))
	}
	if got := ws[1]["messages"].Int64(); got != wantTotal-(first-50) {
		t.Errorf("second warning says %d messages, want %d", got, wantTotal-(first-50))
	}
	if got := ws[1]["groups"].Int64(); got != 3 {
		t.Errorf("second warning says %d groups, want 3", got)
	}
	if got, want := ws[1]["worst"].String(), fmt.Sprintf("T/half: %d, T/all: %d, U/none: 2", second-first, second-100); got != want {
		t.Errorf("second warning names %q, want %q", got, want)
	}
}

// A run that deletes only consumed messages warns of nothing.
func TestRetentionConsumedIsQuiet(t *testing.T) {
	w := &warnings{}
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 10, RetentionAge: time.Hour, Logger: slog.New(w)})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	body := string(bytes.Repeat([]byte("r"), 4000))
	for range 40 {
		if _, err := e.Send(ctx, newMsg("T", body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.CommitOffset("all", "T", 0, 40); err != nil {
		t.Fatal(err)
	}
	if removed, err := e.ApplyRetention(time.Now().Add(2 * time.Hour)); err != nil || removed == 0 {
		t.Fatalf("retention removed %d segments, %v", removed, err)
	}
	if got := e.Stats().RetentionUnconsumedDeleted; got != 0 {
		t.Errorf("counter %d, want 0: the only group had consumed everything", got)
	}
	if ws := w.find(unconsumedWarning); len(ws) != 0 {
		t.Errorf("warned of unconsumed messages: %v", ws)
	}
}
