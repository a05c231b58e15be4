package pop

import (
	"crypto/aes"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version 1 handles, "1 <topic> <queue> <offset> <nonce> <deadline> <mac
// hex>", are no longer issued but still accepted, so that the handles a
// broker issued before an upgrade still acknowledge their messages.

func (s *Signer) decodeV1(text, group string) (Handle, error) {
	i := strings.LastIndexByte(text, ' ')
	if i < 0 {
		return Handle{}, fmt.Errorf("%w: no MAC", ErrInvalidHandle)
	}
	body, sum := text[:i], text[i+1:]
	// Compare the hex text, not the bytes it decodes to, so upper-case
	// digits do not make a second valid text for the same delivery.
	var want [macLen]byte
	var wantHex [2 * macLen]byte
	hex.Encode(wantHex[:], s.macV1(group, body, want[:0]))
	if subtle.ConstantTimeCompare([]byte(sum), wantHex[:]) != 1 {
		return Handle{}, fmt.Errorf("%w: MAC mismatch: altered, or not issued to group %q by this broker", ErrInvalidHandle, group)
	}
	var f [6]string
	n := 0
	for rest := body; n < len(f); n++ {
		var ok bool
		f[n], rest, ok = strings.Cut(rest, " ")
		if !ok {
			n++
			break
		}
	}
	if n != len(f) || f[0] != "1" {
		return Handle{}, fmt.Errorf("%w: unknown layout", ErrInvalidHandle)
	}
	q, err1 := strconv.ParseInt(f[2], 10, 32)
	off, err2 := strconv.ParseInt(f[3], 10, 64)
	nonce, err3 := strconv.ParseUint(f[4], 10, 32)
	deadline, err4 := strconv.ParseInt(f[5], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Handle{}, fmt.Errorf("%w: %w", ErrInvalidHandle, err)
	}
	h := Handle{Topic: f[1], Queue: int32(q), Offset: off, Nonce: uint32(nonce), Deadline: deadline}
	// Only the text version 1 wrote is valid: no signs, leading zeros or
	// "-0".
	var buf [96]byte
	if string(appendBodyV1(buf[:0], h)) != body {
		return Handle{}, fmt.Errorf("%w: not in canonical form", ErrInvalidHandle)
	}
	return h, nil
}

// appendBodyV1 appends the handle's version-1 fields, without the MAC.
func appendBodyV1(b []byte, h Handle) []byte {
	b = append(b, "1 "...)
	b = append(b, h.Topic...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(h.Queue), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.Offset, 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(h.Nonce), 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, h.Deadline, 10)
}

// macV1 appends the version-1 MAC of body for group to dst: CBC-MAC over
// the lengths of group and body, then each, zero-padded.
func (s *Signer) macV1(group, body string, dst []byte) []byte {
	var x [aes.BlockSize]byte
	binary.BigEndian.PutUint64(x[0:], uint64(len(group)))
	binary.BigEndian.PutUint64(x[8:], uint64(len(body)))
	s.v1.Encrypt(x[:], x[:])
	chain(s.v1, &x, group)
	chain(s.v1, &x, body)
	return append(dst, x[:macLen]...)
}
