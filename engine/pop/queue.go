package pop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrCorruptState reports persisted state that cannot be decoded.
var ErrCorruptState = errors.New("pop: corrupt queue state")

// Inflight is a delivered, unacknowledged message.
type Inflight struct {
	Deadline  int64  // ms: invisible until then
	Attempt   int32  // 1 for the first delivery
	Nonce     uint32 // changes with every delivery and lease change
	Group     string // FIFO message group ("" when none)
	AttemptID string // the client's receive attempt id (FIFO retries)
}

// Queue is the pop state of one (consumer group, topic, queue).
type Queue struct {
	AckedBelow int64
	Cursor     int64
	Inflight   map[int64]*Inflight
	Done       map[int64]bool // acked offsets in [AckedBelow, Cursor)
}

// NewQueue returns the state of a queue first consumed from offset.
func NewQueue(offset int64) *Queue {
	return &Queue{AckedBelow: offset, Cursor: offset, Inflight: map[int64]*Inflight{}, Done: map[int64]bool{}}
}

// Finish marks offset done (acknowledged or dead-lettered) and advances
// AckedBelow past every contiguous done offset. It reports whether
// AckedBelow moved.
func (q *Queue) Finish(offset int64) bool {
	delete(q.Inflight, offset)
	if offset < q.AckedBelow {
		return false
	}
	q.Done[offset] = true
	moved := false
	for q.Done[q.AckedBelow] {
		delete(q.Done, q.AckedBelow)
		q.AckedBelow++
		moved = true
	}
	if q.Cursor < q.AckedBelow {
		q.Cursor = q.AckedBelow
	}
	return moved
}

// Reset moves the queue to offset, forgetting every delivery.
func (q *Queue) Reset(offset int64) {
	q.AckedBelow, q.Cursor = offset, offset
	clear(q.Inflight)
	clear(q.Done)
}

// Expired returns the in-flight offsets whose deadline is at or before
// now, in offset order.
func (q *Queue) Expired(now int64) []int64 {
	var out []int64
	for off, f := range q.Inflight {
		if f.Deadline <= now {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out
}

// NextDeadline returns the earliest in-flight deadline, or 0 when nothing
// is in flight.
func (q *Queue) NextDeadline() int64 {
	var next int64
	for _, f := range q.Inflight {
		if next == 0 || f.Deadline < next {
			next = f.Deadline
		}
	}
	return next
}

// MarshalBinary encodes the state.
func (q *Queue) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 32+len(q.Inflight)*40+len(q.Done)*8)
	b = binary.AppendVarint(b, q.AckedBelow)
	b = binary.AppendVarint(b, q.Cursor)
	b = binary.AppendUvarint(b, uint64(len(q.Inflight)))
	for _, off := range sortedKeys(q.Inflight) {
		f := q.Inflight[off]
		b = binary.AppendVarint(b, off)
		b = binary.AppendVarint(b, f.Deadline)
		b = binary.AppendVarint(b, int64(f.Attempt))
		b = binary.AppendUvarint(b, uint64(f.Nonce))
		b = appendString(b, f.Group)
		b = appendString(b, f.AttemptID)
	}
	b = binary.AppendUvarint(b, uint64(len(q.Done)))
	for _, off := range sortedKeys(q.Done) {
		b = binary.AppendVarint(b, off)
	}
	return b, nil
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// UnmarshalBinary decodes state written by MarshalBinary.
func (q *Queue) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	*q = *NewQueue(0)
	q.AckedBelow = d.varint()
	q.Cursor = d.varint()
	n := d.count()
	for range n {
		off := d.varint()
		f := &Inflight{Deadline: d.varint(), Attempt: int32(d.varint()), Nonce: uint32(d.uvarint())}
		f.Group = d.string()
		f.AttemptID = d.string()
		q.Inflight[off] = f
	}
	n = d.count()
	for range n {
		q.Done[d.varint()] = true
	}
	if d.err != nil || len(d.b) != 0 || q.Cursor < q.AckedBelow {
		return fmt.Errorf("%w (%d bytes)", ErrCorruptState, len(data))
	}
	return nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length and bounds it by what is left, so garbage cannot
// make the decoder allocate or loop without end.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = ErrCorruptState
	}
	d.b = nil
}
