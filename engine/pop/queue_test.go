package pop

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// queueOf builds a queue state from its parts.
func queueOf(acked, cursor int64, inflight map[int64]*Inflight, done ...int64) *Queue {
	q := NewQueue(acked)
	q.Cursor = cursor
	maps.Copy(q.Inflight, inflight)
	for _, d := range done {
		q.Done.Add(d)
	}
	return q
}

// deliver marks offsets [Cursor, Cursor+n) in flight, as a pop does.
func deliver(q *Queue, n int, deadline int64) {
	for range n {
		q.Inflight[q.Cursor] = &Inflight{Deadline: deadline, Attempt: 1}
		q.Cursor++
	}
}

func TestNewQueue(t *testing.T) {
	q := NewQueue(42)
	if q.AckedBelow != 42 || q.Cursor != 42 || q.Inflight == nil || len(q.Inflight) != 0 || !q.Done.Empty() {
		t.Fatalf("NewQueue(42) = %+v", q)
	}
}

func TestFinish(t *testing.T) {
	tests := []struct {
		name       string
		start      int64 // AckedBelow and Cursor before delivering
		delivered  int   // offsets start..start+delivered-1 in flight
		finish     []int64
		moved      []bool
		ackedBelow int64
		cursor     int64
		inflight   []int64
		done       []int64
	}{
		{
			name: "in order", start: 10, delivered: 3,
			finish: []int64{10, 11, 12}, moved: []bool{true, true, true},
			ackedBelow: 13, cursor: 13,
		},
		{
			name: "gap then fill", start: 10, delivered: 4,
			finish: []int64{11, 13, 10}, moved: []bool{false, false, true},
			ackedBelow: 12, cursor: 14, inflight: []int64{12}, done: []int64{13},
		},
		{
			name: "reverse order", start: 0, delivered: 4,
			finish: []int64{3, 2, 1, 0}, moved: []bool{false, false, false, true},
			ackedBelow: 4, cursor: 4,
		},
		{
			name: "below AckedBelow is a no-op", start: 10, delivered: 2,
			finish: []int64{10, 9, 10}, moved: []bool{true, false, false},
			ackedBelow: 11, cursor: 12, inflight: []int64{11},
		},
		{
			name: "twice", start: 5, delivered: 3,
			finish: []int64{6, 6}, moved: []bool{false, false},
			ackedBelow: 5, cursor: 8, inflight: []int64{5, 7}, done: []int64{6},
		},
		{
			// An offset finished without being delivered (a dead letter
			// found on reading, say) moves the cursor along with AckedBelow.
			name: "cursor follows", start: 7, delivered: 0,
			finish: []int64{7, 8}, moved: []bool{true, true},
			ackedBelow: 9, cursor: 9,
		},
		{
			name: "cursor follows across done", start: 0, delivered: 2,
			finish: []int64{2, 1, 0}, moved: []bool{false, false, true},
			ackedBelow: 3, cursor: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue(tt.start)
			deliver(q, tt.delivered, 1000)
			for i, off := range tt.finish {
				if got := q.Finish(off); got != tt.moved[i] {
					t.Fatalf("Finish(%d) (step %d) = %v, want %v", off, i, got, tt.moved[i])
				}
			}
			if q.AckedBelow != tt.ackedBelow || q.Cursor != tt.cursor {
				t.Fatalf("AckedBelow, Cursor = %d, %d; want %d, %d", q.AckedBelow, q.Cursor, tt.ackedBelow, tt.cursor)
			}
			if got := slices.Sorted(maps.Keys(q.Inflight)); !slices.Equal(got, tt.inflight) {
				t.Fatalf("in flight = %v, want %v", got, tt.inflight)
			}
			if got := q.Done.All(); !slices.Equal(got, tt.done) {
				t.Fatalf("done = %v, want %v", got, tt.done)
			}
			for _, off := range q.Done.All() {
				if off < q.AckedBelow {
					t.Fatalf("done offset %d below AckedBelow %d", off, q.AckedBelow)
				}
			}
		})
	}
}

func TestReset(t *testing.T) {
	for _, to := range []int64{0, 3, 100} {
		q := NewQueue(5)
		deliver(q, 5, 1000)
		q.Finish(7)
		q.Reset(to)
		if q.AckedBelow != to || q.Cursor != to || len(q.Inflight) != 0 || !q.Done.Empty() {
			t.Fatalf("after Reset(%d): %+v", to, q)
		}
		// The maps are still usable.
		deliver(q, 1, 2000)
		if !q.Finish(to) || q.AckedBelow != to+1 {
			t.Fatalf("queue unusable after Reset(%d): %+v", to, q)
		}
	}
}

