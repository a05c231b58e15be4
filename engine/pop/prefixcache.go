package pop

import (
	"hash/maphash"
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
	seed    maphash.Seed // random, so which names share a bucket is not predictable
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

func (c *prefixCache) init() { c.seed = maphash.MakeSeed() }

func (c *prefixCache) bucket(group, topic string) *[2]atomic.Pointer[prefixEntry] {
	return &c.buckets[c.hash(group, topic)&(prefixBuckets-1)]
}

// hash spreads pairs over buckets: a collision costs time, never
// correctness, for entries are compared whole.
func (c *prefixCache) hash(group, topic string) uint64 {
	return maphash.Comparable(c.seed, prefixKey{group, topic})
}

// prefixKey is what hash hashes.
type prefixKey struct{ group, topic string }

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
