package pop

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// Encode returns the handle's text, authenticated with key for group.
func (h Handle) Encode(key []byte, group string) string {
	body := "1 " + h.Topic + " " + strconv.Itoa(int(h.Queue)) + " " + strconv.FormatInt(h.Offset, 10) + " " +
		strconv.FormatUint(uint64(h.Nonce), 10) + " " + strconv.FormatInt(h.Deadline, 10)
	return body + " " + hex.EncodeToString(mac(key, group, body))
}

func mac(key []byte, group, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(group))
	m.Write([]byte{0})
	m.Write([]byte(body))
	return m.Sum(nil)[:macLen]
}

// DecodeHandle parses and authenticates a handle issued to group.
func DecodeHandle(s string, key []byte, group string) (Handle, error) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return Handle{}, fmt.Errorf("%w: no MAC", ErrInvalidHandle)
	}
	body, sum := s[:i], s[i+1:]
	got, err := hex.DecodeString(sum)
	if err != nil || !hmac.Equal(got, mac(key, group, body)) {
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
	return Handle{Topic: f[1], Queue: int32(q), Offset: off, Nonce: uint32(nonce), Deadline: deadline}, nil
}
