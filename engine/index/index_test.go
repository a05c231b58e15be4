package index

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kvtest"
)

type keyEntry struct {
	topic, key string
	time, off  int64
}

func addKeys(t testing.TB, db *pebble.DB, entries ...keyEntry) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	var w Writer
	for _, e := range entries {
		if err := w.AddKey(b, []byte(e.topic), []byte(e.key), e.time, e.off); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
}

func TestByKey(t *testing.T) {
	db := kvtest.OpenDB(t)
	ix := New(db)
	long := strings.Repeat("k", MaxKeyLen)
	addKeys(t, db,
		// Added out of order: results come back by store time, then offset.
		keyEntry{"T", "order-1", 3000, 300},
		keyEntry{"T", "order-1", 1000, 100},
		keyEntry{"T", "order-1", 2000, 250},
		keyEntry{"T", "order-1", 2000, 200},
		keyEntry{"T", "order-1", 4000, 400},
		// Keys and topics that share prefixes with the ones above.
		keyEntry{"T", "order-10", 1500, 150},
		keyEntry{"T", "order-", 1500, 151},
		keyEntry{"T1", "order-1", 1500, 152},
		keyEntry{"", "order-1", 1500, 153},
		keyEntry{"U", "order-1", 1500, 154},
		// A key that holds a space is indexed as given: splitting a KEYS
		// property into keys is the caller's job.
		keyEntry{"T", "a b", 1000, 500},
		keyEntry{"T", "a", 1000, 501},
		// Unusual bytes.
		keyEntry{"T", "\x00\xff", 1000, 600},
		keyEntry{"T", long, 1000, 700},
		// Not indexed: empty and too long.
		keyEntry{"T", "", 1000, 800},
		keyEntry{"T", long + "k", 1000, 801},
		// A message stored at time 0.
		keyEntry{"Z", "z", 0, 900},
		keyEntry{"Z", "z", math.MaxInt64, 901},
	)
	tests := []struct {
		name       string
		topic, key string
		begin, end int64
		limit      int
		want       []int64
	}{
		{"all", "T", "order-1", 0, math.MaxInt64, 100, []int64{100, 200, 250, 300, 400}},
		{"limit", "T", "order-1", 0, math.MaxInt64, 2, []int64{100, 200}},
		{"limit inside equal times", "T", "order-1", 0, math.MaxInt64, 3, []int64{100, 200, 250}},
		{"limit zero", "T", "order-1", 0, math.MaxInt64, 0, nil},
		{"begin inclusive", "T", "order-1", 2000, math.MaxInt64, 100, []int64{200, 250, 300, 400}},
		{"end inclusive", "T", "order-1", 0, 2000, 100, []int64{100, 200, 250}},
		{"window", "T", "order-1", 1001, 3999, 100, []int64{200, 250, 300}},
		{"exact time", "T", "order-1", 3000, 3000, 100, []int64{300}},
		{"window between", "T", "order-1", 2001, 2999, 100, nil},
		{"before all", "T", "order-1", 0, 999, 100, nil},
		{"after all", "T", "order-1", 4001, math.MaxInt64, 100, nil},
		{"end before begin", "T", "order-1", 3000, 2000, 100, nil},
		{"negative begin", "T", "order-1", -5, 1000, 100, []int64{100}},
		{"longer key", "T", "order-10", 0, math.MaxInt64, 100, []int64{150}},
		{"shorter key", "T", "order-", 0, math.MaxInt64, 100, []int64{151}},
		{"longer topic", "T1", "order-1", 0, math.MaxInt64, 100, []int64{152}},
		{"empty topic", "", "order-1", 0, math.MaxInt64, 100, []int64{153}},
		{"other topic", "U", "order-1", 0, math.MaxInt64, 100, []int64{154}},
		{"key with space", "T", "a b", 0, math.MaxInt64, 100, []int64{500}},
		{"part before space", "T", "a", 0, math.MaxInt64, 100, []int64{501}},
		{"part after space", "T", "b", 0, math.MaxInt64, 100, nil},
		{"binary key", "T", "\x00\xff", 0, math.MaxInt64, 100, []int64{600}},
		{"longest key", "T", long, 0, math.MaxInt64, 100, []int64{700}},
		{"too long key", "T", long + "k", 0, math.MaxInt64, 100, nil},
		{"empty key", "T", "", 0, math.MaxInt64, 100, nil},
		{"unknown key", "T", "order-2", 0, math.MaxInt64, 100, nil},
		{"time zero and max", "Z", "z", 0, math.MaxInt64, 100, []int64{900, 901}},
		{"time max only", "Z", "z", 1, math.MaxInt64, 100, []int64{901}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ix.ByKey(tt.topic, tt.key, tt.begin, tt.end, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ByKey(%q, %.20q, %d, %d, %d) = %v, want %v", tt.topic, tt.key, tt.begin, tt.end, tt.limit, got, tt.want)
			}
		})
	}
}

