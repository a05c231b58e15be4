package pop

import (
	"encoding/base64"
	"unsafe"
)

// The binary part of a version-2 handle is written as unpadded base64url
// (RFC 4648 section 5), strict: spare bits must be zero, so a value has
// one text. The decoder skips line breaks even in strict mode, but the
// tail has a fixed length, and a text holding one decodes to too few
// bytes.
var tailEncoding = base64.RawURLEncoding.Strict()

// encodeTail writes src as base64url.
func encodeTail(dst *[tailLen]byte, src *[rawLen]byte) {
	tailEncoding.Encode(dst[:], src[:])
}

// decodeTail is the inverse of encodeTail. It reports false for text of
// the wrong length, with a byte outside the alphabet, or whose spare bits
// are not zero; dst then holds garbage.
func decodeTail(dst *[rawLen]byte, text string) bool {
	if len(text) != tailLen {
		return false
	}
	// Decode only reads its source.
	n, err := tailEncoding.Decode(dst[:], unsafe.Slice(unsafe.StringData(text), len(text)))
	return err == nil && n == rawLen
}
