package latency

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestIndexAndLowerAgree(t *testing.T) {
	next := uint64(0)
	for i := range buckets - 1 {
		lo, w := lower(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		if index(lo) != i || index(lo+w-1) != i {
			t.Fatalf("bucket %d = [%d, %d): index gives %d and %d", i, lo, lo+w, index(lo), index(lo+w-1))
		}
		next = lo + w
	}
	if next != 1<<topExp {
		t.Fatalf("buckets end at %d, want %d", next, uint64(1)<<topExp)
	}
	for _, v := range []uint64{1 << topExp, 1<<topExp + 1, 1<<64 - 1} {
		if index(v) != lastIndex {
			t.Errorf("index(%d) = %d, want the last bucket %d", v, index(v), lastIndex)
		}
	}
}

func TestQuantileAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var h Histogram
	samples := make([]time.Duration, 50000)
	for i := range samples {
		samples[i] = time.Duration(r.ExpFloat64()*float64(300*time.Microsecond)) + time.Microsecond
		h.Record(samples[i])
	}
	slices.Sort(samples)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := samples[int(q*float64(len(samples)))-1]
		got := h.Quantile(q)
		if e := float64(got-want) / float64(want); e > 0.02 || e < -0.02 {
			t.Errorf("quantile %v = %v, want %v within 2%%", q, got, want)
		}
	}
	if h.Count() != uint64(len(samples)) || h.Min() != samples[0] || h.Max() != samples[len(samples)-1] {
		t.Errorf("count, min, max = %d, %v, %v", h.Count(), h.Min(), h.Max())
	}
}

func TestHugeAndNegativeSamples(t *testing.T) {
	var h Histogram
	h.Record(-time.Second)
	h.Record(100 * time.Hour)
	if h.Min() != 0 || h.Max() != 100*time.Hour || h.Quantile(1) != 100*time.Hour || h.Quantile(0.5) != 0 {
		t.Errorf("min %v max %v q1 %v q.5 %v", h.Min(), h.Max(), h.Quantile(1), h.Quantile(0.5))
	}
}

func TestMerge(t *testing.T) {
	var a, b, all Histogram
	for i := range 2000 {
		d := time.Duration(i*i) * time.Nanosecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&Histogram{})
	m.Merge(&a)
	m.Merge(&b)
	if m != all {
		t.Error("merging two halves differs from recording everything into one")
	}
	m.Reset()
	if m.Count() != 0 || m.Quantile(0.99) != 0 || m.Mean() != 0 {
		t.Error("reset histogram is not empty")
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := new(Histogram)
	if n := testing.AllocsPerRun(1000, func() { h.Record(4321 * time.Nanosecond) }); n != 0 {
		t.Errorf("Record allocates %v times", n)
	}
}
