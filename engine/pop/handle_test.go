package pop

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// typical is a handle as the engine issues them.
var typical = Handle{Topic: "orders", Queue: 3, Offset: 12345, Nonce: 77, Deadline: 1_700_000_000_000}

// refMAC computes the version-2 MAC from its definition, with the
// standard library's CBC mode and none of the Signer's code: AES-128 keyed
// with the start of SHA-256(label, key), CBC with a zero IV over the
// lengths of group and topic (8 bytes each, big-endian), the group, the
// topic and the fields, each zero-padded to whole blocks; the MAC is the
// start of the last block.
func refMAC(key []byte, group, topic string, fields []byte) []byte {
	k := sha256.Sum256(append([]byte("karman pop receipt handle v2\x00"), key...))
	b, err := aes.NewCipher(k[:16])
	if err != nil {
		panic(err)
	}
	pad := func(p []byte) []byte {
		for len(p)%aes.BlockSize != 0 {
			p = append(p, 0)
		}
		return p
	}
	in := binary.BigEndian.AppendUint64(nil, uint64(len(group)))
	in = binary.BigEndian.AppendUint64(in, uint64(len(topic)))
	in = append(in, pad([]byte(group))...)
	in = append(in, pad([]byte(topic))...)
	in = append(in, pad(append([]byte(nil), fields...))...)
	out := make([]byte, len(in))
	cipher.NewCBCEncrypter(b, make([]byte, aes.BlockSize)).CryptBlocks(out, in)
	return out[len(out)-aes.BlockSize:][:macLen]
}

// signV2 completes body, meant to be "2 <topic> <32 base64url characters
// of fields>", with the MAC the signer computes for group, so tests and
// the fuzzer reach the checks behind the MAC. It returns body unchanged
// if the fields do not decode.
func signV2(s *Signer, body, group string) string {
	const fieldsText = fieldsLen * 4 / 3
	if len(body) < 2+1+fieldsText {
		return body
	}
	topic := body[2 : len(body)-fieldsText-1]
	fields, err := base64.RawURLEncoding.Strict().DecodeString(body[len(body)-fieldsText:])
	if err != nil || len(fields) != fieldsLen {
		return body
	}
	var raw [rawLen]byte
	copy(raw[:], fields)
	mac, _, _ := s.macV2(new(block), group, topic, &raw)
	return body + base64.RawURLEncoding.EncodeToString(mac[:])
}

// handleCases are the handles the round-trip tests encode and decode.
var handleCases = []struct {
	name  string
	h     Handle
	group string
}{
	{"zero", Handle{}, "G"},
	{"typical", typical, "G"},
	{"extremes", Handle{Topic: "%RETRY%G", Queue: math.MaxInt32, Offset: math.MaxInt64, Nonce: math.MaxUint32, Deadline: math.MaxInt64}, "G"},
	{"negatives", Handle{Topic: "t", Queue: math.MinInt32, Offset: math.MinInt64, Deadline: -1}, "G"},
	{"empty topic", Handle{Queue: 1, Offset: 2}, "G"},
	{"empty group", Handle{Topic: "t"}, ""},
	{"empty both", Handle{Offset: 1}, ""},
	{"long names", Handle{Topic: strings.Repeat("t", 255), Offset: 1}, strings.Repeat("g", 255)},
	{"names too long to cache", Handle{Topic: strings.Repeat("t", 256), Offset: 1}, strings.Repeat("g", 1000)},
	{"block-sized names", Handle{Topic: strings.Repeat("t", 16), Offset: 1}, strings.Repeat("g", 32)},
	{"topic with spaces", Handle{Topic: " a b ", Offset: 1}, "G"},
	{"group with spaces", Handle{Topic: "t", Offset: 1}, "a b"},
}

func TestHandleRoundTrip(t *testing.T) {
	s := NewSigner(testKey)
	for _, tt := range handleCases {
		t.Run(tt.name, func(t *testing.T) {
			text := s.Encode(tt.h, tt.group)
			got, err := s.Decode(text, tt.group)
			if err != nil || got != tt.h {
				t.Fatalf("Decode(Encode(%+v)) = %+v, %v", tt.h, got, err)
			}
			// Version, topic, tail of printable characters.
			prefix := "2 " + tt.h.Topic + " "
			if !strings.HasPrefix(text, prefix) || len(text) != len(prefix)+tailLen {
				t.Fatalf("Encode = %q: want %q and %d characters", text, prefix, tailLen)
			}
			for _, c := range text[len(prefix):] {
				if !strings.ContainsRune(alphabet, c) {
					t.Fatalf("Encode = %q: %q is not base64url", text, c)
				}
			}
			// Another signer with the same key, whose cache is empty,
			// accepts it; so does this one the second time (cached).
			for _, signer := range []*Signer{NewSigner(testKey), s} {
				if got, err := signer.Decode(text, tt.group); err != nil || got != tt.h {
					t.Fatalf("Decode again: %+v, %v", got, err)
				}
			}
		})
	}
}

