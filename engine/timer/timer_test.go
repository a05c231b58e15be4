package timer

import (
	"math"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kvtest"
)

// apply adds and then deletes entries in one committed batch.
func apply(t testing.TB, db *pebble.DB, add, del []Entry) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	var w Writer
	for _, e := range add {
		if err := w.Add(b, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range del {
		if err := w.Delete(b, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
}

func TestRange(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	entries := []Entry{
		{Due: 300, Offset: 5},
		{Due: 100, Offset: 9},
		{Due: 100, Offset: 2},
		{Due: 200, Offset: 1},
		{Due: 0, Offset: 7},
		{Due: 300, Offset: math.MaxInt64},
		{Due: 1 << 50, Offset: 0},
	}
	apply(t, db, entries, nil)
	// Keys of other indexes in the same database sort on either side.
	for _, k := range []string{"q\x01T", "v", "u-id", "x"} {
		if err := db.Set([]byte(k), []byte("x"), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}

	all := []Entry{{0, 7}, {100, 2}, {100, 9}, {200, 1}, {300, 5}, {300, math.MaxInt64}, {1 << 50, 0}}
	tests := []struct {
		name        string
		from, until int64
		limit       int
		want        []Entry
	}{
		{"all", 0, math.MaxInt64, 100, all},
		{"limit", 0, math.MaxInt64, 3, all[:3]},
		{"limit zero", 0, math.MaxInt64, 0, nil},
		{"from inclusive", 100, math.MaxInt64, 100, all[1:]},
		{"until inclusive", 0, 200, 100, all[:4]},
		{"until includes the largest offset", 300, 300, 100, all[4:6]},
		{"window", 101, 299, 100, all[3:4]},
		{"empty window", 201, 299, 100, nil},
		{"from equals until", 100, 100, 100, all[1:3]},
		{"until before from", 300, 100, 100, nil},
		{"negative from", -50, 0, 100, all[:1]},
		{"negative until", 0, -1, 100, nil},
		{"both negative", math.MinInt64, -1, 100, nil},
		{"until zero", 0, 0, 100, all[:1]},
		{"far future", 1 << 40, math.MaxInt64, 100, all[6:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Range(tt.from, tt.until, tt.limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Range(%d, %d, %d) = %v, want %v", tt.from, tt.until, tt.limit, got, tt.want)
			}
		})
	}

	t.Run("appends to dst", func(t *testing.T) {
		got, err := s.Range(0, 100, 10, []Entry{{-1, -1}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []Entry{{-1, -1}, {0, 7}, {100, 2}, {100, 9}}; !slices.Equal(got, want) {
			t.Fatalf("Range = %v, want %v", got, want)
		}
	})
}

func TestNextAndHas(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	if e, ok, err := s.Next(0); err != nil || ok {
		t.Fatalf("Next on an empty index = %v, %v, %v", e, ok, err)
	}
	entries := []Entry{{100, 1}, {100, 0}, {250, 3}}
	apply(t, db, entries, nil)
	tests := []struct {
		from int64
		want Entry
		ok   bool
	}{
		{math.MinInt64, Entry{100, 0}, true},
		{0, Entry{100, 0}, true},
		{100, Entry{100, 0}, true},
		{101, Entry{250, 3}, true},
		{250, Entry{250, 3}, true},
		{251, Entry{}, false},
		{math.MaxInt64, Entry{}, false},
	}
	for _, tt := range tests {
		e, ok, err := s.Next(tt.from)
		if err != nil || ok != tt.ok || e != tt.want {
			t.Errorf("Next(%d) = %v, %v, %v; want %v, %v", tt.from, e, ok, err, tt.want, tt.ok)
		}
	}

	has := func(e Entry, want bool) {
		t.Helper()
		if got, err := s.Has(e); err != nil || got != want {
			t.Fatalf("Has(%v) = %v, %v; want %v", e, got, err, want)
		}
	}
	has(Entry{100, 1}, true)
	has(Entry{100, 2}, false)
	has(Entry{101, 1}, false)
	has(Entry{250, 3}, true)

	// Delete removes exactly one entry; deleting a missing one is harmless;
	// a batch can delete what it adds.
	apply(t, db, []Entry{{400, 4}}, []Entry{{100, 1}, {999, 9}, {400, 4}})
	has(Entry{100, 1}, false)
	has(Entry{100, 0}, true)
	has(Entry{400, 4}, false)
	if got, err := s.Range(0, math.MaxInt64, 10, nil); err != nil || !slices.Equal(got, []Entry{{100, 0}, {250, 3}}) {
		t.Fatalf("Range after delete = %v, %v", got, err)
	}
	if e, ok, err := s.Next(0); err != nil || !ok || e != (Entry{100, 0}) {
		t.Fatalf("Next after delete = %v, %v, %v", e, ok, err)
	}
}

func TestKeyLayout(t *testing.T) {
	got := appendKey(nil, 0x0102, 0x0304)
	want := []byte{'w', 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4}
	if !slices.Equal(got, want) || len(got) != keySize {
		t.Fatalf("key = %x, want %x", got, want)
	}
}