func TestExpiredAndNextDeadline(t *testing.T) {
	q := NewQueue(0)
	if got := q.Expired(1 << 62); len(got) != 0 {
		t.Fatalf("Expired on an empty queue = %v", got)
	}
	if got := q.NextDeadline(0); got != 0 {
		t.Fatalf("NextDeadline on an empty queue = %d, want 0", got)
	}
	deadlines := map[int64]int64{9: 300, 2: 100, 5: 200, 1: 300, 7: 100, 3: 400, 20: 150}
	for off, d := range deadlines {
		q.Inflight[off] = &Inflight{Deadline: d}
	}
	q.Cursor = 21
	tests := []struct {
		now  int64
		want []int64
	}{
		{0, nil},
		{99, nil},
		{100, []int64{2, 7}}, // at the deadline counts
		{150, []int64{2, 7, 20}},
		{299, []int64{2, 5, 7, 20}},
		{300, []int64{1, 2, 5, 7, 9, 20}},
		{1000, []int64{1, 2, 3, 5, 7, 9, 20}},
	}
	for _, tt := range tests {
		if got := q.Expired(tt.now); !slices.Equal(got, tt.want) {
			t.Errorf("Expired(%d) = %v, want %v", tt.now, got, tt.want)
		}
	}
	if got := q.NextDeadline(0); got != 100 {
		t.Fatalf("NextDeadline = %d, want 100", got)
	}
	q.Finish(2)
	q.Finish(7)
	// Before 100 the bound of 100 may stand; from 100 on it is exact.
	if got := q.NextDeadline(99); got != 100 && got != 150 {
		t.Fatalf("NextDeadline(99) after finishing = %d, want 100 or 150", got)
	}
	if got := q.NextDeadline(100); got != 150 {
		t.Fatalf("NextDeadline(100) after finishing = %d, want 150", got)
	}
}

// TestLeaseLowersTheBound checks that a deadline moved earlier through
// Lease is seen at once, although Expired skips its scan while no known
// deadline has passed.
func TestLeaseLowersTheBound(t *testing.T) {
	q := NewQueue(0)
	for off := range int64(100) {
		q.Lease(off, &Inflight{Deadline: 1000 + off})
	}
	q.Cursor = 100
	if got := q.Expired(500); len(got) != 0 {
		t.Fatalf("Expired(500) = %v, want none", got)
	}
	if got := q.NextDeadline(500); got != 1000 {
		t.Fatalf("NextDeadline(500) = %d, want 1000", got)
	}
	f := q.Inflight[42]
	f.Deadline = 400 // a negative acknowledgement
	q.Lease(42, f)
	if got := q.NextDeadline(300); got != 400 {
		t.Fatalf("NextDeadline(300) after the lease = %d, want 400", got)
	}
	if got := q.Expired(450); !slices.Equal(got, []int64{42}) {
		t.Fatalf("Expired(450) = %v, want [42]", got)
	}
	q.Lease(100, &Inflight{Deadline: 200}) // a new delivery, earlier than all
	q.Cursor = 101
	if got := q.Expired(450); !slices.Equal(got, []int64{42, 100}) {
		t.Fatalf("Expired(450) = %v, want [42 100]", got)
	}
	// Entries put in the map directly are found by a scan.
	q.Inflight[101] = &Inflight{Deadline: 100}
	q.Reset(0)
	q.Inflight[7] = &Inflight{Deadline: 100}
	if got := q.Expired(100); !slices.Equal(got, []int64{7}) {
		t.Fatalf("Expired(100) after Reset = %v, want [7]", got)
	}
}