// TestHandleLayout decodes a handle with the standard library and checks
// its fields and MAC against their definition.
func TestHandleLayout(t *testing.T) {
	s := NewSigner(testKey)
	for _, group := range []string{"G", "", strings.Repeat("g", 40)} {
		for _, topic := range []string{"T", "", strings.Repeat("t", 33)} {
			h := Handle{Topic: topic, Queue: -2, Offset: 30, Nonce: 0xa1b2c3d4, Deadline: 500}
			text := s.Encode(h, group)
			tail, ok := strings.CutPrefix(text, "2 "+topic+" ")
			if !ok {
				t.Fatalf("Encode = %q", text)
			}
			raw, err := base64.RawURLEncoding.Strict().DecodeString(tail)
			if err != nil || len(raw) != rawLen {
				t.Fatalf("tail %q: %d bytes, %v", tail, len(raw), err)
			}
			want := []byte{
				0xff, 0xff, 0xff, 0xfe, // queue
				0, 0, 0, 0, 0, 0, 0, 30, // offset
				0xa1, 0xb2, 0xc3, 0xd4, // nonce
				0, 0, 0, 0, 0, 0, 0x01, 0xf4, // deadline
			}
			want = append(want, refMAC(testKey, group, topic, want)...)
			if string(raw) != string(want) {
				t.Fatalf("group %q, topic %q: raw %x, want %x", group, topic, raw, want)
			}
		}
	}
}

// TestHandleGolden decodes texts issued by earlier builds (the version-1
// ones by the last build that wrote version 1): handles must stay valid
// across restarts and upgrades as long as the key does.
func TestHandleGolden(t *testing.T) {
	s := NewSigner(testKey)
	tests := []struct {
		name, text string
		want       Handle
	}{
		{"version 1", "1 orders 3 12345 77 1700000000000 70fdefb96fefa51f", typical},
		{"version 1 extremes", "1 %RETRY%G 2147483647 9223372036854775807 4294967295 -1 48d7c22a83fe0dfb",
			Handle{Topic: "%RETRY%G", Queue: math.MaxInt32, Offset: math.MaxInt64, Nonce: math.MaxUint32, Deadline: -1}},
		{"version 2", "2 orders AAAAAwAAAAAAADA5AAAATQAAAYvP5WgA8VXM1F3QgHA", typical},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := s.Decode(tt.text, "G"); err != nil || got != tt.want {
				t.Fatalf("Decode(%q) = %+v, %v; want %+v", tt.text, got, err, tt.want)
			}
		})
	}
	if got := s.Encode(typical, "G"); got != tests[2].text {
		t.Fatalf("Encode(%+v) = %q, want %q", typical, got, tests[2].text)
	}
}

func TestHandleNonceChangesText(t *testing.T) {
	s := NewSigner(testKey)
	h := Handle{Topic: "T", Queue: 1, Offset: 2, Nonce: 1, Deadline: 3}
	a := s.Encode(h, "G")
	h.Nonce++
	if b := s.Encode(h, "G"); a == b {
		t.Fatalf("two nonces, one handle text %q", a)
	}
}

// wantInvalid fails unless Decode refuses text with ErrInvalidHandle and
// a zero Handle.
func wantInvalid(t *testing.T, s *Signer, text, group string) {
	t.Helper()
	got, err := s.Decode(text, group)
	if !errors.Is(err, ErrInvalidHandle) {
		t.Fatalf("Decode(%q, %q) = %+v, %v; want ErrInvalidHandle", text, group, got, err)
	}
	if got != (Handle{}) {
		t.Fatalf("Decode(%q) returned %+v with its error", text, got)
	}
}

func TestHandleInvalid(t *testing.T) {
	s := NewSigner(testKey)
	other := NewSigner([]byte("another key"))
	good := s.Encode(typical, "G")
	tail := good[len(good)-tailLen:]
	otherOffset := typical
	otherOffset.Offset++
	tests := []struct {
		name, text, group string
	}{
		{"empty", "", "G"},
		{"garbage", "garbage", "G"},
		{"version only", "2", "G"},
		{"version and space", "2 ", "G"},
		{"unknown version", "3" + good[1:], "G"},
		{"wrong group", good, "G2"},
		{"group prefix", good, ""},
		{"group extended", good, "GG"},
		{"other key", other.Encode(typical, "G"), "G"},
		{"other topic", "2 orderz " + tail, "G"},
		{"boundary of group and topic moved", "2 rders " + tail, "Go"},
		{"fields of another handle", s.Encode(otherOffset, "G")[:len(good)-11] + good[len(good)-11:], "G"},
		{"MAC zeroed", good[:len(good)-11] + strings.Repeat("A", 11), "G"},
		{"MAC missing", good[:len(good)-11], "G"},
		{"no space after version", "2" + good[2:], "G"},
		{"no space before tail", "2 orders" + tail, "G"},
		{"tail only", tail, "G"},
		{"trailing space", good + " ", "G"},
		{"trailing character", good + "A", "G"},
		{"leading space", " " + good, "G"},
		{"all spaces", strings.Repeat(" ", v2Overhead), "G"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantInvalid(t, s, tt.text, tt.group)
		})
	}
}

