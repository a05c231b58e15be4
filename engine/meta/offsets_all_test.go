package meta

import (
	"slices"
	"testing"
)

func TestAllOffsets(t *testing.T) {
	s := openTemp(t)
	commits := []CommittedOffset{
		{"g1", "orders", 0, 5},
		{"g1", "orders", 3, 1 << 40},
		{"g1", "audit", 1, 7},
		{"g2", "orders", 0, 0},
	}
	for _, c := range commits {
		mustNil(t, s.CommitOffset(c.Group, c.Topic, c.Queue, c.Offset))
	}
	mustNil(t, s.PutSecret("k", []byte("not an offset")))
	var got []CommittedOffset
	mustNil(t, s.AllOffsets(func(c CommittedOffset) bool { got = append(got, c); return true }))
	want := []CommittedOffset{
		{"g1", "audit", 1, 7},
		{"g1", "orders", 0, 5},
		{"g1", "orders", 3, 1 << 40},
		{"g2", "orders", 0, 0},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("AllOffsets = %v, want %v", got, want)
	}
	// fn returning false stops the walk.
	n := 0
	mustNil(t, s.AllOffsets(func(CommittedOffset) bool { n++; return n < 2 }))
	if n != 2 {
		t.Fatalf("AllOffsets went on after fn returned false: %d calls", n)
	}
}
