package packet

import (
	"encoding/binary"
	"unicode/utf8"
)

// varintLen returns the number of bytes of n as a variable byte integer.
func varintLen(n int) int {
	switch {
	case n < 128:
		return 1
	case n < 16384:
		return 2
	case n < 2097152:
		return 3
	default:
		return 4
	}
}

func appendVarint(dst []byte, n int) []byte {
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(dst, b)
		}
		dst = append(dst, b|0x80)
	}
}

// decodeVarint reads a variable byte integer from b. It rejects a fifth
// byte and, when shortest is set, encodings longer than needed.
func decodeVarint(b []byte, shortest bool) (n, size int, err *Error) {
	mult := 0
	for i := 0; i < 4; i++ {
		if i >= len(b) {
			return 0, 0, errTruncated
		}
		c := b[i]
		n |= int(c&0x7f) << mult
		if c&0x80 == 0 {
			if shortest && i > 0 && c == 0 {
				return 0, 0, malformed("variable byte integer not in its shortest form")
			}
			return n, i + 1, nil
		}
		mult += 7
	}
	return 0, 0, malformed("variable byte integer longer than 4 bytes")
}

// validUTF8 reports whether s is well-formed UTF-8 without U+0000
// (utf8.Valid rejects surrogates and overlong forms but accepts NUL).
func validUTF8(s []byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0 {
			return false
		}
		if c >= utf8.RuneSelf {
			rest := s[i:]
			if !utf8.Valid(rest) {
				return false
			}
			for _, c := range rest {
				if c == 0 {
					return false
				}
			}
			return true
		}
	}
	return true
}

// rd is a cursor over a packet body.
type rd struct {
	b []byte
	i int
}

func (r *rd) left() int { return len(r.b) - r.i }

func (r *rd) byte() (byte, *Error) {
	if r.i >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.i]
	r.i++
	return c, nil
}

func (r *rd) u16() (uint16, *Error) {
	if r.left() < 2 {
		return 0, errTruncated
	}
	v := binary.BigEndian.Uint16(r.b[r.i:])
	r.i += 2
	return v, nil
}

func (r *rd) u32() (uint32, *Error) {
	if r.left() < 4 {
		return 0, errTruncated
	}
	v := binary.BigEndian.Uint32(r.b[r.i:])
	r.i += 4
	return v, nil
}

func (r *rd) varint() (int, *Error) {
	n, size, err := decodeVarint(r.b[r.i:], true)
	if err != nil {
		return 0, err
	}
	r.i += size
	return n, nil
}

// binary returns a length-prefixed byte string aliasing the body.
func (r *rd) binary() ([]byte, *Error) {
	n, err := r.u16()
	if err != nil {
		return nil, err
	}
	if r.left() < int(n) {
		return nil, errTruncated
	}
	b := r.b[r.i : r.i+int(n) : r.i+int(n)]
	r.i += int(n)
	return b, nil
}

// stringBytes returns a length-prefixed UTF-8 string, checked, aliasing
// the body.
func (r *rd) stringBytes() ([]byte, *Error) {
	b, err := r.binary()
	if err != nil {
		return nil, err
	}
	if !validUTF8(b) {
		return nil, malformed("string is not well-formed UTF-8 or contains U+0000")
	}
	return b, nil
}

func (r *rd) string() (string, *Error) {
	b, err := r.stringBytes()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func appendU16(dst []byte, v uint16) []byte { return append(dst, byte(v>>8), byte(v)) }

func appendU32(dst []byte, v uint32) []byte {
	return append(dst, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendString(dst []byte, s string) []byte {
	dst = appendU16(dst, uint16(len(s)))
	return append(dst, s...)
}

func appendBinary(dst []byte, b []byte) []byte {
	dst = appendU16(dst, uint16(len(b)))
	return append(dst, b...)
}

// appendHeader appends a fixed header.
func appendHeader(dst []byte, first byte, remaining int) []byte {
	return appendVarint(append(dst, first), remaining)
}

// packetSize is the size of a packet whose remaining length is rl.
func packetSize(rl int) int { return 1 + varintLen(rl) + rl }
