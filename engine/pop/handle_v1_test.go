package pop

import (
	"encoding/hex"
	"strings"
	"testing"
)

// sign returns body with a valid version-1 MAC for group appended, so
// tests can hand the parser bodies the version-1 encoder never produced.
func sign(s *Signer, body, group string) string {
	return body + " " + hex.EncodeToString(s.macV1(group, body, nil))
}

// encodeV1 returns the text a broker issuing version 1 wrote for h.
func encodeV1(s *Signer, h Handle, group string) string {
	return sign(s, string(appendBodyV1(nil, h)), group)
}

func TestHandleV1Decodes(t *testing.T) {
	s := NewSigner(testKey)
	for _, tt := range handleCases {
		if tt.h.Topic == "" || strings.ContainsRune(tt.h.Topic, ' ') {
			continue // version 1 separates its fields with spaces
		}
		t.Run(tt.name, func(t *testing.T) {
			text := encodeV1(s, tt.h, tt.group)
			if got, err := s.Decode(text, tt.group); err != nil || got != tt.h {
				t.Fatalf("Decode(%q) = %+v, %v; want %+v", text, got, err, tt.h)
			}
		})
	}
}

func TestHandleV1Invalid(t *testing.T) {
	s := NewSigner(testKey)
	other := NewSigner([]byte("another key"))
	good := encodeV1(s, typical, "G")
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
		{"no spaces", "1garbage", "G"},
		{"wrong group", good, "G2"},
		{"group prefix", good, ""},
		{"other key", encodeV1(other, typical, "G"), "G"},
		{"forged MAC", goodBody + " " + strings.Repeat("0", 2*macLen), "G"},
		{"flipped MAC digit", flip(good, len(good)-1), "G"},
		{"changed offset", strings.Replace(good, " 12345 ", " 12346 ", 1), "G"},
		{"changed deadline", strings.Replace(good, " 1700000000000 ", " 1800000000000 ", 1), "G"},
		{"changed topic", strings.Replace(good, " orders ", " orderz ", 1), "G"},
		{"MAC not hex", goodBody + " zz" + goodMAC[2:], "G"},
		{"MAC odd length", good[:len(good)-1], "G"},
		{"MAC too short", good[:len(good)-2], "G"},
		{"MAC too long", good + "00", "G"},
		{"full-length MAC", goodBody + " " + hex.EncodeToString(append(s.macV1("G", goodBody, nil), make([]byte, 24)...)), "G"},
		{"MAC missing", goodBody, "G"},
		{"trailing space", good + " ", "G"},
		{"leading space", " " + good, "G"},
		// Bodies with a valid MAC that do not parse.
		{"truncated body", sign(s, "1 orders 3 12345 77", "G"), "G"},
		{"extra field", sign(s, "1 orders 3 12345 77 1700000000000 9", "G"), "G"},
		{"topic with space", sign(s, "1 my topic 3 12345 77 1700000000000", "G"), "G"},
		{"version 2 layout", sign(s, "2 orders 3 12345 77 1700000000000", "G"), "G"},
		{"version missing", sign(s, " orders 3 12345 77 1700000000000", "G"), "G"},
		{"version 1 with another digit", sign(s, "10 orders 3 12345 77 1700000000000", "G"), "G"},
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
			wantInvalid(t, s, tt.text, tt.group)
		})
	}
}

// TestHandleV1Canonical checks that a version-1 handle is accepted only as
// version 1 wrote it: a plus sign, leading zeros or upper-case MAC digits
// are refused, even with a valid MAC.
func TestHandleV1Canonical(t *testing.T) {
	s := NewSigner(testKey)
	good := encodeV1(s, Handle{Topic: "T", Queue: 3, Offset: 5, Nonce: 7, Deadline: 9}, "G")
	i := strings.LastIndexByte(good, ' ') + 1
	tests := []struct {
		name, text string
	}{
		{"plus sign", sign(s, "1 T +3 5 7 9", "G")},
		{"leading zero", sign(s, "1 T 3 05 7 9", "G")},
		{"negative zero", sign(s, "1 T 3 5 7 -0", "G")},
		{"upper-case MAC", good[:i] + strings.ToUpper(good[i:])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.text == good {
				t.Fatal("the test case is the valid text")
			}
			wantInvalid(t, s, tt.text, "G")
		})
	}
}

func BenchmarkSignerDecodeV1(b *testing.B) {
	s := NewSigner(testKey)
	text := encodeV1(s, benchHandle, "BenchGroup")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Decode(text, "BenchGroup"); err != nil {
			b.Fatal(err)
		}
	}
}
