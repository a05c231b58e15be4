package pop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
//
// In-flight entries are put and re-leased with Lease, which keeps a lower
// bound of their deadlines: Expired and NextDeadline then cost nothing
// while no deadline can have passed, however many messages are in flight.
type Queue struct {
	AckedBelow int64
	Cursor     int64
	Inflight   map[int64]*Inflight
	Done       Offsets // finished offsets above AckedBelow

	// floor is at most every in-flight deadline (0: unknown). Finishing
	// an entry or moving its deadline later leaves it low, which only
	// makes the next Expired scan.
	floor int64
}

// NewQueue returns the state of a queue first consumed from offset.
func NewQueue(offset int64) *Queue {
	return &Queue{AckedBelow: offset, Cursor: offset, Inflight: map[int64]*Inflight{}}
}

// Lease records that the message at offset is in flight as f, or that
// f's deadline moved: every change of an in-flight deadline goes through
// it.
func (q *Queue) Lease(offset int64, f *Inflight) {
	q.Inflight[offset] = f
	if q.floor != 0 && f.Deadline < q.floor {
		q.floor = f.Deadline
	}
}

// Finish marks offset done (acknowledged or dead-lettered) and advances
// AckedBelow past every contiguous done offset. It reports whether
// AckedBelow moved.
func (q *Queue) Finish(offset int64) bool {
	delete(q.Inflight, offset)
	if offset < q.AckedBelow {
		return false
	}
	if offset != q.AckedBelow {
		q.Done.Add(offset)
		return false
	}
	q.AckedBelow = q.Done.TakeRunAt(offset + 1)
	if q.Cursor < q.AckedBelow {
		q.Cursor = q.AckedBelow
	}
	return true
}

// Reset moves the queue to offset, forgetting every delivery.
func (q *Queue) Reset(offset int64) {
	q.AckedBelow, q.Cursor = offset, offset
	clear(q.Inflight)
	q.Done.Clear()
	q.floor = 0
}

// Expired returns the in-flight offsets whose deadline is at or before
// now, in offset order.
func (q *Queue) Expired(now int64) []int64 {
	if len(q.Inflight) == 0 || (q.floor != 0 && now < q.floor) {
		return nil
	}
	out := q.refloor(now, true)
	slices.Sort(out)
	return out
}

// NextDeadline returns the earliest in-flight deadline, or 0 when nothing
// is in flight. A deadline after now may be returned early (a time at or
// before the earliest), which costs a waiting pop one early look.
func (q *Queue) NextDeadline(now int64) int64 {
	if len(q.Inflight) == 0 {
		return 0
	}
	if q.floor == 0 || q.floor <= now {
		q.refloor(now, false)
	}
	return q.floor
}

// refloor sets floor to the earliest in-flight deadline and, with
// collect, returns the offsets whose deadline is at or before now, in no
// particular order.
func (q *Queue) refloor(now int64, collect bool) (expired []int64) {
	q.floor = 0
	for off, f := range q.Inflight {
		if collect && f.Deadline <= now {
			expired = append(expired, off)
		}
		if q.floor == 0 || f.Deadline < q.floor {
			q.floor = f.Deadline
		}
	}
	return expired
}

// MarshalBinary encodes the state.
func (q *Queue) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 32+len(q.Inflight)*40+len(q.Done.runs)*8)
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
	// Finished offsets: first a list of single offsets, which earlier
	// versions wrote and this one leaves empty, then runs, each as its
	// distance from the end of the one before (from AckedBelow for the
	// first) and its length less one.
	b = binary.AppendUvarint(b, 0)
	b = binary.AppendUvarint(b, uint64(len(q.Done.runs)))
	prev := q.AckedBelow
	for _, r := range q.Done.runs {
		b = binary.AppendUvarint(b, uint64(r.lo-prev))
		b = binary.AppendUvarint(b, uint64(r.hi-r.lo-1))
		prev = r.hi
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
		q.Lease(off, f)
	}
	n = d.count()
	for range n {
		q.Done.Add(d.varint())
	}
	if len(d.b) > 0 { // the runs, absent from earlier versions' state
		d.runs(&q.Done, q.AckedBelow)
	}
	if d.err != nil || len(d.b) != 0 || q.Cursor < q.AckedBelow {
		*q = *NewQueue(0)
		return fmt.Errorf("%w (%d bytes)", ErrCorruptState, len(data))
	}
	// Offsets finished at or below AckedBelow say nothing more.
	q.Done.DropBelow(q.AckedBelow)
	q.AckedBelow = q.Done.TakeRunAt(q.AckedBelow)
	q.Cursor = max(q.Cursor, q.AckedBelow)
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

// runs reads runs of finished offsets as MarshalBinary writes them,
// the first measured from base.
func (d *decoder) runs(done *Offsets, base int64) {
	const maxStep = 1 << 60 // keeps the sums below from overflowing
	n := d.count()
	prev := base
	for range n {
		gap, length := d.uvarint(), d.uvarint()
		if d.err != nil || gap == 0 || gap > maxStep || length >= maxStep || prev > math.MaxInt64-2*maxStep {
			d.fail()
			return
		}
		lo := prev + int64(gap)
		hi := lo + int64(length) + 1
		done.AddSpan(lo, hi)
		prev = hi
	}
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
