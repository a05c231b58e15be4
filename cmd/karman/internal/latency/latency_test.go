package latency

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	for _, v := range []uint64{0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 1000, 1 << 20, 123456789, 1<<62 + 12345, 1<<64 - 1} {
		i := bucket(v)
		if i < 0 || i >= nBuckets {
			t.Fatalf("bucket(%d) = %d, outside [0, %d)", v, i, nBuckets)
		}
		lo, w := bounds(i)
		if v < lo || v-lo >= w {
			t.Errorf("value %d in bucket %d = [%d, %d+%d)", v, i, lo, lo, w)
		}
	}
}

func TestBucketsAreContiguous(t *testing.T) {
	next := uint64(0)
	for i := range nBuckets {
		lo, w := bounds(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		next = lo + w
		if next == 0 { // wrapped past the last value
			if i != nBuckets-1 {
				t.Fatalf("bucket %d reaches the end of uint64 before the last bucket", i)
			}
		}
	}
}

func TestQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	samples := make([]time.Duration, 100000)
	for i := range samples {
		samples[i] = time.Duration(r.ExpFloat64() * float64(200*time.Microsecond))
		h.Record(samples[i])
	}
	slices.Sort(samples)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := samples[int(q*float64(len(samples)))-1]
		got := h.Quantile(q)
		if d := float64(got-want) / float64(want); d > 0.04 || d < -0.04 {
			t.Errorf("q%.3f = %v, want %v within 4%%", q, got, want)
		}
	}
	if h.Count() != uint64(len(samples)) || h.Max() != samples[len(samples)-1] || h.Min() != samples[0] {
		t.Errorf("count/min/max = %d/%v/%v, want %d/%v/%v", h.Count(), h.Min(), h.Max(), len(samples), samples[0], samples[len(samples)-1])
	}
}

func TestMerge(t *testing.T) {
	var a, b, all Histogram
	for i := range 1000 {
		d := time.Duration(i) * time.Microsecond
		all.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Histogram{})
	if m != all {
		t.Errorf("merged histogram differs from one fed every sample")
	}
}

func TestEmpty(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Error("empty histogram reports non-zero figures")
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := new(Histogram)
	if n := testing.AllocsPerRun(1000, func() { h.Record(1234 * time.Nanosecond) }); n != 0 {
		t.Errorf("Record allocates %v times per call", n)
	}
}