func TestAddKeySkips(t *testing.T) {
	db := kvtest.OpenDB(t)
	b := db.NewBatch()
	defer b.Close()
	var w Writer
	for _, k := range [][]byte{nil, {}, bytes.Repeat([]byte{'x'}, MaxKeyLen+1)} {
		if err := w.AddKey(b, []byte("T"), k, 1, 2); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range [][]byte{nil, {}, bytes.Repeat([]byte{'x'}, MaxIDLen+1)} {
		if err := w.AddID(b, id, []byte("T"), 3); err != nil {
			t.Fatal(err)
		}
	}
	if !b.Empty() {
		t.Fatalf("batch holds %d bytes after adding only skipped keys and ids", b.Len())
	}
}

func TestByID(t *testing.T) {
	db := kvtest.OpenDB(t)
	ix := New(db)
	b := db.NewBatch()
	var w Writer
	ids := []struct {
		id, topic string
		off       int64
	}{
		{"7F0000010001", "T", 10},
		{"7F000001000", "T", 20},   // a prefix of the first
		{"7F00000100011", "T", 30}, // the first is its prefix
		{"with space", "T", 40},
		{"dup", "T", 50},
		{"dup", "T", 60}, // later wins, as when the log is replayed
		{"zero", "T", 0},
		// One id in several topics: a retried message, then its dead letter.
		{"moved", "orders", 70},
		{"moved", "%RETRY%g", 80},
		{"moved", "%DLQ%g", 90},
		{"moved", "orders", 100}, // resent
		{"moved", "ordersX", 65}, // a topic the other is a prefix of
	}
	for _, e := range ids {
		if err := w.AddID(b, []byte(e.id), []byte(e.topic), e.off); err != nil {
			t.Fatal(err)
		}
	}
	// A key index entry whose bytes could be mistaken for an id entry.
	if err := w.AddKey(b, []byte("T"), []byte("7F0000010001"), 1, 99); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id  string
		off int64
		ok  bool
	}{
		{"7F0000010001", 10, true},
		{"7F000001000", 20, true},
		{"7F00000100011", 30, true},
		{"with space", 40, true},
		{"dup", 60, true},
		{"zero", 0, true},
		{"moved", 100, true}, // the last in any topic
		{"7F00000100", 0, false},
		{"", 0, false},
		{"unknown", 0, false},
	}
	for _, tt := range tests {
		off, ok, err := ix.ByID(tt.id)
		if err != nil || ok != tt.ok || off != tt.off {
			t.Errorf("ByID(%q) = %d, %v, %v; want %d, %v, nil", tt.id, off, ok, err, tt.off, tt.ok)
		}
	}
	inTopic := []struct {
		id, topic string
		off       int64
		ok        bool
	}{
		{"moved", "orders", 100, true},
		{"moved", "%RETRY%g", 80, true},
		{"moved", "%DLQ%g", 90, true},
		{"moved", "ordersX", 65, true},
		{"moved", "order", 0, false},
		{"moved", "", 0, false},
		{"dup", "T", 60, true},
		{"dup", "orders", 0, false},
		{"7F000001000", "T", 20, true},
		{"", "T", 0, false},
	}
	for _, tt := range inTopic {
		off, ok, err := ix.ByIDInTopic(tt.id, tt.topic)
		if err != nil || ok != tt.ok || off != tt.off {
			t.Errorf("ByIDInTopic(%q, %q) = %d, %v, %v; want %d, %v, nil", tt.id, tt.topic, off, ok, err, tt.off, tt.ok)
		}
	}

	// A damaged id entry is an error, not a wrong offset.
	if err := db.Set(append(appendIDPrefix(nil, "bad"), 'T'), []byte{1, 2, 3}, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ix.ByID("bad"); err == nil || ok {
		t.Fatalf("ByID on a damaged entry: ok=%v err=%v; want an error", ok, err)
	}
	if _, ok, err := ix.ByIDInTopic("bad", "T"); err == nil || ok {
		t.Fatalf("ByIDInTopic on a damaged entry: ok=%v err=%v; want an error", ok, err)
	}
}

// An index with entries of the earlier id layout says so, and one without
// does not.
func TestHasLegacyIDs(t *testing.T) {
	db := kvtest.OpenDB(t)
	ix := New(db)
	var w Writer
	b := db.NewBatch()
	if err := w.AddID(b, []byte("id"), []byte("T"), 1); err != nil {
		t.Fatal(err)
	}
	if err := w.AddKey(b, []byte("T"), []byte("k"), 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if legacy, err := ix.HasLegacyIDs(); err != nil || legacy {
		t.Fatalf("HasLegacyIDs = %v, %v on a new index", legacy, err)
	}
	if err := db.Set([]byte{PrefixLegacyID, 'i', 'd'}, make([]byte, 8), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if legacy, err := ix.HasLegacyIDs(); err != nil || !legacy {
		t.Fatalf("HasLegacyIDs = %v, %v with a legacy entry", legacy, err)
	}
}

func TestDeleteTopic(t *testing.T) {
	db := kvtest.OpenDB(t)
	ix := New(db)
	topics := []string{"T", "T1", "T2", "S", "TT", ""}
	var entries []keyEntry
	for i, topic := range topics {
		entries = append(entries, keyEntry{topic, "k", 1000, int64(i)}, keyEntry{topic, "k2", 2000, int64(i + 100)})
	}
	addKeys(t, db, entries...)
	b := db.NewBatch()
	var w Writer
	if err := w.AddID(b, []byte("id-of-T"), []byte("T"), 7); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}

	if err := ix.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	for i, topic := range topics {
		got, err := ix.ByKey(topic, "k", 0, math.MaxInt64, 10)
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		if topic != "T" {
			want = []int64{int64(i)}
		}
		if !slices.Equal(got, want) {
			t.Errorf("after DeleteTopic(T): ByKey(%q, k) = %v, want %v", topic, got, want)
		}
	}
	// The id index is keyed by id first and stays.
	if off, ok, err := ix.ByID("id-of-T"); err != nil || !ok || off != 7 {
		t.Fatalf("ByID after DeleteTopic = %d, %v, %v", off, ok, err)
	}
	if err := ix.DeleteTopic("never"); err != nil {
		t.Fatal(err)
	}
}

func TestKeyLayout(t *testing.T) {
	db := kvtest.OpenDB(t)
	b := db.NewBatch()
	var w Writer
	if err := w.AddKey(b, []byte("ab"), []byte("k"), 0x0102, 0x0304); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if !it.First() {
		t.Fatal("no key written")
	}
	want := []byte{'k', 2, 'a', 'b', 0, 1, 'k', 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4}
	if !bytes.Equal(it.Key(), want) || len(it.Value()) != 0 {
		t.Fatalf("key %x value %x, want key %x and no value", it.Key(), it.Value(), want)
	}
}

func BenchmarkAddKey(b *testing.B) {
	db := kvtest.OpenDB(b)
	batch := db.NewBatch()
	defer batch.Close()
	var w Writer
	topic, key := []byte("orders"), []byte("order-12345")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := w.AddKey(batch, topic, key, int64(i), int64(i)*100); err != nil {
			b.Fatal(err)
		}
		if batch.Len() > 64<<20 {
			batch.Reset()
		}
	}
}
