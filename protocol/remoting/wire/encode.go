package wire

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderLength is the largest header the 24-bit length field can carry.
const MaxHeaderLength = 1<<24 - 1

// AppendTo appends c as one complete frame, length prefix included, with a
// header of serialize type typ, and returns the extended buffer. On error
// it returns dst unchanged. ExtFields keys are written in sorted order so
// the output is deterministic.
//
// Errors: ErrUnknownSerializeType for a typ other than JSON or RocketMQ;
// ErrOutOfRange when the header exceeds MaxHeaderLength, the frame exceeds
// math.MaxInt32 bytes, or (binary only) Code or Version do not fit in 16
// bits or a key is longer than 32767 bytes.
func (c *Command) AppendTo(dst []byte, typ SerializeType) ([]byte, error) {
	start := len(dst)
	dst, err := c.AppendHeadTo(dst, typ)
	if err != nil {
		return dst[:start], err
	}
	return append(dst, c.Body...), nil
}

// AppendHeadTo appends the frame AppendTo would, without the body bytes:
// the length prefix counts them, and the caller sends Body right after.
func (c *Command) AppendHeadTo(dst []byte, typ SerializeType) ([]byte, error) {
	if c.ext != nil || (c.hdr != nil && (typ != JSON || c.ExtFields != nil)) {
		// Deferred extFields, and fields SetHeader gave that cannot be
		// written straight from the typed header (binary headers, or
		// entries added to ExtFields since), go through a copy of the map.
		cc := *c
		cc.pairs = nil // c's, not the copy's to use up
		cc.ExtFields = maps.Clone(c.ExtFields)
		cc.LoadExtFields()
		return cc.AppendHeadTo(dst, typ)
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(typ), 0, 0, 0)
	hdrStart := len(dst)
	var err error
	switch typ {
	case JSON:
		dst = c.appendJSONHeader(dst)
	case RocketMQ:
		dst, err = c.appendBinaryHeader(dst)
	default:
		return dst[:start], fmt.Errorf("%w: cannot encode header type %d", ErrUnknownSerializeType, byte(typ))
	}
	if err != nil {
		return dst[:start], err
	}
	hlen := len(dst) - hdrStart
	if hlen > MaxHeaderLength {
		return dst[:start], fmt.Errorf("%w: header is %d bytes, limit %d", ErrOutOfRange, hlen, MaxHeaderLength)
	}
	total := 4 + hlen + len(c.Body)
	if total > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: frame is %d bytes, limit %d", ErrOutOfRange, total, math.MaxInt32)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(typ)<<24|uint32(hlen))
	return dst, nil
}

// EncodedLen returns an upper bound of the frame size AppendTo produces
// for the JSON header type (escaping can only shrink below the bound), and
// the exact size for the binary type. It is meant for sizing buffers.
func (c *Command) EncodedLen(typ SerializeType) int {
	if c.hdr != nil || c.ext != nil {
		cc := *c
		cc.pairs = nil // c's, not the copy's to use up
		cc.ExtFields = maps.Clone(c.ExtFields)
		cc.LoadExtFields()
		return cc.EncodedLen(typ)
	}
	n := 8 + len(c.Body)
	if typ == RocketMQ {
		n += 21 + len(c.Remark)
		for k, v := range c.ExtFields {
			n += 6 + len(k) + len(v)
		}
		return n
	}
	// Fixed keys and punctuation, then worst-case escapes (6 bytes per
	// input byte).
	n += 160 + 6*len(c.Remark)
	for k, v := range c.ExtFields {
		n += 6 + 6*(len(k)+len(v))
	}
	return n
}

// field is one extFields entry.
type field struct{ key, value string }

// sortedFields returns the entries of m in key order, using buf as
// backing store when it is large enough.
func sortedFields(m map[string]string, buf []field) []field {
	fs := buf[:0]
	for k, v := range m {
		fs = append(fs, field{k, v})
	}
	// Insertion sort: headers have a few dozen entries at most.
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].key < fs[j-1].key; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
	return fs
}

