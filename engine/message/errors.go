package message

import "errors"

// Sentinel errors. Functions wrap them with context; match with errors.Is.
var (
	// ErrMalformed reports a stored record that is truncated or whose
	// fields contradict each other.
	ErrMalformed = errors.New("message: malformed stored record")

	// ErrBadMessageID reports an offset message id that cannot be parsed.
	ErrBadMessageID = errors.New("message: bad message id")

	// ErrInvalidName reports a topic or group name that breaks the naming
	// rules (empty, too long, or a character outside [%|a-zA-Z0-9_-]).
	ErrInvalidName = errors.New("message: invalid name")

	// ErrReservedName reports a valid name that ordinary users may not use,
	// such as a system topic or a retry or dead-letter topic.
	ErrReservedName = errors.New("message: reserved name")

	// ErrInvalidProperty reports a property whose key or value cannot be
	// encoded in the properties string, or whose value does not parse.
	ErrInvalidProperty = errors.New("message: invalid property")

	// ErrPropertiesTooLarge reports properties whose encoding is longer
	// than MaxPropertiesSize.
	ErrPropertiesTooLarge = errors.New("message: properties too large")

	// ErrTooLarge reports a message whose stored record would not fit in
	// the format's 32-bit size field.
	ErrTooLarge = errors.New("message: record too large")
)
