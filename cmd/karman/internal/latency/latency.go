package latency

import (
	"math"
	"math/bits"
	"time"
)

const (
	subBits  = 5
	subCount = 1 << subBits
	nBuckets = (64 - subBits + 1) * subCount
)

// Histogram counts durations. The zero value is empty and ready to use.
type Histogram struct {
	counts   [nBuckets]uint64
	n        uint64
	sum      int64
	min, max int64
}

func bucket(v uint64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(v) - 1
	sub := int(v>>(e-subBits)) - subCount
	return (e-subBits+1)*subCount + sub
}

// bounds returns the smallest value of bucket i and the bucket's width.
func bounds(i int) (lo, width uint64) {
	if i < subCount {
		return uint64(i), 1
	}
	e := i/subCount + subBits - 1
	sub := uint64(i % subCount)
	shift := e - subBits
	return (subCount + sub) << shift, 1 << shift
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucket(uint64(v))]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest sample, or 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min returns the smallest sample, or 0 when empty.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Mean returns the average sample, or 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / int64(h.n))
}

// Quantile returns the q-quantile (0 < q <= 1) of the samples, or 0 when
// empty: the middle of the bucket holding the sample of rank ceil(q*n),
// clamped to the observed minimum and maximum.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, w := bounds(i)
			v := int64(lo + (w-1)/2)
			return time.Duration(min(max(v, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