func (c *Command) appendJSONHeader(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":`...)
	if name, ok := c.Language.name(); ok {
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"')
	} else {
		// No name to write: keep the number, which the decoder accepts.
		dst = strconv.AppendInt(dst, int64(c.Language), 10)
	}
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, c.Remark)
	if h, ok := c.hdr.(jsonFieldsAppender); ok {
		dst = append(dst, `,"extFields":{`...)
		w := fieldWriter{dst: dst, start: len(dst), extra: c.hdrExt}
		h.appendFields(&w)
		dst = append(w.end(), '}')
	} else if len(c.ExtFields) > 0 {
		dst = append(dst, `,"extFields":{`...)
		var buf [32]field
		for i, f := range sortedFields(c.ExtFields, buf[:]) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f.key)
			dst = append(dst, ':')
			dst = appendJSONString(dst, f.value)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"serializeTypeCurrentRPC":"JSON"}`...)
	return dst
}

// fieldWriter writes the fields of a header given with SetHeader, which
// its appendFields passes in key order: as the entries of the JSON
// extFields object (sorted, comma-separated, without the braces), or,
// with values set, as their values alone, what RocketMQ's ACL signs.
// The command's extra fields (SetExt on such a command) are merged in
// where their keys sort, and replace a header field of the same key.
type fieldWriter struct {
	dst    []byte
	start  int
	values bool    // write values only
	skip   string  // with values: a key left out
	extra  []field // sorted by key, not yet written
}

// next writes the extra fields that sort before k, then reports whether
// the header's field k is to be written (no extra field replaces it, it
// is not skipped), having written its separator and key.
func (w *fieldWriter) next(k string) bool {
	for len(w.extra) > 0 && w.extra[0].key <= k {
		e := w.extra[0]
		w.extra = w.extra[1:]
		w.entry(e.key, e.value)
		if e.key == k {
			return false
		}
	}
	return w.key(k)
}

// key writes the separator and k, or nothing with values; it reports
// whether k's value is to be written.
func (w *fieldWriter) key(k string) bool {
	if w.values {
		return k != w.skip
	}
	if len(w.dst) > w.start {
		w.dst = append(w.dst, ',')
	}
	w.dst = appendJSONString(w.dst, k)
	w.dst = append(w.dst, ':')
	return true
}

func (w *fieldWriter) entry(k, v string) {
	if !w.key(k) {
		return
	}
	if w.values {
		w.dst = append(w.dst, v...)
		return
	}
	w.dst = appendJSONString(w.dst, v)
}

// str writes a string field.
func (w *fieldWriter) str(k, v string) {
	if !w.next(k) {
		return
	}
	if w.values {
		w.dst = append(w.dst, v...)
		return
	}
	w.dst = appendJSONString(w.dst, v)
}

// opt writes a string field left out when empty.
func (w *fieldWriter) opt(k, v string) {
	if v != "" {
		w.str(k, v)
	}
}

// int writes a decimal field.
func (w *fieldWriter) int(k string, v int64) {
	if !w.next(k) {
		return
	}
	if !w.values {
		w.dst = append(w.dst, '"')
	}
	w.dst = strconv.AppendInt(w.dst, v, 10)
	if !w.values {
		w.dst = append(w.dst, '"')
	}
}

// bool writes "true" or "false".
func (w *fieldWriter) bool(k string, v bool) {
	if !w.next(k) {
		return
	}
	if !w.values {
		w.dst = append(w.dst, '"')
	}
	w.dst = strconv.AppendBool(w.dst, v)
	if !w.values {
		w.dst = append(w.dst, '"')
	}
}

// end writes the extra fields left and returns the buffer.
func (w *fieldWriter) end() []byte {
	for _, e := range w.extra {
		w.entry(e.key, e.value)
	}
	w.extra = nil
	return w.dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Quotes, backslashes and all
// control characters are escaped; invalid UTF-8 becomes \ufffd.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	i := skipPlain(s, 0)
	if i == len(s) {
		dst = append(dst, s...)
		return append(dst, '"')
	}
	start := 0
	for i < len(s) {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func (c *Command) appendBinaryHeader(dst []byte) ([]byte, error) {
	if c.Code > math.MaxInt16 || c.Code < math.MinInt16 {
		return dst, fmt.Errorf("%w: code %d does not fit the binary header's int16 (use a JSON header or RequestCode.Canonical)", ErrOutOfRange, c.Code)
	}
	if c.Version > math.MaxInt16 || c.Version < math.MinInt16 {
		return dst, fmt.Errorf("%w: version %d does not fit the binary header's int16", ErrOutOfRange, c.Version)
	}
	if len(c.Remark) > MaxHeaderLength {
		return dst, fmt.Errorf("%w: remark is %d bytes", ErrOutOfRange, len(c.Remark))
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Code)))
	dst = append(dst, byte(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Version)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	extAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if len(c.ExtFields) > 0 {
		var buf [32]field
		for _, f := range sortedFields(c.ExtFields, buf[:]) {
			k, v := f.key, f.value
			if len(k) > math.MaxInt16 {
				return dst, fmt.Errorf("%w: extFields key of %d bytes exceeds 32767", ErrOutOfRange, len(k))
			}
			if len(v) > MaxHeaderLength {
				return dst, fmt.Errorf("%w: extFields[%q] is %d bytes", ErrOutOfRange, k, len(v))
			}
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
			dst = append(dst, k...)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
			dst = append(dst, v...)
		}
	}
	binary.BigEndian.PutUint32(dst[extAt:], uint32(len(dst)-extAt-4))
	return dst, nil
}
