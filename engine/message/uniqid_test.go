package message

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestGeneratorLayout(t *testing.T) {
	g := NewGenerator(netip.MustParseAddr("192.168.0.10"))
	before := time.Now().UnixMilli()
	id := g.Next()
	after := time.Now().UnixMilli()

	if len(id) != 32 {
		t.Fatalf("id %q has %d characters, want 32", id, len(id))
	}
	if id != strings.ToUpper(id) {
		t.Errorf("id %q is not uppercase", id)
	}
	raw, err := hex.DecodeString(id)
	if err != nil {
		t.Fatalf("id %q is not hex: %v", id, err)
	}
	if got := netip.AddrFrom4([4]byte(raw[:4])); got.String() != "192.168.0.10" {
		t.Errorf("ip = %v", got)
	}
	if got, want := be.Uint16(raw[4:]), uint16(os.Getpid()); got != want {
		t.Errorf("pid = %d, want %d", got, want)
	}
	if got := be.Uint32(raw[6:]); got != processRand {
		t.Errorf("process rand = %#x, want %#x", got, processRand)
	}
	// The time field is ms since the start of the UTC month. The shared
	// clock may run a little ahead of the wall clock if other tests made
	// many ids, so allow some slack after.
	ms := int64(be.Uint32(raw[10:]))
	lo, hi := before-monthStart(before), after-monthStart(after)+1000
	if ms < lo || ms > hi {
		t.Errorf("time field %d outside [%d, %d]", ms, lo, hi)
	}
}

func TestGeneratorHosts(t *testing.T) {
	tests := []struct {
		ip     netip.Addr
		length int
		prefix string
	}{
		{netip.MustParseAddr("10.1.2.3"), 32, "0A010203"},
		{netip.MustParseAddr("::ffff:10.1.2.3"), 32, "0A010203"},
		{netip.MustParseAddr("2001:db8::1"), 56, "20010DB8000000000000000000000001"},
		{netip.Addr{}, 32, ""},
	}
	for _, tt := range tests {
		g := NewGenerator(tt.ip)
		id := g.Next()
		if len(id) != tt.length || !strings.HasPrefix(id, tt.prefix) {
			t.Errorf("NewGenerator(%v).Next() = %q, want %d characters starting %q", tt.ip, id, tt.length, tt.prefix)
		}
		if got := string(g.AppendNext([]byte("x"))); len(got) != 1+tt.length || got[0] != 'x' {
			t.Errorf("AppendNext = %q", got)
		}
	}
}

func TestGeneratorUniqueConcurrent(t *testing.T) {
	const goroutines = 8
	perG := 200_000
	if testing.Short() {
		perG = 20_000
	}
	// Two Generators with the same host share the process clock and must
	// not collide either.
	gens := []*Generator{
		NewGenerator(netip.MustParseAddr("10.0.0.1")),
		NewGenerator(netip.MustParseAddr("10.0.0.1")),
	}
	results := make([][]string, goroutines)
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			g := gens[i%len(gens)]
			ids := make([]string, perG)
			for j := range ids {
				ids[j] = g.Next()
			}
			results[i] = ids
		})
	}
	wg.Wait()
	seen := make(map[string]struct{}, goroutines*perG)
	for _, ids := range results {
		for _, id := range ids {
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate id %s", id)
			}
			seen[id] = struct{}{}
		}
	}
}

func TestLogicalClockBurst(t *testing.T) {
	// More than 65536 stamps inside one millisecond must still be distinct
	// and increasing: the clock runs ahead of the wall clock.
	var c logicalClock
	c.last.Store(uint64(time.Now().UnixMilli()+10_000) << 16) // pretend the clock is ahead
	prev := c.next()
	for range 3 * 65536 {
		s := c.next()
		if s <= prev {
			t.Fatalf("stamp %#x after %#x", s, prev)
		}
		prev = s
	}
}

func TestMonthStart(t *testing.T) {
	tests := []struct {
		at, want string
	}{
		{"2024-02-29T23:59:59.999Z", "2024-02-01T00:00:00Z"},
		{"2024-03-01T00:00:00Z", "2024-03-01T00:00:00Z"},
		{"2024-12-31T12:00:00Z", "2024-12-01T00:00:00Z"},
		{"2025-01-15T08:00:00Z", "2025-01-01T00:00:00Z"},
		{"2024-03-01T00:00:00.001Z", "2024-03-01T00:00:00Z"},
	}
	for _, tt := range tests {
		at, _ := time.Parse(time.RFC3339Nano, tt.at)
		want, _ := time.Parse(time.RFC3339, tt.want)
		if got := monthStart(at.UnixMilli()); got != want.UnixMilli() {
			t.Errorf("monthStart(%s) = %s, want %s", tt.at, time.UnixMilli(got).UTC(), tt.want)
		}
	}
	// The cache still answers for the current month afterwards.
	now := time.Now().UnixMilli()
	if got := monthStart(now); now-got < 0 || now-got > 31*24*3600*1000 {
		t.Errorf("monthStart(now) = %d, now %d", got, now)
	}
}

func TestGeneratorAllocs(t *testing.T) {
	g := NewGenerator(netip.MustParseAddr("10.0.0.1"))
	g.Next() // fill the month cache
	var sink string
	if n := testing.AllocsPerRun(1000, func() { sink = g.Next() }); n != 1 {
		t.Errorf("Next: %v allocs, want 1", n)
	}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(1000, func() { buf = g.AppendNext(buf[:0]) }); n != 0 {
		t.Errorf("AppendNext: %v allocs, want 0", n)
	}
	_ = sink
}

func ExampleGenerator() {
	g := NewGenerator(netip.MustParseAddr("192.168.0.10"))
	id := g.Next()
	fmt.Println(len(id), id[:8])
	// Output: 32 C0A8000A
}

func BenchmarkGeneratorNext(b *testing.B) {
	g := NewGenerator(netip.MustParseAddr("10.0.0.1"))
	b.SetBytes(32)
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Next()
	}
}

func BenchmarkGeneratorAppendNext(b *testing.B) {
	g := NewGenerator(netip.MustParseAddr("10.0.0.1"))
	buf := make([]byte, 0, 64)
	b.SetBytes(32)
	b.ReportAllocs()
	for b.Loop() {
		buf = g.AppendNext(buf[:0])
	}
}

func BenchmarkGeneratorNextParallel(b *testing.B) {
	g := NewGenerator(netip.MustParseAddr("10.0.0.1"))
	b.SetBytes(32)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = g.Next()
		}
	})
}
