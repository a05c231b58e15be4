package pop

import (
	"cmp"
	"slices"
)

// Offsets is a set of queue offsets kept as sorted runs of consecutive
// offsets. Acknowledgements mostly arrive in order, so the offsets done
// above a message still in flight form a few long runs: the set costs
// memory and encoding by the gaps between them, not by the offsets.
type Offsets struct {
	runs []span // sorted, disjoint, never adjacent
}

// span is the offsets [lo, hi).
type span struct{ lo, hi int64 }

// Add puts off in the set.
func (s *Offsets) Add(off int64) {
	s.AddSpan(off, off+1)
}

// AddSpan puts the offsets [lo, hi) in the set; an empty span adds
// nothing.
func (s *Offsets) AddSpan(lo, hi int64) {
	if hi <= lo {
		return
	}
	n := len(s.runs)
	if n == 0 || s.runs[n-1].hi < lo {
		s.runs = append(s.runs, span{lo, hi}) // past the end: the common case
		return
	}
	// The first run that ends at or after lo, and the first that starts
	// after hi: the runs between touch [lo, hi) and merge with it.
	i, _ := slices.BinarySearchFunc(s.runs, lo, func(r span, lo int64) int { return cmp.Compare(r.hi, lo) })
	j, _ := slices.BinarySearchFunc(s.runs[i:], hi+1, func(r span, v int64) int { return cmp.Compare(r.lo, v) })
	j += i
	if i == j {
		s.runs = slices.Insert(s.runs, i, span{lo, hi})
		return
	}
	merged := span{min(lo, s.runs[i].lo), max(hi, s.runs[j-1].hi)}
	s.runs[i] = merged
	s.runs = slices.Delete(s.runs, i+1, j)
}

// Has reports whether off is in the set.
func (s *Offsets) Has(off int64) bool {
	i, _ := slices.BinarySearchFunc(s.runs, off, func(r span, off int64) int { return cmp.Compare(r.hi, off+1) })
	return i < len(s.runs) && s.runs[i].lo <= off
}

// TakeRunAt removes the run that starts at lo, if there is one, and
// returns the offset after it; otherwise it returns lo.
func (s *Offsets) TakeRunAt(lo int64) int64 {
	if len(s.runs) == 0 || s.runs[0].lo != lo {
		return lo
	}
	hi := s.runs[0].hi
	s.runs = s.runs[1:]
	if len(s.runs) == 0 {
		s.runs = nil
	}
	return hi
}

// DropBelow removes the offsets below off.
func (s *Offsets) DropBelow(off int64) {
	i := 0
	for i < len(s.runs) && s.runs[i].hi <= off {
		i++
	}
	s.runs = s.runs[i:]
	if len(s.runs) == 0 {
		s.runs = nil
		return
	}
	s.runs[0].lo = max(s.runs[0].lo, off)
}

// Clear empties the set.
func (s *Offsets) Clear() { s.runs = nil }
