// Package latency is a fixed-size histogram of durations for load
// generators: recording a sample never allocates, and quantiles come back
// within about 1.6% of the true value.
//
// Samples are nanoseconds. Values below 64 ns have a bucket each; above,
// every power of two is cut into 64 equal buckets, up to 2^40 ns (about
// 18 minutes); longer samples land in the last bucket but Max keeps their
// exact value.
//
// A Histogram is not safe for concurrent use: give each goroutine its own
// (or guard one with a mutex) and Merge them afterwards.
package latency

import (
	"math"
	"math/bits"
	"time"
)

const (
	precision = 6              // bits of mantissa kept above the leading one
	linear    = 1 << precision // values below this have a bucket each
	topExp    = 40             // values from 2^topExp on share the last bucket
	buckets   = (topExp-precision+1)*linear + 1
	lastIndex = buckets - 1
)

// Histogram counts durations. Its zero value is empty and ready to use.
type Histogram struct {
	count    [buckets]uint64
	n        uint64
	sum      uint64
	min, max uint64
}

// index returns the bucket of v.
func index(v uint64) int {
	if v < linear {
		return int(v)
	}
	exp := bits.Len64(v) - 1 // position of the leading one, >= precision
	if exp >= topExp {
		return lastIndex
	}
	mant := int(v>>(exp-precision)) & (linear - 1)
	return (exp-precision+1)*linear + mant
}

// lower returns the smallest value of bucket i and the bucket's width.
func lower(i int) (lo, width uint64) {
	if i < linear {
		return uint64(i), 1
	}
	if i == lastIndex {
		return 1 << topExp, math.MaxUint64 - 1<<topExp
	}
	exp := i/linear + precision - 1
	mant := uint64(i % linear)
	shift := exp - precision
	return (linear + mant) << shift, 1 << shift
}

// Record adds one sample; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	var v uint64
	if d > 0 {
		v = uint64(d)
	}
	h.count[index(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// Merge adds the samples of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.count {
		h.count[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{} }

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Min returns the smallest sample, 0 when empty.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max returns the largest sample, 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the average sample, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Quantile returns the q-quantile (0 < q <= 1): the middle of the bucket
// holding the sample of rank ceil(q·n), kept within [Min, Max]. It returns
// 0 when h is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i := range h.count {
		seen += h.count[i]
		if seen < rank {
			continue
		}
		if i == lastIndex {
			return time.Duration(h.max)
		}
		lo, w := lower(i)
		return time.Duration(min(max(lo+w/2, h.min), h.max))
	}
	return time.Duration(h.max)
}
