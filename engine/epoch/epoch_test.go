package epoch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestConsistentPoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mine     []Entry
		myEnd    int64
		theirs   []Entry
		theirEnd int64
		point    int64
		ok       bool
	}{
		{"no epochs of mine", nil, 500, []Entry{{1, 0}}, 900, 500, true},
		{"same epoch, I am behind", []Entry{{1, 0}}, 300, []Entry{{1, 0}}, 900, 300, true},
		{"same epoch, I am ahead", []Entry{{1, 0}}, 900, []Entry{{1, 0}}, 300, 300, true},
		{"old master: my epoch 2 unknown to them", []Entry{{1, 0}, {2, 400}}, 700, []Entry{{1, 0}, {3, 500}}, 900, 400, true},
		{"old master whose epoch they continued", []Entry{{1, 0}, {2, 400}}, 700, []Entry{{1, 0}, {2, 400}, {3, 600}}, 900, 600, true},
		{"same epoch number, other start", []Entry{{1, 0}, {2, 400}}, 700, []Entry{{1, 0}, {2, 380}}, 900, 380, true},
		{"I hold an epoch they do not know, they started later", []Entry{{1, 0}, {3, 200}}, 700, []Entry{{1, 0}, {2, 200}}, 900, 200, true},
		{"nothing in common", []Entry{{2, 100}}, 700, []Entry{{1, 0}, {3, 500}}, 900, 0, false},
		{"they have no epochs", []Entry{{1, 0}}, 700, nil, 900, 0, false},
		{"my only epoch is empty", []Entry{{1, 0}}, 0, []Entry{{2, 0}}, 0, 0, true},
		{"my only epochs are empty", []Entry{{1, 0}, {3, 0}}, 0, []Entry{{2, 0}}, 300, 0, true},
		{"my empty last epoch does not hide a divergence", []Entry{{2, 100}, {4, 700}}, 700, []Entry{{1, 0}, {3, 500}}, 900, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			point, ok := ConsistentPoint(tc.mine, tc.myEnd, tc.theirs, tc.theirEnd)
			if point != tc.point || ok != tc.ok {
				t.Fatalf("ConsistentPoint = %d, %v; want %d, %v", point, ok, tc.point, tc.ok)
			}
		})
	}
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Last(); ok || len(f.Entries()) != 0 {
		t.Fatal("a new file is not empty")
	}
	steps := []struct {
		e    Entry
		err  error
		want []Entry
	}{
		{Entry{1, 0}, nil, []Entry{{1, 0}}},
		{Entry{2, 100}, nil, []Entry{{1, 0}, {2, 100}}},
		{Entry{2, 200}, ErrOrder, []Entry{{1, 0}, {2, 100}}}, // same epoch again
		{Entry{3, 50}, ErrOrder, []Entry{{1, 0}, {2, 100}}},  // start going back
		{Entry{4, 100}, nil, []Entry{{1, 0}, {4, 100}}},      // epoch 2 held nothing: replaced
		{Entry{5, 300}, nil, []Entry{{1, 0}, {4, 100}, {5, 300}}},
		{Entry{6, -8}, ErrOrder, []Entry{{1, 0}, {4, 100}, {5, 300}}},
	}
	for _, s := range steps {
		if err := f.Append(s.e); !errors.Is(err, s.err) {
			t.Fatalf("Append(%v) = %v, want %v", s.e, err, s.err)
		}
		if got := f.Entries(); !slices.Equal(got, s.want) {
			t.Fatalf("after Append(%v): %v, want %v", s.e, got, s.want)
		}
		g, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Entries(); !slices.Equal(got, s.want) {
			t.Fatalf("reopened after Append(%v): %v, want %v", s.e, got, s.want)
		}
	}
	for _, c := range []struct {
		off  int64
		want []Entry
	}{
		{400, []Entry{{1, 0}, {4, 100}, {5, 300}}},
		{300, []Entry{{1, 0}, {4, 100}}},
		{101, []Entry{{1, 0}, {4, 100}}},
		{0, nil},
	} {
		if err := f.TruncateFrom(c.off); err != nil {
			t.Fatal(err)
		}
		g, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Entries(); !slices.Equal(got, c.want) || !slices.Equal(f.Entries(), c.want) {
			t.Fatalf("TruncateFrom(%d): %v (reopened %v), want %v", c.off, f.Entries(), got, c.want)
		}
	}
}

func TestOpenDamaged(t *testing.T) {
	good := Encode([]Entry{{1, 0}, {2, 4096}})
	flip := slices.Clone(good)
	flip[14] ^= 1
	order := Encode([]Entry{{2, 0}, {1, 4096}})
	for name, b := range map[string][]byte{
		"empty":        {},
		"short":        good[:10],
		"cut":          good[:len(good)-1],
		"flipped bit":  flip,
		"out of order": order,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, Name), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(nil))
	f.Add(Encode([]Entry{{1, 0}, {2, 4096}, {7, 1 << 40}}))
	f.Add([]byte("KEPO"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode error %v does not match ErrCorrupt", err)
			}
			return
		}
		for i, e := range entries {
			if err := Check(entries[:i], e); err != nil {
				t.Fatalf("Decode accepted entries out of order: %v", err)
			}
		}
		if again := Encode(entries); string(again) != string(b) {
			t.Fatalf("Decode accepted an image Encode does not make")
		}
	})
}