// TestHandleAnyChangeRefused changes, removes or inserts each byte of a
// valid handle (its version, topic, separators, fields and MAC): every
// other text is refused, for the fields are all under the MAC and there
// is one valid text per handle.
func TestHandleAnyChangeRefused(t *testing.T) {
	s := NewSigner(testKey)
	good := s.Encode(typical, "G")
	for i := range len(good) {
		for c := range 256 {
			if byte(c) != good[i] {
				wantInvalid(t, s, good[:i]+string(byte(c))+good[i+1:], "G")
			}
		}
		wantInvalid(t, s, good[:i]+good[i+1:], "G")
		wantInvalid(t, s, good[:i], "G")
	}
	for i := range len(good) + 1 {
		for _, c := range " A\n=" {
			wantInvalid(t, s, good[:i]+string(c)+good[i:], "G")
		}
	}
}

// TestHandleCanonical checks that a version-2 handle has exactly one
// valid text: spellings a lenient base64 decoder would take for the same
// bytes are refused, though their MAC is right.
func TestHandleCanonical(t *testing.T) {
	s := NewSigner(testKey)
	good := s.Encode(typical, "G")
	last := strings.IndexByte(alphabet, good[len(good)-1])
	// A handle whose tail has the characters base64url and base64 spell
	// differently.
	var urlChars string
	for n := uint32(0); ; n++ {
		h := typical
		h.Nonce = n
		if urlChars = s.Encode(h, "G"); strings.ContainsAny(urlChars[len(urlChars)-tailLen:], "-_") {
			break
		}
	}
	tests := []struct {
		name, text string
	}{
		{"spare bits set", good[:len(good)-1] + string(alphabet[last|1])},
		{"spare bits set high", good[:len(good)-1] + string(alphabet[last|2])},
		{"standard alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(urlChars)},
		{"padded", good + "="},
		{"line break in tail", good[:len(good)-20] + "\n" + good[len(good)-20:]},
		{"line break for a character", good[:len(good)-20] + "\n" + good[len(good)-19:]},
	}
	// The premise: a lenient decoder reads the same bytes.
	lenient, _ := base64.RawURLEncoding.DecodeString(tests[0].text[len(good)-tailLen:])
	if strict, _ := base64.RawURLEncoding.DecodeString(good[len(good)-tailLen:]); string(lenient) != string(strict) {
		t.Fatalf("spare bits changed the bytes: %x, %x", lenient, strict)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.text == good {
				t.Fatal("the test case is the valid text")
			}
			if h, err := s.Decode(tt.text, "G"); !errors.Is(err, ErrInvalidHandle) {
				t.Fatalf("Decode(%q) = %+v, %v; want ErrInvalidHandle (canonical text is %q)", tt.text, h, err, good)
			}
		})
	}
}

func TestSignerConcurrent(t *testing.T) {
	s := NewSigner(testKey)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 500 {
				// Shared and own pairs, more than the cache holds, so
				// lookups race with insertions and evictions.
				h := Handle{Topic: "T" + string(rune('a'+j%7)), Queue: int32(i), Offset: int64(j), Nonce: uint32(i * j), Deadline: int64(j)}
				group := string(rune('a'+i)) + string(rune('0'+j%600))
				got, err := s.Decode(s.Encode(h, group), group)
				if err != nil || got != h {
					t.Errorf("round trip of %+v = %+v, %v", h, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestNewSignerCopiesKey(t *testing.T) {
	key := []byte("secret")
	s := NewSigner(key)
	text := s.Encode(Handle{Topic: "T"}, "G")
	key[0] = 'X'
	if _, err := s.Decode(text, "G"); err != nil {
		t.Fatalf("changing the caller's key slice changed the signer: %v", err)
	}
}

// benchHandle is a typical handle: a short topic, a large offset, a
// random nonce and a deadline a minute ahead of now.
var benchHandle = Handle{Topic: "BenchTopic", Queue: 3, Offset: 123_456_789, Nonce: 0x9e3779b9, Deadline: 1_760_000_060_000}

func BenchmarkSignerEncode(b *testing.B) {
	s := NewSigner(testKey)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Encode(benchHandle, "BenchGroup")
	}
}

func BenchmarkSignerDecode(b *testing.B) {
	s := NewSigner(testKey)
	text := s.Encode(benchHandle, "BenchGroup")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Decode(text, "BenchGroup"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSignerDecodeParallel decodes on all cores: the cache lookup
// must not contend.
func BenchmarkSignerDecodeParallel(b *testing.B) {
	s := NewSigner(testKey)
	text := s.Encode(benchHandle, "BenchGroup")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Decode(text, "BenchGroup"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSignerEncodeUncached issues handles for more (group, topic)
// pairs than the cache holds: the cost of a miss.
func BenchmarkSignerEncodeUncached(b *testing.B) {
	s := NewSigner(testKey)
	topics := make([]string, 4*2*prefixBuckets)
	for i := range topics {
		topics[i] = "BenchTopic" + string(rune('A'+i%26)) + string(rune('A'+i/26%26)) + string(rune('A'+i/676))
	}
	h := benchHandle
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Topic = topics[i%len(topics)]
		_ = s.Encode(h, "BenchGroup")
		i++
	}
}
