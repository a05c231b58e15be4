package engine

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kvtest"
)

// TestSortedSets checks that the dispatcher's buffered entries reach the
// batch in key order, a repeated key keeping its last value.
func TestSortedSets(t *testing.T) {
	db := kvtest.OpenDB(t)
	var s sortedSets
	for _, kv := range [][2]string{{"q3", "a"}, {"u9", "b"}, {"q1", "c"}, {"u9", "d"}, {"q2", "e"}, {"q3", "f"}} {
		if err := s.Set([]byte(kv[0]), []byte(kv[1]), nil); err != nil {
			t.Fatal(err)
		}
	}
	b := db.NewBatch()
	if err := s.apply(b); err != nil {
		t.Fatal(err)
	}
	var keys []string
	r := b.Reader()
	for {
		_, k, _, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		keys = append(keys, string(k))
	}
	if got := len(keys); got != 6 || keys[0] != "q1" || keys[1] != "q2" || keys[5] != "u9" {
		t.Fatalf("batch order %v", keys)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"q3": "f", "u9": "d", "q1": "c"} {
		v, closer, err := db.Get([]byte(k))
		if err != nil || string(v) != want {
			t.Fatalf("%s = %q, %v; want %q", k, v, err, want)
		}
		closer.Close()
	}
	if len(s.pairs) != 0 || len(s.buf) != 0 {
		t.Fatal("apply left pairs behind")
	}
}

// TestSortedSetsManyRepeats: with more pairs than a small sort handles
// by insertion, equal keys still reach the batch in the order they were
// set, so the last value wins.
func TestSortedSetsManyRepeats(t *testing.T) {
	var s sortedSets
	last := map[string]string{}
	for i := range 600 {
		k := fmt.Sprintf("k%02d", (i*7919)%37)
		v := fmt.Sprintf("v%04d", i)
		if err := s.Set([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		last[k] = v
	}
	db := kvtest.OpenDB(t)
	b := db.NewBatch()
	if err := s.apply(b); err != nil {
		t.Fatal(err)
	}
	r := b.Reader()
	var prevK, prevV string
	for n := 0; ; n++ {
		_, k, v, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if n != 600 {
				t.Fatalf("%d pairs in the batch, want 600", n)
			}
			break
		}
		if string(k) < prevK || string(k) == prevK && string(v) <= prevV {
			t.Fatalf("%s=%s after %s=%s", k, v, prevK, prevV)
		}
		prevK, prevV = string(k), string(v)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	for k, want := range last {
		v, closer, err := db.Get([]byte(k))
		if err != nil || string(v) != want {
			t.Fatalf("%s = %q, %v; want %q", k, v, err, want)
		}
		closer.Close()
	}
}
