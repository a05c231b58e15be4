package pop

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOffsetsAgainstMap adds, takes and drops offsets at random and
// compares the set with a map doing the same, and checks that its runs
// stay sorted, disjoint and apart.
func TestOffsetsAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s Offsets
		model := map[int64]bool{}
		for range 300 {
			switch op := r.IntN(10); {
			case op < 6:
				off := r.Int64N(200)
				s.Add(off)
				model[off] = true
			case op < 8:
				lo := r.Int64N(200)
				hi := lo + r.Int64N(20)
				s.AddSpan(lo, hi)
				for off := lo; off < hi; off++ {
					model[off] = true
				}
			case op < 9:
				lo := r.Int64N(200)
				hi := s.TakeRunAt(lo)
				if hi != lo {
					for off := lo; off < hi; off++ {
						if !model[off] {
							t.Fatalf("round %d: TakeRunAt(%d) = %d, but %d was not in the set", round, lo, hi, off)
						}
						delete(model, off)
					}
					if model[hi] {
						t.Fatalf("round %d: TakeRunAt(%d) stopped at %d, which is in the set", round, lo, hi)
					}
				}
			default:
				below := r.Int64N(200)
				s.DropBelow(below)
				for off := range model {
					if off < below {
						delete(model, off)
					}
				}
			}
			want := slices.Sorted(maps.Keys(model))
			if got := s.All(); !slices.Equal(got, want) {
				t.Fatalf("round %d: set %v, want %v", round, got, want)
			}
			if s.Len() != int64(len(want)) || s.Empty() != (len(want) == 0) {
				t.Fatalf("round %d: Len %d, Empty %t for %d offsets", round, s.Len(), s.Empty(), len(want))
			}
			for off := int64(-1); off < 222; off++ {
				if s.Has(off) != model[off] {
					t.Fatalf("round %d: Has(%d) = %t", round, off, s.Has(off))
				}
			}
			for i, run := range s.runs {
				if run.hi <= run.lo || (i > 0 && s.runs[i-1].hi >= run.lo) {
					t.Fatalf("round %d: runs %v not sorted, disjoint and apart", round, s.runs)
				}
			}
		}
	}
}

// TestDoneKeepsRuns checks that the offsets acknowledged above a message
// left in flight cost a run, not an entry each, in memory and encoded.
func TestDoneKeepsRuns(t *testing.T) {
	q := NewQueue(0)
	deliver(q, 100_001, 1)
	for off := int64(1); off <= 100_000; off++ {
		q.Finish(off)
	}
	if len(q.Done.runs) != 1 || q.Done.Len() != 100_000 || q.AckedBelow != 0 {
		t.Fatalf("runs %d holding %d offsets, AckedBelow %d; want 1, 100000, 0", len(q.Done.runs), q.Done.Len(), q.AckedBelow)
	}
	b, _ := q.MarshalBinary()
	if len(b) > 64 {
		t.Fatalf("state of one message in flight encodes in %d bytes", len(b))
	}
	if !q.Finish(0) || q.AckedBelow != 100_001 || !q.Done.Empty() {
		t.Fatalf("after finishing the first: AckedBelow %d, %d done; want 100001, 0", q.AckedBelow, q.Done.Len())
	}
}

// TestUnmarshalEarlierFormat decodes state written before finished
// offsets were kept as runs: a list of single offsets and nothing after.
func TestUnmarshalEarlierFormat(t *testing.T) {
	var b []byte
	b = binary.AppendVarint(b, 10) // AckedBelow
	b = binary.AppendVarint(b, 20) // Cursor
	b = binary.AppendUvarint(b, 1) // in flight
	b = binary.AppendVarint(b, 11)
	b = binary.AppendVarint(b, 5_000) // deadline
	b = binary.AppendVarint(b, 2)     // attempt
	b = binary.AppendUvarint(b, 7)    // nonce
	b = binary.AppendUvarint(b, 0)    // group
	b = binary.AppendUvarint(b, 0)    // attempt id
	b = binary.AppendUvarint(b, 4)    // done, in no order
	for _, off := range []int64{15, 13, 12, 14} {
		b = binary.AppendVarint(b, off)
	}
	var q Queue
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	want := queueOf(10, 20, map[int64]*Inflight{11: {Deadline: 5_000, Attempt: 2, Nonce: 7}}, 12, 13, 14, 15)
	if q.AckedBelow != want.AckedBelow || q.Cursor != want.Cursor || !slices.Equal(q.Done.All(), want.Done.All()) ||
		len(q.Inflight) != 1 || *q.Inflight[11] != *want.Inflight[11] {
		t.Fatalf("decoded %+v (done %v), want %+v (done %v)", q, q.Done.All(), want, want.Done.All())
	}
	// Offsets finished at AckedBelow move it, as Finish would have.
	b2, _ := queueOf(10, 20, nil).MarshalBinary()
	b2 = b2[:len(b2)-2] // no runs, and an empty list...
	b2 = binary.AppendUvarint(b2, 2)
	b2 = binary.AppendVarint(b2, 10)
	b2 = binary.AppendVarint(b2, 11) // ...replaced by 10 and 11
	if err := q.UnmarshalBinary(b2); err != nil || q.AckedBelow != 12 || !q.Done.Empty() {
		t.Fatalf("decoded AckedBelow %d, done %v, err %v; want 12, none", q.AckedBelow, q.Done.All(), err)
	}
}

// Len returns the number of offsets in the set.
func (s *Offsets) Len() int64 {
	var n int64
	for _, r := range s.runs {
		n += r.hi - r.lo
	}
	return n
}

// Empty reports whether the set holds no offset.
func (s *Offsets) Empty() bool { return len(s.runs) == 0 }

// All returns the offsets in order.
func (s *Offsets) All() []int64 {
	var out []int64
	for _, r := range s.runs {
		for off := r.lo; off < r.hi; off++ {
			out = append(out, off)
		}
	}
	return out
}
