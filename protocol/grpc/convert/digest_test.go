package convert

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// checksumOf is each client's own computation of the digest d names.
func checksumOf(body []byte, d Digest) string {
	c := crc32.ChecksumIEEE(body)
	switch d {
	case DigestCRC32Decimal: // Node.js: `${crc32(body)}`
		return strconv.FormatUint(uint64(c), 10)
	case DigestCRC32Hex: // Java: Long.toHexString(crc).toUpperCase()
		return strings.ToUpper(strconv.FormatUint(uint64(c), 16))
	case DigestCRC32Hex8: // Python: format(crc, "08X")
		return fmt.Sprintf("%08X", c)
	}
	return md5Upper(body)
}

var allDigests = []Digest{DigestMD5, DigestCRC32Decimal, DigestCRC32Hex, DigestCRC32Hex8}

func TestChecksum(t *testing.T) {
	cases := []struct {
		body string
		d    Digest
		want string
	}{
		{"123456789", DigestCRC32Decimal, "3421780262"}, // the CRC-32 check value, 0xCBF43926
		{"123456789", DigestCRC32Hex, "CBF43926"},
		{"123456789", DigestCRC32Hex8, "CBF43926"},
		{"body-144", DigestCRC32Decimal, "14316631"}, // 0x00DA7457
		{"body-144", DigestCRC32Hex, "DA7457"},
		{"body-144", DigestCRC32Hex8, "00DA7457"},
		{"", DigestCRC32Decimal, "0"},
		{"", DigestCRC32Hex, "0"},
		{"", DigestCRC32Hex8, "00000000"},
		{"hello", DigestMD5, "5D41402ABC4B2A76B9719D911017C592"},
	}
	for _, c := range cases {
		if got := string(appendChecksum([]byte("x"), []byte(c.body), c.d)); got != "x"+c.want {
			t.Errorf("%q, digest %d: got %s, want x%s", c.body, c.d, got, c.want)
		}
		if got := checksumOf([]byte(c.body), c.d); got != c.want {
			t.Errorf("%q, digest %d: the client computes %s, want %s", c.body, c.d, got, c.want)
		}
	}
}

func TestDigestFor(t *testing.T) {
	want := map[rmqpb.Language]Digest{
		rmqpb.Language_NODE_JS: DigestCRC32Decimal,
		rmqpb.Language_JAVA:    DigestCRC32Hex,
		rmqpb.Language_KOTLIN:  DigestCRC32Hex,
		rmqpb.Language_GOLANG:  DigestCRC32Hex,
		rmqpb.Language_DOT_NET: DigestCRC32Hex,
		rmqpb.Language_PYTHON:  DigestCRC32Hex8,
		rmqpb.Language_CPP:     DigestCRC32Hex8,
	}
	for v := range rmqpb.Language_name {
		lang := rmqpb.Language(v)
		d := DigestFor(lang)
		if d != want[lang] { // the zero value, MD5, for the others
			t.Errorf("%s: digest %d, want %d", lang, d, want[lang])
		}
		if (d == DigestMD5) != (d.Type() == rmqpb.DigestType_MD5) || (d != DigestMD5) != (d.Type() == rmqpb.DigestType_CRC32) {
			t.Errorf("%s: digest %d has type %s", lang, d, d.Type())
		}
	}
}

// Deliver and AppendMessage write the digest a client of each kind
// computes for the body it gets, a compressed record's inflated body
// included.
func TestDeliverDigests(t *testing.T) {
	z := zlibBytes(t, []byte(strings.Repeat("z", 300)))
	recs := map[string][]byte{
		"plain":      stored(t, "T", []byte("123456789"), 0),
		"empty body": stored(t, "T", nil, 0),
		"compressed": stored(t, "T", z, message.SysFlagCompressed),
	}
	for name, rec := range recs {
		for _, dg := range allDigests {
			d := Delivery{Topic: "T", Handle: "h", Digest: dg}
			m, err := Deliver(rec, d)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			bd := m.GetSystemProperties().GetBodyDigest()
			if bd.GetType() != dg.Type() || bd.GetChecksum() != checksumOf(m.GetBody(), dg) {
				t.Errorf("%s, digest %d: %v for body %q", name, dg, bd, m.GetBody())
			}
			checkWire(t, rec, d, m)
		}
	}
}
