package wire

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Errors returned by this package match one of them under
// errors.Is and carry the details in their message.
var (
	// ErrMalformed reports a frame, header or body that does not follow the
	// format: truncated data, bad lengths, invalid JSON, a value of the
	// wrong type.
	ErrMalformed = errors.New("wire: malformed frame")
	// ErrFrameTooLarge reports a length prefix above the configured limit.
	ErrFrameTooLarge = errors.New("wire: frame too large")
	// ErrUnknownSerializeType reports a header serialize type other than
	// JSON (0) or ROCKETMQ (1).
	ErrUnknownSerializeType = errors.New("wire: unknown serialize type")
	// ErrOutOfRange reports a value the encoder cannot represent: a code or
	// version beyond 16 bits in a binary header, a header longer than the
	// 24-bit length field, a frame longer than 2 GiB.
	ErrOutOfRange = errors.New("wire: value out of range")
	// ErrMissingField reports a required extFields key that is absent.
	ErrMissingField = errors.New("wire: missing header field")
	// ErrInvalidField reports an extFields value that does not parse or is
	// not allowed.
	ErrInvalidField = errors.New("wire: invalid header field")
)

// DecodeError describes where decoding went wrong. It matches its Kind
// (one of the sentinels above) under errors.Is.
type DecodeError struct {
	// Kind is the sentinel this error matches.
	Kind error
	// Part names what was being decoded: "frame", "json header",
	// "binary header", "batch body".
	Part string
	// Offset is the byte offset inside Part where the problem was found,
	// or -1 when it does not apply.
	Offset int
	// Detail says what was wrong.
	Detail string
}

func (e *DecodeError) Error() string {
	s := e.Kind.Error() + ": " + e.Part
	if e.Offset >= 0 {
		s += " at offset " + strconv.Itoa(e.Offset)
	}
	return s + ": " + e.Detail
}

// Unwrap returns Kind.
func (e *DecodeError) Unwrap() error { return e.Kind }

func malformed(part string, off int, format string, args ...any) error {
	return &DecodeError{Kind: ErrMalformed, Part: part, Offset: off, Detail: fmt.Sprintf(format, args...)}
}

// FieldError reports a problem with one extFields entry of a typed header.
// It matches ErrMissingField or ErrInvalidField under errors.Is.
type FieldError struct {
	// Header is the Go type name of the header being decoded.
	Header string
	// Field is the extFields key (with its alternative name, if any, as
	// "producerGroup|a").
	Field string
	// Value is the offending value; empty for a missing field.
	Value string
	// Err is ErrMissingField or ErrInvalidField.
	Err error
	// Reason adds detail for invalid values, such as "want int32".
	Reason string
}

func (e *FieldError) Error() string {
	if errors.Is(e.Err, ErrMissingField) {
		return fmt.Sprintf("wire: %s: missing field %q", e.Header, e.Field)
	}
	return fmt.Sprintf("wire: %s: invalid field %q = %q: %s", e.Header, e.Field, e.Value, e.Reason)
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }
