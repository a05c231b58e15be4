package message

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"sync/atomic"
	"time"
)

// A Generator makes client unique message ids (PropertyUniqKey) for
// messages that arrive without one, in the layout of the Java client:
//
//	+---------+-------+--------------+------------------+---------+
//	| host IP |  pid  | process rand | ms in this month | counter |
//	| 4 or 16 |   2   |      4       |        4         |    2    |
//	+---------+-------+--------------+------------------+---------+
//
// written as uppercase hex: 32 characters for an IPv4 host, 56 for IPv6 (as
// Java does on an IPv6-only host). "process rand" stands in for Java's
// class-loader hash: a random value drawn once per process. Months are
// calendar months in UTC.
//
// The last six bytes come from one process-wide logical clock (the Unix
// time in ms and a 16-bit counter) that only moves forward: when more than
// 65536 ids are made in one millisecond, or the wall clock steps back, the
// clock runs ahead of the wall clock until it catches up. Ids from the
// Generators of one process therefore never repeat within a month.
//
// A Generator is safe for concurrent use; it takes no locks.
type Generator struct {
	prefix    [uniqPrefixMaxLen]byte // uppercase hex of host IP, pid and process rand
	prefixLen int
}

const (
	uniqPrefixMaxLen = 2 * (16 + 2 + 4) // IPv6 host
	uniqSuffixLen    = 2 * (4 + 2)
)

// processRand stands in for the class-loader hash of Java ids.
var processRand = rand.Uint32()

// NewGenerator returns a Generator for a broker reachable at ip. An IPv4 or
// IPv4-mapped address takes 4 bytes of the id, an IPv6 address 16; when ip
// is invalid, 4 random bytes stand in for it, as the Go client does when it
// finds no address.
func NewGenerator(ip netip.Addr) *Generator {
	var raw [16 + 2 + 4]byte
	b := raw[:0]
	switch {
	case !ip.IsValid():
		b = be.AppendUint32(b, rand.Uint32())
	case ip.Is4() || ip.Is4In6():
		a := ip.Unmap().As4()
		b = append(b, a[:]...)
	default:
		a := ip.As16()
		b = append(b, a[:]...)
	}
	b = be.AppendUint16(b, uint16(os.Getpid()))
	b = be.AppendUint32(b, processRand)

	g := &Generator{}
	g.prefixLen = len(appendHexUpper(g.prefix[:0], b))
	return g
}

// Next returns a new id. Its only allocation is the string.
func (g *Generator) Next() string {
	var buf [uniqPrefixMaxLen + uniqSuffixLen]byte
	return string(g.AppendNext(buf[:0]))
}

// AppendNext appends a new id to dst. It allocates only when dst lacks
// capacity.
func (g *Generator) AppendNext(dst []byte) []byte {
	stamp := uniqClock.next()
	ms := int64(stamp >> 16)
	var raw [6]byte
	be.PutUint32(raw[:4], uint32(ms-monthStart(ms)))
	be.PutUint16(raw[4:], uint16(stamp))
	dst = append(dst, g.prefix[:g.prefixLen]...)
	return appendHexUpper(dst, raw[:])
}

// uniqClock is the process-wide clock behind every Generator.
var uniqClock logicalClock

// logicalClock hands out strictly increasing stamps of the form
// unixMilli<<16 | counter, never behind the wall clock's current ms.
type logicalClock struct {
	last atomic.Uint64
}

func (c *logicalClock) next() uint64 {
	now := max(time.Now().UnixMilli(), 0)
	wall := uint64(now) << 16
	for {
		last := c.last.Load()
		stamp := max(wall, last+1)
		if c.last.CompareAndSwap(last, stamp) {
			return stamp
		}
	}
}

// monthWindow is one calendar month (UTC) in ms since the epoch: [start, end).
type monthWindow struct {
	start, end int64
}

// currentMonth caches the month of recent ids so that most calls skip the
// calendar arithmetic; it is replaced once a month.
var currentMonth atomic.Pointer[monthWindow]

// monthStart returns the start of the UTC calendar month holding ms.
func monthStart(ms int64) int64 {
	if w := currentMonth.Load(); w != nil && w.start <= ms && ms < w.end {
		return w.start
	}
	t := time.UnixMilli(ms).UTC()
	start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	w := &monthWindow{start: start.UnixMilli(), end: start.AddDate(0, 1, 0).UnixMilli()}
	if old := currentMonth.Load(); old == nil || old.start < w.start {
		currentMonth.CompareAndSwap(old, w)
	}
	return w.start
}
