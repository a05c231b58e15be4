package message

import (
	"bytes"
	"fmt"
	"strings"
)

const (
	nameValueSeparator = 0x01 // between a key and its value
	propertySeparator  = 0x02 // after every pair

	// MaxPropertiesSize is the longest properties string a stored record
	// can hold: clients read its length as a signed 16-bit integer.
	MaxPropertiesSize = 32767
)

// AppendProperties appends the encoding of p to dst: key 0x01 value 0x02 for
// every pair, in map order. It allocates only to grow dst. It does not
// check p; see ValidateProperties.
func AppendProperties(dst []byte, p map[string]string) []byte {
	for k, v := range p {
		dst = append(dst, k...)
		dst = append(dst, nameValueSeparator)
		dst = append(dst, v...)
		dst = append(dst, propertySeparator)
	}
	return dst
}

// PropertiesSize returns the length of the encoding of p.
func PropertiesSize(p map[string]string) int {
	n := 0
	for k, v := range p {
		n += len(k) + len(v) + 2
	}
	return n
}

// ValidateProperties reports whether p can be encoded so that it decodes
// back to p: every key non-empty, no key or value containing 0x01 or 0x02,
// and an encoding of at most MaxPropertiesSize bytes. Errors wrap
// ErrInvalidProperty or ErrPropertiesTooLarge.
func ValidateProperties(p map[string]string) error {
	_, err := checkedPropertiesSize(p)
	return err
}

// checkedPropertiesSize validates p and returns its encoded length.
func checkedPropertiesSize(p map[string]string) (int, error) {
	n := 0
	for k, v := range p {
		if k == "" {
			return 0, fmt.Errorf("%w: empty name", ErrInvalidProperty)
		}
		if hasSeparator(k) {
			return 0, fmt.Errorf("%w: name %q contains a separator byte", ErrInvalidProperty, k)
		}
		if hasSeparator(v) {
			return 0, fmt.Errorf("%w: value of %q contains a separator byte", ErrInvalidProperty, k)
		}
		n += len(k) + len(v) + 2
	}
	if n > MaxPropertiesSize {
		return 0, fmt.Errorf("%w: %d bytes encoded, limit %d", ErrPropertiesTooLarge, n, MaxPropertiesSize)
	}
	return n, nil
}

// CheckEncodedProperties reports whether b is an encoded properties string
// that AppendStored may write as it is: pairs of a non-empty name and a
// value, each written name 0x01 value 0x02 (the last one included), and
// at most MaxPropertiesSize bytes. An empty b holds no properties. Such a
// string decodes to the same pairs by the rules of DecodeProperties, save
// that a repeated name is kept twice (readers take the later value).
// Errors wrap ErrInvalidProperty or ErrPropertiesTooLarge. It does not
// allocate unless it fails.
func CheckEncodedProperties(b []byte) error {
	if len(b) > MaxPropertiesSize {
		return fmt.Errorf("%w: %d bytes encoded, limit %d", ErrPropertiesTooLarge, len(b), MaxPropertiesSize)
	}
	if len(b) > 0 && b[len(b)-1] != propertySeparator {
		return fmt.Errorf("%w: encoded properties do not end with 0x02", ErrInvalidProperty)
	}
	for at := 0; at < len(b); {
		piece, rest := nextPiece(b[at:])
		if _, _, ok := splitPair(piece); !ok {
			return fmt.Errorf("%w: piece %q at byte %d is not a name and a value", ErrInvalidProperty, piece, at)
		}
		at = len(b) - len(rest)
	}
	return nil
}

func hasSeparator(s string) bool {
	return strings.IndexByte(s, nameValueSeparator) >= 0 || strings.IndexByte(s, propertySeparator) >= 0
}

// DecodeProperties decodes a properties string with the rules of the
// RocketMQ Go client: the input is split on 0x02, and every piece that
// holds exactly one 0x01 is a pair of key and value. Other pieces (empty,
// without 0x01, or with more than one) are skipped, and so are pairs with
// an empty key, which ValidateProperties would refuse. A missing final 0x02
// is accepted. When a key repeats, the last value wins. The result is nil
// when no pair was found. Keys and values share one copy of b, so the whole
// string stays in memory while any of them does.
//
// Any input decodes, so the error is always nil; it is part of the
// signature so that a stricter decoder can be swapped in without changing
// callers.
func DecodeProperties(b []byte) (map[string]string, error) {
	var (
		m   map[string]string
		all string // b as one string: keys and values are substrings of it
	)
	for off := 0; off < len(b); {
		end := len(b)
		if i := bytes.IndexByte(b[off:], propertySeparator); i >= 0 {
			end = off + i
		}
		if k, v, ok := splitPair(b[off:end]); ok {
			if m == nil {
				all = string(b)
				m = make(map[string]string, 1+bytes.Count(b[end:], []byte{propertySeparator}))
			}
			vOff := off + len(k) + 1
			m[all[off:off+len(k)]] = all[vOff : vOff+len(v)]
		}
		off = end + 1
	}
	return m, nil
}

// LookupProperty returns the value of the property name in the encoded
// properties string b, applying the same rules as DecodeProperties. The
// value aliases b. It does not allocate.
func LookupProperty(b []byte, name string) ([]byte, bool) {
	var (
		val   []byte
		found bool
	)
	for len(b) > 0 {
		var piece []byte
		piece, b = nextPiece(b)
		k, v, ok := splitPair(piece)
		if ok && string(k) == name {
			val, found = v, true // keep scanning: the last occurrence wins
		}
	}
	return val, found
}

// NextProperty reads the first piece of the encoded properties string b
// and returns the rest. ok reports whether the piece is a pair, by the
// rules of DecodeProperties; name and value alias b. A loop calling it
// until rest is empty sees every pair in order, so a reader that keeps
// the last value of a name agrees with LookupProperty. It does not
// allocate.
func NextProperty(b []byte) (name, value, rest []byte, ok bool) {
	piece, rest := nextPiece(b)
	name, value, ok = splitPair(piece)
	return name, value, rest, ok
}

// nextPiece splits b at its first propertySeparator.
func nextPiece(b []byte) (piece, rest []byte) {
	i := bytes.IndexByte(b, propertySeparator)
	if i < 0 {
		return b, nil
	}
	return b[:i], b[i+1:]
}

// splitPair splits a piece at its only nameValueSeparator. ok is false when
// there is not exactly one separator or the key is empty.
func splitPair(piece []byte) (k, v []byte, ok bool) {
	i := bytes.IndexByte(piece, nameValueSeparator)
	if i <= 0 {
		return nil, nil, false
	}
	v = piece[i+1:]
	if bytes.IndexByte(v, nameValueSeparator) >= 0 {
		return nil, nil, false
	}
	return piece[:i], v, true
}
