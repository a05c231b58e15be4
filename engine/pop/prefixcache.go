package pop

import (
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// A prefixCache remembers the version-2 CBC-MAC state after the (lengths,
// group, topic) prefix for the (group, topic) pairs in use, so a handle
// costs two block encryptions instead of one per 16 bytes of names.
//
// It is a fixed table of buckets of two entries: its memory is bounded
// however many groups and topics come and go, and a lookup takes no lock
// (entries are immutable and published by atomic pointer), so
// acknowledgements on all cores do not contend. A new pair evicts the
// older entry of its bucket; two pairs sharing a bucket both stay.
type prefixCache struct {
	seed    uint64 // random, so which names share a bucket is not predictable
	buckets [prefixBuckets][2]atomic.Pointer[prefixEntry]
}

const (
	prefixBuckets = 1024 // a power of two
	// maxCachedName bounds the names an entry holds (RocketMQ allows 127
	// bytes for a topic, 255 for a group); longer ones are MACed whole
	// every time, so hostile names cannot make the table large.
	maxCachedName = 255
)

type prefixEntry struct {
	group, topic string
	state        block
}

func (c *prefixCache) init() { c.seed = rand.Uint64() }

func (c *prefixCache) bucket(group, topic string) *[2]atomic.Pointer[prefixEntry] {
	return &c.buckets[c.hash(group, topic)&(prefixBuckets-1)]
}

// hash mixes the names and their lengths. It only spreads pairs over
// buckets: a collision costs time, never correctness, for entries are
// compared whole. It is not hash/maphash because for the short names that
// are the rule that took three times as long, a sixth of Encode's time.
func (c *prefixCache) hash(group, topic string) uint64 {
	g := absorb(c.seed^uint64(len(group)), group)
	t := absorb(c.seed^uint64(len(topic))<<32, topic)
	return mix(g ^ bits.RotateLeft64(t, 31))
}

// absorb mixes s into h 8 bytes at a time, the last word overlapping the
// one before it rather than padded.
func absorb(h uint64, s string) uint64 {
	n := len(s)
	switch {
	case n >= 8:
		for i := 0; i < n-8; i += 8 {
			h = mix(h ^ le64(s[i:]))
		}
		return mix(h ^ le64(s[n-8:]))
	case n >= 4:
		return mix(h ^ uint64(le32(s))<<32 ^ uint64(le32(s[n-4:])))
	case n > 0:
		return mix(h ^ uint64(s[0])<<16 ^ uint64(s[n/2])<<8 ^ uint64(s[n-1]))
	}
	return h
}

// mix multiplies h by an odd constant and folds the 128-bit product (high
// half XOR low half), so each bit of h moves many bits of the result.
func mix(h uint64) uint64 {
	hi, lo := bits.Mul64(h, 0x9e3779b97f4a7c15)
	return hi ^ lo
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// get returns the cached state after the prefix of (group, topic).
func (c *prefixCache) get(group, topic string) (state block, ok bool) {
	b := c.bucket(group, topic)
	for i := range b {
		if e := b[i].Load(); e != nil && e.group == group && e.topic == topic {
			return e.state, true
		}
	}
	return state, false
}

// put caches the state after the prefix of (group, topic).
func (c *prefixCache) put(group, topic string, state block) {
	if len(group) > maxCachedName || len(topic) > maxCachedName {
		return
	}
	// Copy the names: the caller's may be part of a larger string (a
	// handle's text, a request) that the entry must not keep alive.
	e := &prefixEntry{group: strings.Clone(group), topic: strings.Clone(topic), state: state}
	b := c.bucket(group, topic)
	// Two stores, not one atomic step: a racing lookup may miss or see
	// an entry twice, and a racing put may be lost. Either only costs a
	// recomputation.
	b[1].Store(b[0].Load())
	b[0].Store(e)
}

// entries returns the number of entries, for tests.
func (c *prefixCache) entries() int {
	n := 0
	for i := range c.buckets {
		for j := range c.buckets[i] {
			if c.buckets[i][j].Load() != nil {
				n++
			}
		}
	}
	return n
}
