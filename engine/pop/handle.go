package pop

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
)

// ErrInvalidHandle reports a receipt handle that is malformed, forged or
// for another group.
var ErrInvalidHandle = errors.New("pop: invalid receipt handle")

// Handle identifies one delivery of one message.
type Handle struct {
	Topic    string
	Queue    int32
	Offset   int64
	Nonce    uint32
	Deadline int64 // ms since the epoch: when the message becomes visible again
}

const macLen = 8

// Signer issues and checks receipt handles with one secret key. It is safe
// for concurrent use.
type Signer struct {
	macs sync.Pool // hash.Hash: HMAC-SHA256 keyed once, reset per use
}

// NewSigner returns a Signer keyed with key.
func NewSigner(key []byte) *Signer {
	key = append([]byte(nil), key...)
	return &Signer{macs: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

// Encode returns the handle's text, authenticated for group.
func (s *Signer) Encode(h Handle, group string) string {
	b := appendBody(make([]byte, 0, 64+len(h.Topic)), h)
	var sum [sha256.Size]byte
	m := s.mac(group, b, sum[:0])
	b = append(b, ' ')
	b = hex.AppendEncode(b, m)
	return string(b)
}

// appendBody appends the handle's fields, without the MAC.
func appendBody(b []byte, h Handle) []byte {
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

func (s *Signer) mac(group string, body, dst []byte) []byte {
	m := s.macs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(group))
	m.Write([]byte{0})
	m.Write(body)
	dst = m.Sum(dst)
	s.macs.Put(m)
	return dst[:macLen]
}

// Decode parses and authenticates a handle issued to group.
func (s *Signer) Decode(text, group string) (Handle, error) {
	return decodeHandle(s, text, group)
}

func decodeHandle(signer *Signer, s, group string) (Handle, error) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return Handle{}, fmt.Errorf("%w: no MAC", ErrInvalidHandle)
	}
	body, sum := s[:i], s[i+1:]
	// Compare the hex text, not the bytes it decodes to, so upper-case
	// digits do not make a second valid text for the same delivery.
	var want [sha256.Size]byte
	var wantHex [2 * macLen]byte
	hex.Encode(wantHex[:], signer.mac(group, []byte(body), want[:0]))
	if !hmac.Equal([]byte(sum), wantHex[:]) {
		return Handle{}, fmt.Errorf("%w: not issued to group %s by this broker", ErrInvalidHandle, group)
	}
	f := strings.Split(body, " ")
	if len(f) != 6 || f[0] != "1" {
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
	// Only the text Encode writes is valid: no signs, leading zeros or
	// "-0".
	var buf [96]byte
	if string(appendBody(buf[:0], h)) != body {
		return Handle{}, fmt.Errorf("%w: not in canonical form", ErrInvalidHandle)
	}
	return h, nil
}
