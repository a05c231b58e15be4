package kv

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestBackgroundErrors checks that a run of errors is logged once per
// errorLogEvery with the count of those skipped, and that Next and Last
// report each error.
func TestBackgroundErrors(t *testing.T) {
	var out bytes.Buffer
	b := NewBackgroundErrors(slog.New(slog.NewTextHandler(&out, nil)))
	now := time.Unix(1000, 0)
	b.now = func() time.Time { return now }

	next := b.Next()
	select {
	case <-next:
		t.Fatal("Next is closed before any error")
	default:
	}
	full := errors.New("no space left on device")
	for range 100 { // a second of failed flushes
		b.report(full)
		now = now.Add(10 * time.Millisecond)
	}
	select {
	case <-next:
	default:
		t.Fatal("Next was not closed by an error")
	}
	if b.Last() != full {
		t.Fatalf("Last = %v", b.Last())
	}
	if n := strings.Count(out.String(), "level=ERROR"); n != 1 {
		t.Fatalf("100 errors in a second logged %d lines, want 1:\n%s", n, out.String())
	}
	now = now.Add(errorLogEvery)
	b.report(full)
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "failuresNotLogged=99") {
		t.Fatalf("after errorLogEvery, log:\n%s", out.String())
	}
}