// TestFinishOutOfOrder checks that offsets finished out of order are
// kept until the ones below them are finished.
func TestFinishOutOfOrder(t *testing.T) {
	q := NewQueue(10)
	q.Cursor = 15
	for _, off := range []int64{12, 14, 11} {
		if q.Finish(off) {
			t.Fatalf("Finish(%d) moved AckedBelow to %d", off, q.AckedBelow)
		}
	}
	if !q.Finish(10) || q.AckedBelow != 13 || !slices.Equal(q.Done.All(), []int64{14}) {
		t.Fatalf("after Finish(10): AckedBelow %d, Done %v; want 13, [14]", q.AckedBelow, q.Done.All())
	}
	if !q.Finish(13) || q.AckedBelow != 15 || !q.Done.Empty() {
		t.Fatalf("after Finish(13): AckedBelow %d, Done %v; want 15, []", q.AckedBelow, q.Done.All())
	}
	if q.Finish(3) || q.AckedBelow != 15 {
		t.Fatalf("Finish below AckedBelow moved it to %d", q.AckedBelow)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		q    *Queue
	}{
		{"new", NewQueue(0)},
		{"far offset", NewQueue(1 << 60)},
		{"negative", queueOf(-5, -1, nil, -3)},
		{"in flight", queueOf(10, 15, map[int64]*Inflight{
			10: {Deadline: 1_700_000_000_000, Attempt: 1, Nonce: 7},
			12: {Deadline: 1_700_000_001_000, Attempt: 16, Nonce: 1<<32 - 1, Group: "order 42", AttemptID: "attempt id with spaces"},
			14: {Deadline: -1, Attempt: -2, Group: "\x00\xff", AttemptID: ""},
		}, 11, 13)},
		{"unicode", queueOf(0, 1, map[int64]*Inflight{0: {Deadline: 5, Attempt: 1, Group: "グループ", AttemptID: "試行"}})},
		{"only done", queueOf(3, 10, nil, 4, 5, 9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.q.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var got Queue
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatalf("UnmarshalBinary(%x): %v", b, err)
			}
			if !reflect.DeepEqual(&got, tt.q) {
				t.Fatalf("round trip = %+v, want %+v", got, *tt.q)
			}
			// Encoding is deterministic despite map order.
			for range 5 {
				again, _ := got.MarshalBinary()
				if string(again) != string(b) {
					t.Fatalf("encoding changed: %x then %x", b, again)
				}
			}
		})
	}
}

func TestUnmarshalReplacesState(t *testing.T) {
	b, _ := NewQueue(3).MarshalBinary()
	q := queueOf(0, 5, map[int64]*Inflight{1: {Deadline: 9}}, 2)
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q, NewQueue(3)) {
		t.Fatalf("UnmarshalBinary kept old state: %+v", q)
	}
}

func TestUnmarshalCorrupt(t *testing.T) {
	valid, _ := queueOf(10, 15, map[int64]*Inflight{12: {Deadline: 100, Attempt: 2, Nonce: 9, Group: "g", AttemptID: "a"}}, 11).MarshalBinary()
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte{0}},
		{"cursor missing", []byte{20}},
		{"counts missing", []byte{20, 20}},
		{"cursor below acked", []byte{20, 10, 0, 0}},
		{"unterminated varint", []byte{0xff, 0xff}},
		{"varint overflow", append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0, 0, 0)},
		{"huge inflight count", []byte{0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"huge done count", []byte{0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"inflight count past data", []byte{0, 2, 3, 0, 0, 0, 0}},
		{"string length past data", []byte{0, 2, 1, 0, 0, 2, 0, 9, 'a', 0, 0}},
		{"trailing byte", append(append([]byte(nil), valid...), 0)},
		{"truncated", valid[:len(valid)-1]},
		{"truncated in strings", valid[:len(valid)/2]},
		{"all ones", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue
			if err := q.UnmarshalBinary(tt.data); !errors.Is(err, ErrCorruptState) {
				t.Fatalf("UnmarshalBinary(%x) = %v, want ErrCorruptState", tt.data, err)
			}
		})
	}
	// And the valid input decodes.
	var q Queue
	if err := q.UnmarshalBinary(valid); err != nil {
		t.Fatal(err)
	}
}

// TestUnmarshalTruncations decodes every prefix and every one-byte change
// of a valid encoding: each must decode or fail with ErrCorruptState,
// never panic.
func TestUnmarshalTruncations(t *testing.T) {
	valid, _ := queueOf(10, 15, map[int64]*Inflight{
		12: {Deadline: 1_700_000_000_000, Attempt: 2, Nonce: 9, Group: "group", AttemptID: "attempt"},
		14: {Deadline: 5, Attempt: 1},
	}, 11, 13).MarshalBinary()
	try := func(b []byte) {
		var q Queue
		if err := q.UnmarshalBinary(b); err != nil && !errors.Is(err, ErrCorruptState) {
			t.Fatalf("UnmarshalBinary(%x) = %v", b, err)
		}
	}
	for i := range len(valid) {
		try(valid[:i])
		for _, v := range []byte{0, 1, 0x7f, 0x80, 0xff} {
			b := slices.Clone(valid)
			b[i] = v
			try(b)
		}
	}
}
