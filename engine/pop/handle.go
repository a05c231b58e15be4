package pop

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unsafe"
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

// The binary part of a version-2 handle: the fixed-size fields, then the
// MAC over them, written as unpadded base64url.
const (
	fieldsLen = 4 + 8 + 4 + 8 // queue, offset, nonce, deadline
	macLen    = 8
	rawLen    = fieldsLen + macLen
	tailLen   = (rawLen*8 + 5) / 6 // base64 characters of rawLen bytes
	// v2Overhead is the length of a version-2 handle beyond its topic:
	// "2 ", the space before the tail, the tail.
	v2Overhead = 2 + 1 + tailLen
)

// v2KeyLabel separates the version-2 MAC key from the version-1 one, so
// a MAC of one version is no evidence for the other.
const v2KeyLabel = "karman pop receipt handle v2\x00"

// Signer issues and checks receipt handles with one secret key. It is safe
// for concurrent use.
//
// The MAC is AES-CBC-MAC over a prefix-free input (lengths first), the
// condition under which CBC-MAC is a secure MAC. It costs a few AES rounds
// in hardware, a fraction of an HMAC, and acknowledgements verify one per
// message. Version 2 MACs the lengths, the group and the topic before the
// fixed-size fields, so the CBC state after that prefix is the same for
// every handle of a (group, topic) and is cached: a handle then costs two
// block encryptions.
type Signer struct {
	v1 cipher.Block // AES-256, key SHA-256(key): checks version-1 handles
	// v2 is AES-128 (fewer rounds than AES-256, and ample for a 64-bit
	// MAC), keyed with the start of SHA-256(v2KeyLabel, key).
	v2       cipher.Block
	prefixes prefixCache
}

// NewSigner returns a Signer keyed with key (any length; it is hashed to
// the AES keys, so the same key checks the handles another Signer issued,
// before or after a restart).
func NewSigner(key []byte) *Signer {
	k1 := sha256.Sum256(key)
	k2 := sha256.Sum256(append([]byte(v2KeyLabel), key...))
	s := &Signer{v1: newAES(k1[:]), v2: newAES(k2[:16])}
	s.prefixes.init()
	return s
}

func newAES(key []byte) cipher.Block {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // the callers pass 16 or 32 bytes, always valid
	}
	return b
}

// Encode returns the handle's text, authenticated for group. It writes
// version 2: "2 <topic> <base64url of fields and MAC>".
func (s *Signer) Encode(h Handle, group string) string {
	var raw [rawLen]byte
	putFields(&raw, &h)
	n := v2Overhead + len(h.Topic)
	b := make([]byte, n) // the only allocation: the text
	copy(b, "2 ")
	copy(b[2:], h.Topic)
	b[n-tailLen-1] = ' '
	tail := (*[tailLen]byte)(b[n-tailLen:])
	// The tail's space, on the heap already, holds the MAC state until
	// the tail is written: a stack buffer would escape (see scratch).
	mac, state, cached := s.macV2((*block)(tail[:aes.BlockSize]), group, h.Topic, &raw)
	if !cached {
		s.prefixes.put(group, h.Topic, state)
	}
	copy(raw[fieldsLen:], mac[:])
	encodeTail(tail, &raw)
	// b is not written again, so the text can share its memory.
	return unsafe.String(unsafe.SliceData(b), n)
}

// Decode parses and authenticates a handle issued to group, of either
// version.
func (s *Signer) Decode(text, group string) (Handle, error) {
	if len(text) == 0 {
		return Handle{}, fmt.Errorf("%w: empty", ErrInvalidHandle)
	}
	switch text[0] {
	case '2':
		return s.decodeV2(text, group)
	case '1':
		return s.decodeV1(text, group)
	}
	return Handle{}, fmt.Errorf("%w: unknown version %q", ErrInvalidHandle, text[0])
}

