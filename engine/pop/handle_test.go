package pop

import (
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// sign returns body with a valid MAC for group appended, so tests can hand
// the parser bodies Encode would never produce.
func sign(s *Signer, body, group string) string {
	return body + " " + hex.EncodeToString(s.mac(group, body, nil))
}

func TestHandleRoundTrip(t *testing.T) {
	s := NewSigner(testKey)
	tests := []struct {
		name  string
		h     Handle
		group string
	}{
		{"zero", Handle{}, "G"},
		{"typical", Handle{Topic: "orders", Queue: 3, Offset: 12345, Nonce: 77, Deadline: 1_700_000_000_000}, "G"},
		{"extremes", Handle{Topic: "%RETRY%G", Queue: math.MaxInt32, Offset: math.MaxInt64, Nonce: math.MaxUint32, Deadline: math.MaxInt64}, "G"},
		{"negatives", Handle{Topic: "t", Queue: math.MinInt32, Offset: math.MinInt64, Deadline: -1}, "G"},
		{"empty topic", Handle{Queue: 1, Offset: 2}, "G"},
		{"empty group", Handle{Topic: "t"}, ""},
		{"long names", Handle{Topic: strings.Repeat("t", 255), Offset: 1}, strings.Repeat("g", 255)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := s.Encode(tt.h, tt.group)
			got, err := s.Decode(text, tt.group)
			if err != nil || got != tt.h {
				t.Fatalf("Decode(Encode(%+v)) = %+v, %v", tt.h, got, err)
			}
			// The text is printable, starts with the version and has
			// seven fields.
			if f := strings.Split(text, " "); len(f) != 7 || f[0] != "1" || len(f[6]) != 2*macLen {
				t.Fatalf("Encode = %q: want 7 fields, version 1, %d hex digits of MAC", text, 2*macLen)
			}
			// Another signer with the same key accepts it.
			if got, err := NewSigner(testKey).Decode(text, tt.group); err != nil || got != tt.h {
				t.Fatalf("a second signer with the same key: %+v, %v", got, err)
			}
		})
	}
}

