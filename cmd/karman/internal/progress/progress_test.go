package progress

import (
	"bytes"
	"strings"
	"testing"
)

// A writer that is not a terminal gets nothing unless forced; one step
// draws nothing either way.
func TestDrawnOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		new   func(w *bytes.Buffer) *Bar
		drawn bool
	}{
		{"bar on a buffer", func(w *bytes.Buffer) *Bar { return New(w, 3, "working", false) }, false},
		{"bar forced", func(w *bytes.Buffer) *Bar { return New(w, 3, "working", true) }, true},
		{"one step forced", func(w *bytes.Buffer) *Bar { return New(w, 1, "working", true) }, false},
		{"spinner on a buffer", func(w *bytes.Buffer) *Bar { return Spinner(w, "working", false) }, false},
		{"spinner forced", func(w *bytes.Buffer) *Bar { return Spinner(w, "working", true) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			b := tc.new(&w)
			b.Add()
			b.Describe("still working")
			b.Add()
			b.Finish()
			if b.Drawn() != tc.drawn || strings.Contains(w.String(), "working") != tc.drawn {
				t.Errorf("drawn %v, wrote %q; want drawn %v", b.Drawn(), w.String(), tc.drawn)
			}
		})
	}
}

// ClearBefore and Phases pass what is written through, drawn or not.
func TestWritersPassThrough(t *testing.T) {
	for _, force := range []bool{false, true} {
		var line, out bytes.Buffer
		b := Spinner(&line, "bench", force)
		w := b.Phases(b.ClearBefore(&out), "bench")
		w.Write([]byte(`{"phase":"produce"}` + "\n"))
		if out.String() != `{"phase":"produce"}`+"\n" {
			t.Errorf("force %v: passed %q", force, out.String())
		}
		b.Finish()
		if force && !strings.Contains(line.String(), "done produce") {
			t.Errorf("the line does not say the phase is done: %q", line.String())
		}
	}
}
