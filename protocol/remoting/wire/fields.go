package wire

import (
	"bytes"
	"strconv"
	"strings"
)

var trueBytes, falseBytes = []byte("true"), []byte("false")

// Header is a typed view of the extFields of one kind of command.
type Header interface {
	// DecodeFields fills the header from ext. It returns a *FieldError
	// naming the first missing or invalid field.
	DecodeFields(ext map[string]string) error
	// EncodeFields writes the header's fields into ext.
	EncodeFields(ext map[string]string)
}

// EncodeHeader writes h into the command's extFields, allocating the map
// if needed.
func (c *Command) EncodeHeader(h Header) {
	if c.ExtFields == nil {
		// Most headers have at most 8 fields, which a map holds without
		// a table of its own.
		c.ExtFields = make(map[string]string, 8)
	}
	h.EncodeFields(c.ExtFields)
}

// fieldReader reads typed values out of extFields, or out of the entries
// of a deferred extFields object, and remembers the first error. Optional
// numeric fields whose value is "" count as absent.
type fieldReader struct {
	header    string
	ext       map[string]string
	pairs     []extPair // used instead of ext when fromPairs is set
	fromPairs bool
	// With appendProps set, a send request's properties are appended to
	// props (see Command.DecodeSendHeader).
	props       []byte
	appendProps bool
	err         error
}

func newFieldReader(header string, ext map[string]string) *fieldReader {
	return &fieldReader{header: header, ext: ext}
}

// lookup returns the value of the first of keys that is present.
func (r *fieldReader) lookup(keys []string) (string, bool) {
	if r.fromPairs {
		b, ok := r.lookupBytes(keys)
		return intern(b), ok
	}
	return r.lookupMap(keys)
}

// lookupName is lookup for fields that name things, whose values repeat
// from request to request (see internName).
func (r *fieldReader) lookupName(keys []string) (string, bool) {
	if r.fromPairs {
		b, ok := r.lookupBytes(keys)
		return internName(b), ok
	}
	return r.lookupMap(keys)
}

func (r *fieldReader) lookupMap(keys []string) (string, bool) {
	for _, k := range keys {
		if v, ok := r.ext[k]; ok {
			return v, true
		}
	}
	return "", false
}

// lookupBytes is lookup for deferred extFields, without allocating.
func (r *fieldReader) lookupBytes(keys []string) ([]byte, bool) {
	for _, k := range keys {
		if v, ok := getPair(r.pairs, k); ok {
			return v, true
		}
	}
	return nil, false
}

func (r *fieldReader) missing(keys []string) {
	if r.err == nil {
		r.err = &FieldError{Header: r.header, Field: strings.Join(keys, "|"), Err: ErrMissingField}
	}
}

func (r *fieldReader) invalid(keys []string, value, reason string) {
	if r.err == nil {
		r.err = &FieldError{Header: r.header, Field: strings.Join(keys, "|"), Value: value, Err: ErrInvalidField, Reason: reason}
	}
}

// appendStr appends the value of a string field to dst.
func (r *fieldReader) appendStr(dst []byte, keys ...string) []byte {
	if r.fromPairs {
		v, _ := r.lookupBytes(keys)
		return append(dst, v...)
	}
	v, _ := r.lookupMap(keys)
	return append(dst, v...)
}

// str reads a string field. A required field must be present (it may be
// empty).
func (r *fieldReader) str(required bool, keys ...string) string {
	v, ok := r.lookup(keys)
	if !ok && required {
		r.missing(keys)
	}
	return v
}

// nonEmpty reads a string field that must be present and non-empty.
func (r *fieldReader) nonEmpty(keys ...string) string {
	v, ok := r.lookup(keys)
	return r.checkNonEmpty(keys, v, ok)
}

// name is nonEmpty for a field that names a topic, group or broker.
func (r *fieldReader) name(keys ...string) string {
	v, ok := r.lookupName(keys)
	return r.checkNonEmpty(keys, v, ok)
}

// optName reads an optional field that names something.
func (r *fieldReader) optName(keys ...string) string {
	v, _ := r.lookupName(keys)
	return v
}

func (r *fieldReader) checkNonEmpty(keys []string, v string, ok bool) string {
	switch {
	case !ok:
		r.missing(keys)
	case v == "":
		r.invalid(keys, v, "must not be empty")
	}
	return v
}

func (r *fieldReader) int(required bool, def int64, bits int, keys []string) (int64, bool) {
	if r.fromPairs {
		v, ok := r.lookupBytes(keys)
		if !ok || (len(v) == 0 && !required) {
			if required {
				r.missing(keys)
			}
			return def, false
		}
		n, ok := parseDec(v, bits)
		if !ok {
			r.invalid(keys, string(v), "want int"+strconv.Itoa(bits))
			return def, false
		}
		return n, true
	}
	v, ok := r.lookup(keys)
	if !ok || (v == "" && !required) {
		if required {
			r.missing(keys)
		}
		return def, false
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		r.invalid(keys, v, "want int"+strconv.Itoa(bits))
		return def, false
	}
	return n, true
}

// i32 reads an int32 field; absent optional fields yield def.
func (r *fieldReader) i32(required bool, def int32, keys ...string) int32 {
	n, _ := r.int(required, int64(def), 32, keys)
	return int32(n)
}

// i64 reads an int64 field; absent optional fields yield def.
func (r *fieldReader) i64(required bool, def int64, keys ...string) int64 {
	n, _ := r.int(required, def, 64, keys)
	return n
}

// optI32 reads an optional int32 field whose absence matters.
func (r *fieldReader) optI32(keys ...string) *int32 {
	n, ok := r.int(false, 0, 32, keys)
	if !ok {
		return nil
	}
	v := int32(n)
	return &v
}

// boolean reads a bool field. Like Java's Boolean.parseBoolean it accepts
// "true" and "false" in any case; other values are errors rather than a
// silent false. Absent optional fields (or "") yield def.
func (r *fieldReader) boolean(required bool, def bool, keys ...string) bool {
	if r.fromPairs {
		v, ok := r.lookupBytes(keys)
		switch {
		case ok && bytes.EqualFold(v, trueBytes):
			return true
		case ok && bytes.EqualFold(v, falseBytes):
			return false
		}
	}
	v, ok := r.lookup(keys)
	if !ok || (v == "" && !required) {
		if required {
			r.missing(keys)
		}
		return def
	}
	switch {
	case strings.EqualFold(v, "true"):
		return true
	case strings.EqualFold(v, "false"):
		return false
	}
	r.invalid(keys, v, "want true or false")
	return def
}

// Helpers for EncodeFields.

func putI32(ext map[string]string, key string, v int32) { ext[key] = strconv.FormatInt(int64(v), 10) }
func putI64(ext map[string]string, key string, v int64) { ext[key] = strconv.FormatInt(v, 10) }
func putBool(ext map[string]string, key string, v bool) { ext[key] = strconv.FormatBool(v) }

// putOpt writes a string only when it is not empty.
func putOpt(ext map[string]string, key, v string) {
	if v != "" {
		ext[key] = v
	}
}

func putOptI32(ext map[string]string, key string, v *int32) {
	if v != nil {
		putI32(ext, key, *v)
	}
}
