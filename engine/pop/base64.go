package pop

import "encoding/binary"

// The binary part of a version-2 handle is written as unpadded base64url
// (RFC 4648 section 5). These fixed-size coders replace encoding/base64
// on the hot path: they cost a fraction of its time for 32 bytes, and
// decoding refuses everything encoding would not write (encoding/base64
// skips line breaks even in strict mode), so a handle has one text.

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// b64Values maps a byte to its 6 bits, pre-shifted for each of the four
// positions in a group of 24 bits, so decoding a group is four lookups
// OR-ed together. A byte outside the alphabet maps to b64Invalid in every
// position, so OR-ing the values of a text shows whether any is invalid.
const b64Invalid = 1 << 31

var b64Values = func() (t [4][256]uint32) {
	for pos := range t {
		for c := range t[pos] {
			t[pos][c] = b64Invalid
		}
		for v := range len(b64Alphabet) {
			t[pos][b64Alphabet[v]] = uint32(v) << (18 - 6*pos)
		}
	}
	return t
}()

// Both coders see the 256 bits of a raw handle as four big-endian 64-bit
// words, split into five groups of 48 bits (8 characters each: one 64-bit
// store when encoding) and 16 bits left over, written as 3 characters
// with two zero bits to spare.

const mask48 = 1<<48 - 1

// b64Pairs maps 12 bits to their two characters, as a little-endian
// uint16, so encoding looks up one pair instead of two characters.
var b64Pairs = func() (t [1 << 12]uint16) {
	for i := range t {
		t[i] = uint16(b64Alphabet[i>>6]) | uint16(b64Alphabet[i&63])<<8
	}
	return t
}()

// encodeTail writes src as base64url.
func encodeTail(dst *[tailLen]byte, src *[rawLen]byte) {
	w0 := binary.BigEndian.Uint64(src[0:])
	w1 := binary.BigEndian.Uint64(src[8:])
	w2 := binary.BigEndian.Uint64(src[16:])
	w3 := binary.BigEndian.Uint64(src[24:])
	put48(dst[0:], w0>>16)
	put48(dst[8:], w0<<32|w1>>32)
	put48(dst[16:], w1<<16|w2>>48)
	put48(dst[24:], w2)
	put48(dst[32:], w3>>16)
	v := w3 << 8 // the last 16 bits, followed by the spare bits (zero)
	dst[40] = b64Alphabet[v>>18&63]
	dst[41] = b64Alphabet[v>>12&63]
	dst[42] = b64Alphabet[v>>6&63]
}

// put48 writes the low 48 bits of g as 8 characters.
func put48(dst []byte, g uint64) {
	binary.LittleEndian.PutUint64(dst,
		uint64(b64Pairs[g>>36&0xfff])|
			uint64(b64Pairs[g>>24&0xfff])<<16|
			uint64(b64Pairs[g>>12&0xfff])<<32|
			uint64(b64Pairs[g&0xfff])<<48)
}

// decodeTail is the inverse of encodeTail. It reports false for text of
// the wrong length, with a byte outside the alphabet, or whose spare bits
// are not zero; dst then holds garbage.
func decodeTail(dst *[rawLen]byte, text string) bool {
	if len(text) != tailLen {
		return false
	}
	g0, s0 := get48(text[0:8])
	g1, s1 := get48(text[8:16])
	g2, s2 := get48(text[16:24])
	g3, s3 := get48(text[24:32])
	g4, s4 := get48(text[32:40])
	v := b64Values[0][text[40]] | b64Values[1][text[41]] | b64Values[2][text[42]]
	binary.BigEndian.PutUint64(dst[0:], g0<<16|g1>>32)
	binary.BigEndian.PutUint64(dst[8:], g1<<32|g2>>16)
	binary.BigEndian.PutUint64(dst[16:], g2<<48|g3)
	binary.BigEndian.PutUint64(dst[24:], g4<<16|uint64(v>>8&0xffff))
	// The low byte of v holds the spare bits (and the absent fourth
	// character's place).
	return (s0|s1|s2|s3|s4|v)&b64Invalid == 0 && byte(v) == 0
}

// get48 returns the 48 bits 8 characters stand for, and their lookups
// OR-ed together, with b64Invalid set if any is outside the alphabet.
func get48(t string) (uint64, uint32) {
	hi := b64Values[0][t[0]] | b64Values[1][t[1]] | b64Values[2][t[2]] | b64Values[3][t[3]]
	lo := b64Values[0][t[4]] | b64Values[1][t[5]] | b64Values[2][t[6]] | b64Values[3][t[7]]
	return (uint64(hi)<<24 | uint64(lo)) & mask48, hi | lo
}
