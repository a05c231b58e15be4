package queue

import (
	"errors"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kvtest"
)

// openDB opens an index database as the engine does: no write-ahead log,
// since every entry can be rebuilt from the commit log.
// entry returns a distinct, recognisable entry for (queue, offset) of a
// topic numbered tn.
func entry(tn int, queue int32, off int64) Entry {
	base := int64(tn)<<40 | int64(queue)<<32 | off
	return Entry{
		Offset:          off,
		CommitLogOffset: base * 100,
		Size:            int32(100 + off),
		TagHash:         -base, // negative hashes must survive the round trip
		StoreTimestamp:  1_700_000_000_000 + base,
	}
}

type loc struct {
	topic string
	queue int32
}

// fill writes entries [from, to) of each (topic, queue) in one committed
// batch, interleaving the queues.
func fill(t testing.TB, db *pebble.DB, from, to int64, locs ...loc) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	var w Writer
	for off := from; off < to; off++ {
		for i, l := range locs {
			if err := w.Add(b, []byte(l.topic), l.queue, entry(i, l.queue, off)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
}

func TestWriterBatchVisibleOnCommit(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	b := db.NewBatch()
	defer b.Close()
	var w Writer
	for off := range int64(3) {
		if err := w.Add(b, []byte("T"), 0, entry(0, 0, off)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Entries("T", 0, 0, 10, nil); err != nil || len(got) != 0 {
		t.Fatalf("before commit: Entries = %v, %v; want none", got, err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	got, err := s.Entries("T", 0, 0, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{entry(0, 0, 0), entry(0, 0, 1), entry(0, 0, 2)}
	if !slices.Equal(got, want) {
		t.Fatalf("Entries = %v, want %v", got, want)
	}
}

func TestWriterOverwrite(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	fill(t, db, 0, 2, loc{"T", 0})
	e := Entry{Offset: 1, CommitLogOffset: 42, Size: 7, TagHash: 9, StoreTimestamp: 11}
	b := db.NewBatch()
	var w Writer
	if err := w.Add(b, []byte("T"), 0, e); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get("T", 0, 1)
	if err != nil || !ok || got != e {
		t.Fatalf("Get = %v, %v, %v; want %v", got, ok, err, e)
	}
}

func TestEntries(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	// Topics whose names are prefixes of each other or of equal length,
	// queue ids whose encodings share bytes, and a queue id with the high
	// bit set.
	locs := []loc{
		{"T", 0}, {"T", 1}, {"T", 256}, {"T1", 0}, {"T1", 1}, {"T2", 0}, {"TT", 0},
		{"U", 0}, {"%LMQ%x", 0}, {"T", -1},
	}
	fill(t, db, 0, 20, locs...)
	// A queue that starts later, as after a trim or on a light queue.
	b := db.NewBatch()
	var w Writer
	for off := int64(1000); off < 1005; off++ {
		if err := w.Add(b, []byte("late"), 3, entry(len(locs), 3, off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}

	want := func(tn int, queue int32, from, to int64) []Entry {
		var out []Entry
		for off := from; off < to; off++ {
			out = append(out, entry(tn, queue, off))
		}
		return out
	}
	tests := []struct {
		name  string
		topic string
		queue int32
		from  int64
		max   int
		want  []Entry
	}{
		{"all", "T", 0, 0, 100, want(0, 0, 0, 20)},
		{"max", "T", 0, 0, 5, want(0, 0, 0, 5)},
		{"from", "T", 0, 7, 3, want(0, 0, 7, 10)},
		{"from to end", "T", 0, 15, 100, want(0, 0, 15, 20)},
		{"last", "T", 0, 19, 100, want(0, 0, 19, 20)},
		{"from past end", "T", 0, 20, 100, nil},
		{"far past end", "T", 0, 1 << 40, 100, nil},
		{"max zero", "T", 0, 0, 0, nil},
		{"max negative", "T", 0, 0, -1, nil},
		{"other queue", "T", 1, 0, 100, want(1, 1, 0, 20)},
		{"queue 256", "T", 256, 3, 2, want(2, 256, 3, 5)},
		{"queue -1", "T", -1, 18, 10, want(9, -1, 18, 20)},
		{"longer topic", "T1", 0, 0, 100, want(3, 0, 0, 20)},
		{"longer topic queue 1", "T1", 1, 10, 100, want(4, 1, 10, 20)},
		{"equal length topic", "T2", 0, 0, 100, want(5, 0, 0, 20)},
		{"equal length topic TT", "TT", 0, 5, 1, want(6, 0, 5, 6)},
		{"next topic", "U", 0, 0, 100, want(7, 0, 0, 20)},
		{"light queue", "%LMQ%x", 0, 0, 100, want(8, 0, 0, 20)},
		{"queue not written", "T", 2, 0, 100, nil},
		{"topic not written", "T3", 0, 0, 100, nil},
		{"prefix topic not written", "", 0, 0, 100, nil},
		{"starts late", "late", 3, 0, 100, want(len(locs), 3, 1000, 1005)},
		{"starts late from inside", "late", 3, 1003, 100, want(len(locs), 3, 1003, 1005)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Entries(tt.topic, tt.queue, tt.from, tt.max, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Entries(%q, %d, %d, %d) = %v, want %v", tt.topic, tt.queue, tt.from, tt.max, got, tt.want)
			}
		})
	}

	t.Run("appends to dst", func(t *testing.T) {
		dst := []Entry{{Offset: -7}}
		got, err := s.Entries("T", 0, 0, 2, dst)
		if err != nil {
			t.Fatal(err)
		}
		if w := append([]Entry{{Offset: -7}}, want(0, 0, 0, 2)...); !slices.Equal(got, w) {
			t.Fatalf("Entries = %v, want %v", got, w)
		}
	})
}

func TestGet(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	fill(t, db, 0, 5, loc{"T", 0}, loc{"T1", 0}, loc{"T", 1})
	tests := []struct {
		topic string
		queue int32
		off   int64
		want  Entry
		ok    bool
	}{
		{"T", 0, 0, entry(0, 0, 0), true},
		{"T", 0, 4, entry(0, 0, 4), true},
		{"T", 0, 5, Entry{}, false},
		{"T", 0, -1, Entry{}, false},
		{"T1", 0, 3, entry(1, 0, 3), true},
		{"T", 1, 2, entry(2, 1, 2), true},
		{"T", 2, 0, Entry{}, false},
		{"T2", 0, 0, Entry{}, false},
	}
	for _, tt := range tests {
		got, ok, err := s.Get(tt.topic, tt.queue, tt.off)
		if err != nil || ok != tt.ok || got != tt.want {
			t.Errorf("Get(%q, %d, %d) = %v, %v, %v; want %v, %v, nil", tt.topic, tt.queue, tt.off, got, ok, err, tt.want, tt.ok)
		}
	}
}

func TestBounds(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	check := func(topic string, queue int32, first, end int64) {
		t.Helper()
		f, e, err := s.Bounds(topic, queue)
		if err != nil || f != first || e != end {
			t.Fatalf("Bounds(%q, %d) = %d, %d, %v; want %d, %d, nil", topic, queue, f, e, err, first, end)
		}
	}
	check("T", 0, 0, 0)

	fill(t, db, 0, 10, loc{"T", 0}, loc{"T1", 0}, loc{"T", 1}, loc{"S", 0})
	check("T", 0, 0, 10)
	check("T1", 0, 0, 10)
	check("T", 2, 0, 0)
	check("T2", 0, 0, 0)

	if err := s.DeleteBefore("T", 0, 4); err != nil {
		t.Fatal(err)
	}
	check("T", 0, 4, 10)
	check("T", 1, 0, 10)  // other queue untouched
	check("T1", 0, 0, 10) // other topic untouched
	check("S", 0, 0, 10)
	if got, err := s.Entries("T", 0, 0, 100, nil); err != nil || len(got) != 6 || got[0].Offset != 4 {
		t.Fatalf("Entries after DeleteBefore(4) = %v, %v; want offsets 4..9", got, err)
	}
	if _, ok, err := s.Get("T", 0, 3); err != nil || ok {
		t.Fatalf("Get below the trim point: ok=%v err=%v", ok, err)
	}

	// Trimming below the first entry is a no-op; trimming at or past the
	// end empties the queue.
	if err := s.DeleteBefore("T", 0, 2); err != nil {
		t.Fatal(err)
	}
	check("T", 0, 4, 10)
	if err := s.DeleteBefore("T", 0, 9); err != nil {
		t.Fatal(err)
	}
	check("T", 0, 9, 10)
	if err := s.DeleteBefore("T", 0, 100); err != nil {
		t.Fatal(err)
	}
	check("T", 0, 0, 0)
	check("T", 1, 0, 10)

	// A single entry far from zero.
	fill(t, db, 1<<40, 1<<40+1, loc{"one", 7})
	check("one", 7, 1<<40, 1<<40+1)
}

func TestDeleteTopic(t *testing.T) {
	db := kvtest.OpenDB(t)
	s := New(db)
	locs := []loc{{"T", 0}, {"T", 5}, {"T1", 0}, {"T2", 0}, {"S", 0}, {"TT", 3}, {"", 0}}
	fill(t, db, 0, 8, locs...)

	if err := s.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	for _, l := range locs {
		first, end, err := s.Bounds(l.topic, l.queue)
		if err != nil {
			t.Fatal(err)
		}
		wantEnd := int64(8)
		if l.topic == "T" {
			wantEnd = 0
		}
		if first != 0 || end != wantEnd {
			t.Errorf("after DeleteTopic(T): Bounds(%q, %d) = %d, %d; want 0, %d", l.topic, l.queue, first, end, wantEnd)
		}
	}

	// The topic can be written again from scratch.
	fill(t, db, 0, 2, loc{"T", 0})
	if got, err := s.Entries("T", 0, 0, 100, nil); err != nil || len(got) != 2 {
		t.Fatalf("Entries after rewrite = %v, %v", got, err)
	}

	// Deleting a topic that was never written is not an error.
	if err := s.DeleteTopic("nothing"); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptEntry(t *testing.T) {
	tests := []struct {
		name string
		val  []byte
	}{
		{"empty", nil},
		{"short", make([]byte, valueSize-1)},
		{"long", make([]byte, valueSize+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := kvtest.OpenDB(t)
			s := New(db)
			fill(t, db, 0, 5, loc{"T", 0}, loc{"T", 1})
			if err := db.Set(appendKey(nil, "T", 0, 2), tt.val, pebble.NoSync); err != nil {
				t.Fatal(err)
			}

			got, err := s.Entries("T", 0, 0, 100, nil)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Entries: err = %v, want ErrCorrupt", err)
			}
			if len(got) != 2 {
				t.Fatalf("Entries returned %d entries before the corrupt one, want 2", len(got))
			}
			if _, ok, err := s.Get("T", 0, 2); !errors.Is(err, ErrCorrupt) || ok {
				t.Fatalf("Get: ok=%v err=%v; want false, ErrCorrupt", ok, err)
			}
			// Entries around it and other queues are still readable.
			if got, err := s.Entries("T", 0, 3, 100, nil); err != nil || len(got) != 2 {
				t.Fatalf("Entries after the corrupt one = %v, %v", got, err)
			}
			if e, ok, err := s.Get("T", 1, 2); err != nil || !ok || e != entry(1, 1, 2) {
				t.Fatalf("Get on another queue = %v, %v, %v", e, ok, err)
			}

			// Bounds decodes both ends.
			if err := db.Set(appendKey(nil, "T", 0, 4), tt.val, pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Bounds("T", 0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Bounds with a corrupt last entry: err = %v, want ErrCorrupt", err)
			}
			if err := db.Set(appendKey(nil, "T", 1, 0), tt.val, pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Bounds("T", 1); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Bounds with a corrupt first entry: err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestDecodeShortKey(t *testing.T) {
	if _, err := decode([]byte{Prefix, 0}, make([]byte, valueSize)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decode with a short key: err = %v, want ErrCorrupt", err)
	}
}

func TestKeyLayout(t *testing.T) {
	got := appendKey(nil, "ab", 0x01020304, 0x05060708090a0b0c)
	want := []byte{'q', 2, 'a', 'b', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if !slices.Equal(got, want) {
		t.Fatalf("key = %x, want %x", got, want)
	}
}

func BenchmarkWriterAdd(b *testing.B) {
	db := kvtest.OpenDB(b)
	batch := db.NewBatch()
	defer batch.Close()
	var w Writer
	topic := []byte("orders")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := w.Add(batch, topic, 3, Entry{Offset: int64(i), CommitLogOffset: int64(i) * 200, Size: 200}); err != nil {
			b.Fatal(err)
		}
		if batch.Len() > 64<<20 {
			batch.Reset()
		}
	}
}

func BenchmarkEntries(b *testing.B) {
	db := kvtest.OpenDB(b)
	fill(b, db, 0, 10_000, loc{"orders", 0})
	s := New(db)
	buf := make([]Entry, 0, 32)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var err error
		if buf, err = s.Entries("orders", 0, int64(i%9_000), 32, buf[:0]); err != nil || len(buf) != 32 {
			b.Fatal(len(buf), err)
		}
	}
}
