package engine

import (
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine/internal/disk"
	"github.com/karmanmq/karman/engine/meta"
)

// Errors returned by the engine. Each is wrapped with context; match with
// errors.Is. Front-ends turn them into protocol status codes.
var (
	ErrClosed = errors.New("engine: closed")
	// ErrDiskFull: the disk holding the data is too full for the write
	// (see Options.DiskFullRatio and DiskReserve). It passes by itself
	// once space is freed; Health says more.
	ErrDiskFull = disk.ErrFull
	// ErrDiskFailed: the disk failed a write or a sync (EIO). Writes are
	// refused until the disk is fixed and the engine restarted; reads
	// are served.
	ErrDiskFailed          = disk.ErrFailed
	ErrTopicNotFound       = meta.ErrTopicNotFound
	ErrGroupNotFound       = meta.ErrGroupNotFound
	ErrNoOffset            = meta.ErrNoOffset
	ErrInvalidTopic        = errors.New("engine: invalid topic")
	ErrInvalidGroup        = errors.New("engine: invalid consumer group")
	ErrReservedName        = errors.New("engine: reserved system name")
	ErrInvalidQueue        = errors.New("engine: queue id out of range")
	ErrEmptyBody           = errors.New("engine: empty message body")
	ErrMessageTooLarge     = errors.New("engine: message body too large")
	ErrInvalidMessage      = errors.New("engine: invalid message")
	ErrNoPermission        = errors.New("engine: no permission")
	ErrOffsetOutOfRange    = errors.New("engine: offset out of range")
	ErrMessageNotFound     = errors.New("engine: message not found")
	ErrInvalidArgument     = errors.New("engine: invalid argument")
	ErrBatchMixedTargets   = errors.New("engine: batch messages must share one topic")
	ErrMessageTypeMismatch = errors.New("engine: message type not allowed for the topic")
	ErrInvalidFilter       = errors.New("engine: invalid filter expression")
	ErrFilterDisabled      = errors.New("engine: filter type disabled")
	// ErrBeyondTimerHorizon: a delayed or scheduled message falls due
	// further ahead than Options.TimerHorizon. It is an ErrInvalidMessage.
	ErrBeyondTimerHorizon = fmt.Errorf("%w: due beyond the timer horizon", ErrInvalidMessage)
)

// OffsetRangeError reports a pull or seek outside a queue's stored range.
// It matches ErrOffsetOutOfRange.
type OffsetRangeError struct {
	Topic    string
	Queue    int32
	Offset   int64 // requested
	Min, Max int64 // the queue's bounds: [Min, Max)
}

func (e *OffsetRangeError) Error() string {
	return fmt.Sprintf("engine: offset %d out of range [%d, %d) of %s/%d", e.Offset, e.Min, e.Max, e.Topic, e.Queue)
}

// Is makes the error match ErrOffsetOutOfRange.
func (e *OffsetRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }
