package kv

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"empty", []byte{}, nil},
		{"nil", nil, nil},
		{"one byte", []byte("a"), []byte("b")},
		{"last byte incremented", []byte("ab"), []byte("ac")},
		{"zero byte", []byte{0}, []byte{1}},
		{"trailing 0xff dropped", []byte{'a', 0xff}, []byte{'b'}},
		{"several trailing 0xff dropped", []byte{'a', 'b', 0xff, 0xff}, []byte{'a', 'c'}},
		{"0xfe becomes 0xff", []byte{'q', 0xfe}, []byte{'q', 0xff}},
		{"0xff inside kept", []byte{0xff, 'a'}, []byte{0xff, 'b'}},
		{"0xff before last 0xff", []byte{0x01, 0xff, 0xff}, []byte{0x02}},
		{"single 0xff", []byte{0xff}, nil},
		{"all 0xff", []byte{0xff, 0xff, 0xff}, nil},
		{"length-prefixed topic", []byte{'q', 1, 'T'}, []byte{'q', 1, 'U'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := bytes.Clone(tt.in)
			got := PrefixEnd(in)
			if !bytes.Equal(got, tt.want) || (tt.want == nil) != (got == nil) {
				t.Fatalf("PrefixEnd(%x) = %x, want %x", tt.in, got, tt.want)
			}
			if !bytes.Equal(in, tt.in) {
				t.Fatalf("PrefixEnd modified its argument: %x, was %x", in, tt.in)
			}
		})
	}
}

// TestPrefixEndBounds checks the defining property: every key that starts
// with p sorts below PrefixEnd(p), and PrefixEnd(p) itself does not start
// with p.
func TestPrefixEndBounds(t *testing.T) {
	prefixes := [][]byte{{'a'}, {'a', 0xff}, {0x00}, {'q', 3, 'a', 'b', 'c'}, {0xfe, 0xff}}
	suffixes := [][]byte{nil, {0}, {0xff}, {0xff, 0xff, 0xff, 0xff}, []byte("zzz")}
	for _, p := range prefixes {
		end := PrefixEnd(p)
		if end == nil {
			t.Fatalf("PrefixEnd(%x) = nil", p)
		}
		if bytes.HasPrefix(end, p) {
			t.Errorf("PrefixEnd(%x) = %x starts with the prefix", p, end)
		}
		for _, s := range suffixes {
			k := append(bytes.Clone(p), s...)
			if bytes.Compare(k, end) >= 0 {
				t.Errorf("key %x >= PrefixEnd(%x) = %x", k, p, end)
			}
		}
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	l := Logger{L: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Infof("opened %d tables", 3)
	l.Errorf("compaction failed: %s", "disk full")
	out := buf.String()
	for _, want := range []string{"level=DEBUG msg=\"opened 3 tables\"", "level=ERROR msg=\"compaction failed: disk full\""} {
		if !strings.Contains(out, want) {
			t.Errorf("log output %q lacks %q", out, want)
		}
	}

	// A nil slog logger discards.
	Logger{}.Infof("x")
	Logger{}.Errorf("x")
}

// TestLoggerFatalf checks that Fatalf logs, records the error in Fatal
// and ends only its own goroutine, which Fatal.Run does not wait for.
func TestLoggerFatalf(t *testing.T) {
	var buf bytes.Buffer
	var got error
	f := NewFatal(func(err error) { got = err })
	l := Logger{L: slog.New(slog.NewTextHandler(&buf, nil)), Fatal: f}
	if f.Err() != nil {
		t.Fatalf("Err before any fatal error = %v", f.Err())
	}
	if err := f.Run(func() error { return nil }); err != nil {
		t.Fatalf("Run of a good call = %v", err)
	}
	blocked := make(chan struct{})
	err := f.Run(func() error {
		defer close(blocked) // deferred calls run
		l.Fatalf("bad %d", 7)
		t.Error("Fatalf returned")
		return nil
	})
	<-blocked
	var fe *FatalError
	if !errors.As(err, &fe) || err.Error() != "pebble: bad 7" {
		t.Fatalf("Run = %v, want a *FatalError %q", err, "pebble: bad 7")
	}
	if got != err || f.Err() != err {
		t.Errorf("on got %v, Err = %v, want %v", got, f.Err(), err)
	}
	select {
	case <-f.Done():
	default:
		t.Error("Done not closed")
	}
	if !strings.Contains(buf.String(), `level=ERROR msg="pebble: bad 7"`) {
		t.Errorf("Fatalf did not log at error level: %q", buf.String())
	}
	// Later calls that never return end with the recorded error.
	if err := f.Run(func() error { select {} }); err != f.Err() {
		t.Errorf("Run of a stuck call after the failure = %v", err)
	}
}
