package commitlog

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("commitlog: log closed")
	// ErrCorrupt means the bytes at an offset are not a record frame that
	// verifies: the record was damaged, or the offset is not where a record
	// starts. The two cannot be told apart without an index. Errors matching
	// it are *CorruptError.
	ErrCorrupt = errors.New("commitlog: corrupt record")
	// ErrOffsetOutOfRange means an offset is negative or at or past the
	// end of the log. Errors matching it are *OffsetError.
	ErrOffsetOutOfRange = errors.New("commitlog: offset out of range")
	// ErrOffsetGone means an offset is below the first retained offset: its
	// segment was deleted by retention. Errors matching it are *OffsetError.
	ErrOffsetGone = errors.New("commitlog: offset no longer retained")
	// ErrTooLarge means a record or a batch does not fit in one segment.
	ErrTooLarge = errors.New("commitlog: record too large")
	// ErrNoSpace means the file system holding the log has no room for
	// the blocks an append needs (or for a new segment). The append wrote
	// nothing and the log stays usable: the same append succeeds once
	// space is freed. Errors matching it also match the file system's
	// error, syscall.ENOSPC (or EDQUOT).
	ErrNoSpace = errors.New("commitlog: no space left for the log")
)

// OffsetError reports an offset that cannot be served. It matches
// ErrOffsetOutOfRange or ErrOffsetGone with errors.Is.
type OffsetError struct {
	Op     string // "read" or "scan"
	Offset int64  // the offset asked for
	Min    int64  // first retained offset at the time
	End    int64  // end offset at the time
	Err    error  // ErrOffsetOutOfRange or ErrOffsetGone
}

func (e *OffsetError) Error() string {
	return fmt.Sprintf("commitlog: %s at offset %d: %s (log holds [%d, %d))",
		e.Op, e.Offset, trimPrefix(e.Err), e.Min, e.End)
}

// Unwrap returns the sentinel.
func (e *OffsetError) Unwrap() error { return e.Err }

// CorruptError reports that no valid record frame starts at Offset. It
// matches ErrCorrupt with errors.Is.
type CorruptError struct {
	Offset int64
	Reason string // what failed to verify, such as "checksum mismatch"
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("commitlog: corrupt record at offset %d: %s", e.Offset, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Corruption is a region of the log that holds no valid frame and is
// skipped by readers: [Start, End).
type Corruption struct {
	Start, End int64
	Reason     string // why the frame at Start did not verify
}

func (c Corruption) String() string {
	return fmt.Sprintf("[%d, %d) (%d bytes): %s", c.Start, c.End, c.End-c.Start, c.Reason)
}

// wrapError is an error with its own message that wraps a sentinel, so the
// message does not repeat the package prefix.
type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

// errorf returns "commitlog: <format>: <sentinel without prefix>" wrapping
// sentinel.
func errorf(sentinel error, format string, args ...any) error {
	return &wrapError{
		msg: "commitlog: " + fmt.Sprintf(format, args...) + ": " + trimPrefix(sentinel),
		err: sentinel,
	}
}

func trimPrefix(err error) string {
	return strings.TrimPrefix(err.Error(), "commitlog: ")
}
