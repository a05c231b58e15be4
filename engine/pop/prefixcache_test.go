package pop

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// TestPrefixCacheBounded issues and checks handles for many more (group,
// topic) pairs than the cache holds: it stays within its table, and every
// handle still checks, whether its pair is cached or evicted.
func TestPrefixCacheBounded(t *testing.T) {
	s := NewSigner(testKey)
	const pairs = 5 * 2 * prefixBuckets
	texts := make([]string, pairs)
	for i := range pairs {
		h := Handle{Topic: fmt.Sprintf("topic-%d", i%97), Offset: int64(i)}
		texts[i] = s.Encode(h, fmt.Sprintf("group-%d", i))
	}
	if n := s.prefixes.entries(); n > 2*prefixBuckets {
		t.Fatalf("%d entries after %d pairs, more than the %d slots", n, pairs, 2*prefixBuckets)
	}
	for i, text := range texts {
		want := Handle{Topic: fmt.Sprintf("topic-%d", i%97), Offset: int64(i)}
		if got, err := s.Decode(text, fmt.Sprintf("group-%d", i)); err != nil || got != want {
			t.Fatalf("Decode(%q) = %+v, %v; want %+v", text, got, err, want)
		}
	}
}

// TestPrefixCacheLongNames checks that names longer than maxCachedName are
// not cached (so hostile names cannot grow the table's memory) and still
// work.
func TestPrefixCacheLongNames(t *testing.T) {
	s := NewSigner(testKey)
	long := strings.Repeat("x", maxCachedName+1)
	for _, p := range [][2]string{{long, "T"}, {"G", long}} {
		h := Handle{Topic: p[1], Offset: 7}
		text := s.Encode(h, p[0])
		if got, err := s.Decode(text, p[0]); err != nil || got != h {
			t.Fatalf("Decode of a handle with long names = %+v, %v", got, err)
		}
	}
	if n := s.prefixes.entries(); n != 0 {
		t.Fatalf("%d entries for names too long to cache", n)
	}
}

// TestPrefixCacheLearnsOnlyValid checks that Decode caches a pair only for
// a handle whose MAC holds: forged handles naming new topics must not
// evict the pairs in use.
func TestPrefixCacheLearnsOnlyValid(t *testing.T) {
	s := NewSigner(testKey)
	issuer := NewSigner(testKey)
	tail := issuer.Encode(typical, "G")[len("2 orders "):]
	for i := range 100 {
		wantInvalid(t, s, fmt.Sprintf("2 forged-%d %s", i, tail), "G")
	}
	if n := s.prefixes.entries(); n != 0 {
		t.Fatalf("%d entries after forged handles only", n)
	}
	if _, err := s.Decode(issuer.Encode(typical, "G"), "G"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.prefixes.get("G", "orders"); !ok {
		t.Fatal("a valid handle's pair is not cached")
	}
}

// TestPrefixCacheConsistent checks that a cached state is the one the
// prefix computes, and that an entry copies its names rather than keep the
// handle text they came from alive.
func TestPrefixCacheConsistent(t *testing.T) {
	s := NewSigner(testKey)
	text := NewSigner(testKey).Encode(Handle{Topic: "orders"}, "G")
	if _, err := s.Decode(text, "G"); err != nil {
		t.Fatal(err)
	}
	var want block
	s.prefix(&want, "G", "orders")
	if state, ok := s.prefixes.get("G", "orders"); !ok || state != want {
		t.Fatalf("cached state %x, %v; want %x", state, ok, want)
	}
	e := s.prefixes.bucket("G", "orders")[0].Load()
	start := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	if p := uintptr(unsafe.Pointer(unsafe.StringData(e.topic))); p >= start && p < start+uintptr(len(text)) {
		t.Fatal("the cached topic points into the handle text")
	}
}