func (s *Signer) decodeV2(text, group string) (Handle, error) {
	if len(text) < v2Overhead {
		return Handle{}, fmt.Errorf("%w: %d characters, too short for version 2", ErrInvalidHandle, len(text))
	}
	sep := len(text) - tailLen - 1
	if text[1] != ' ' || text[sep] != ' ' {
		return Handle{}, fmt.Errorf("%w: no spaces around the topic", ErrInvalidHandle)
	}
	topic := text[2:sep]
	var raw [rawLen]byte
	if !decodeTail(&raw, text[sep+1:]) {
		return Handle{}, fmt.Errorf("%w: fields not in canonical base64url", ErrInvalidHandle)
	}
	got := [macLen]byte(raw[fieldsLen:])
	clear(raw[fieldsLen:]) // the MAC's place is zero while MACing
	x := scratch.Get().(*block)
	mac, state, cached := s.macV2(x, group, topic, &raw)
	scratch.Put(x)
	if subtle.ConstantTimeCompare(got[:], mac[:]) != 1 {
		return Handle{}, fmt.Errorf("%w: MAC mismatch: altered, or not issued to group %q by this broker", ErrInvalidHandle, group)
	}
	if !cached {
		// Only now: forged handles must not evict the pairs in use.
		s.prefixes.put(group, topic, state)
	}
	return fieldsHandle(topic, &raw), nil
}

// putFields writes the handle's fixed-size fields, big-endian, at the
// start of raw.
func putFields(raw *[rawLen]byte, h *Handle) {
	binary.BigEndian.PutUint32(raw[0:], uint32(h.Queue))
	binary.BigEndian.PutUint64(raw[4:], uint64(h.Offset))
	binary.BigEndian.PutUint32(raw[12:], h.Nonce)
	binary.BigEndian.PutUint64(raw[16:], uint64(h.Deadline))
}

// fieldsHandle is the inverse of putFields.
func fieldsHandle(topic string, raw *[rawLen]byte) Handle {
	return Handle{
		Topic:    topic,
		Queue:    int32(binary.BigEndian.Uint32(raw[0:])),
		Offset:   int64(binary.BigEndian.Uint64(raw[4:])),
		Nonce:    binary.BigEndian.Uint32(raw[12:]),
		Deadline: int64(binary.BigEndian.Uint64(raw[16:])),
	}
}

// block is an AES block: a CBC-MAC state.
type block = [aes.BlockSize]byte

// scratch holds buffers for the MAC state. A cipher.Block is an
// interface, so the compiler cannot see that Encrypt keeps nothing and
// moves any buffer it is given to the heap: a stack buffer would cost an
// allocation per handle, a pooled one does not.
var scratch = sync.Pool{New: func() any { return new(block) }}

// macV2 returns the version-2 MAC of raw (the fields, then zeros in the
// MAC's place) for (group, topic), computed in x. It also returns the
// state after the (group, topic) prefix and whether that came from the
// cache, for the caller to cache it when it should.
func (s *Signer) macV2(x *block, group, topic string, raw *[rawLen]byte) (mac [macLen]byte, state block, cached bool) {
	state, cached = s.prefixes.get(group, topic)
	if !cached {
		s.prefix(x, group, topic)
		state = *x
	}
	*x = state
	// The fields, zero-padded, are the two blocks of raw. XORBytes
	// combines 16 bytes in one load and store, which Encrypt then reads
	// without waiting: eight-byte stores would make it wait for them.
	subtle.XORBytes(x[:], x[:], raw[:aes.BlockSize])
	s.v2.Encrypt(x[:], x[:])
	subtle.XORBytes(x[:], x[:], raw[aes.BlockSize:])
	s.v2.Encrypt(x[:], x[:])
	return [macLen]byte(x[:]), state, cached
}

// prefix sets x to the version-2 CBC-MAC state after the first block
// (lengths of group and topic), the group and the topic, each zero-padded
// to whole blocks. The lengths make the input prefix-free: together with
// the fixed-size fields that follow, they fix its length.
func (s *Signer) prefix(x *block, group, topic string) {
	binary.BigEndian.PutUint64(x[0:], uint64(len(group)))
	binary.BigEndian.PutUint64(x[8:], uint64(len(topic)))
	s.v2.Encrypt(x[:], x[:])
	chain(s.v2, x, group)
	chain(s.v2, x, topic)
}

// chain feeds data into the CBC-MAC state x, zero-padding its last block.
func chain(b cipher.Block, x *block, data string) {
	for len(data) > 0 {
		n := min(len(data), aes.BlockSize)
		for i := range n {
			x[i] ^= data[i]
		}
		b.Encrypt(x[:], x[:])
		data = data[n:]
	}
}