func TestHandleLayout(t *testing.T) {
	s := NewSigner(testKey)
	text := s.Encode(Handle{Topic: "T", Queue: 2, Offset: 30, Nonce: 4, Deadline: 500}, "G")
	if !strings.HasPrefix(text, "1 T 2 30 4 500 ") {
		t.Fatalf("Encode = %q", text)
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

func TestHandleInvalid(t *testing.T) {
	s := NewSigner(testKey)
	other := NewSigner([]byte("another key"))
	h := Handle{Topic: "orders", Queue: 3, Offset: 12345, Nonce: 77, Deadline: 1_700_000_000_000}
	good := s.Encode(h, "G")
	goodBody := good[:strings.LastIndexByte(good, ' ')]
	goodMAC := good[strings.LastIndexByte(good, ' ')+1:]
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == '0' {
			b[i] = '1'
		} else {
			b[i] = '0'
		}
		return string(b)
	}
	tests := []struct {
		name, text, group string
	}{
		{"empty", "", "G"},
		{"no spaces", "garbage", "G"},
		{"wrong group", good, "G2"},
		{"group prefix", good, ""},
		{"other key", other.Encode(h, "G"), "G"},
		{"forged MAC", goodBody + " " + strings.Repeat("0", 2*macLen), "G"},
		{"flipped MAC digit", flip(good, len(good)-1), "G"},
		{"changed offset", strings.Replace(good, " 12345 ", " 12346 ", 1), "G"},
		{"changed deadline", strings.Replace(good, " 1700000000000 ", " 1800000000000 ", 1), "G"},
		{"changed topic", strings.Replace(good, " orders ", " orderz ", 1), "G"},
		{"MAC not hex", goodBody + " zz" + goodMAC[2:], "G"},
		{"MAC odd length", good[:len(good)-1], "G"},
		{"MAC too short", good[:len(good)-2], "G"},
		{"MAC too long", good + "00", "G"},
		{"full-length MAC", goodBody + " " + hex.EncodeToString(append(s.mac("G", goodBody, nil), make([]byte, 24)...)), "G"},
		{"MAC missing", goodBody, "G"},
		{"trailing space", good + " ", "G"},
		{"leading space", " " + good, "G"},
		// Bodies with a valid MAC that do not parse.
		{"truncated body", sign(s, "1 orders 3 12345 77", "G"), "G"},
		{"extra field", sign(s, "1 orders 3 12345 77 1700000000000 9", "G"), "G"},
		{"topic with space", sign(s, "1 my topic 3 12345 77 1700000000000", "G"), "G"},
		{"version 2", sign(s, "2 orders 3 12345 77 1700000000000", "G"), "G"},
		{"version missing", sign(s, " orders 3 12345 77 1700000000000", "G"), "G"},
		{"queue not a number", sign(s, "1 orders x 12345 77 1700000000000", "G"), "G"},
		{"queue too big", sign(s, "1 orders 2147483648 12345 77 1700000000000", "G"), "G"},
		{"offset not a number", sign(s, "1 orders 3 1e5 77 1700000000000", "G"), "G"},
		{"offset too big", sign(s, "1 orders 3 9223372036854775808 77 1700000000000", "G"), "G"},
		{"negative nonce", sign(s, "1 orders 3 12345 -1 1700000000000", "G"), "G"},
		{"nonce too big", sign(s, "1 orders 3 12345 4294967296 1700000000000", "G"), "G"},
		{"deadline not a number", sign(s, "1 orders 3 12345 77 soon", "G"), "G"},
		{"empty number", sign(s, "1 orders  12345 77 1700000000000", "G"), "G"},
		{"hex number", sign(s, "1 orders 0x3 12345 77 1700000000000", "G"), "G"},
		{"underscore number", sign(s, "1 orders 3 12_345 77 1700000000000", "G"), "G"},
		{"empty body", sign(s, "", "G"), "G"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Decode(tt.text, tt.group)
			if !errors.Is(err, ErrInvalidHandle) {
				t.Fatalf("Decode(%q, %q) = %+v, %v; want ErrInvalidHandle", tt.text, tt.group, got, err)
			}
			if got != (Handle{}) {
				t.Fatalf("Decode(%q) returned %+v with its error", tt.text, got)
			}
		})
	}
}

// TestHandleCanonical checks that a delivery has exactly one valid handle
// text: spellings of the same fields that Encode would not produce (a
// plus sign, leading zeros, upper-case MAC digits) are refused, even with a
// valid MAC.
func TestHandleCanonical(t *testing.T) {
	s := NewSigner(testKey)
	good := s.Encode(Handle{Topic: "T", Queue: 3, Offset: 5, Nonce: 7, Deadline: 9}, "G")
	tests := []struct {
		name, text string
	}{
		{"plus sign", sign(s, "1 T +3 5 7 9", "G")},
		{"leading zero", sign(s, "1 T 3 05 7 9", "G")},
		{"negative zero", sign(s, "1 T 3 5 7 -0", "G")},
		{"upper-case MAC", good[:strings.LastIndexByte(good, ' ')+1] + strings.ToUpper(good[strings.LastIndexByte(good, ' ')+1:])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
			for j := range 200 {
				h := Handle{Topic: "T", Queue: int32(i), Offset: int64(j), Nonce: uint32(i * j), Deadline: int64(j)}
				group := string(rune('a' + i))
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

func BenchmarkSignerEncode(b *testing.B) {
	s := NewSigner(testKey)
	h := Handle{Topic: "orders", Queue: 3, Offset: 123456789, Nonce: 4242, Deadline: 1_700_000_000_000}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Encode(h, "group-1")
	}
}

func BenchmarkSignerDecode(b *testing.B) {
	s := NewSigner(testKey)
	text := s.Encode(Handle{Topic: "orders", Queue: 3, Offset: 123456789, Nonce: 4242, Deadline: 1_700_000_000_000}, "group-1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Decode(text, "group-1"); err != nil {
			b.Fatal(err)
		}
	}
}
