package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/queue"
)

func TestEntryTail(t *testing.T) {
	offsets := func(es []queue.Entry) []int64 {
		var out []int64
		for _, e := range es {
			if e.CommitLogOffset != 1000+e.Offset {
				t.Fatalf("entry %d holds log offset %d", e.Offset, e.CommitLogOffset)
			}
			out = append(out, e.Offset)
		}
		return out
	}
	span := func(from, to int64) []int64 {
		var out []int64
		for o := from; o < to; o++ {
			out = append(out, o)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		adds     []int64 // offsets added, in order
		from     int64
		max      int
		want     []int64
		wantKept bool
	}{
		{"empty", nil, 0, 10, nil, false},
		{"first entries", span(0, 5), 0, 10, span(0, 5), true},
		{"from the middle", span(0, 5), 3, 10, span(3, 5), true},
		{"max bounds", span(0, 5), 1, 2, span(1, 3), true},
		{"past the newest", span(0, 5), 5, 10, nil, false},
		{"below the oldest after wrapping", span(0, tailSize+10), 9, 10, nil, false},
		{"oldest after wrapping", span(0, tailSize+10), 10, 3, span(10, 13), true},
		{"across the ring's end", span(0, tailSize+10), tailSize - 2, 6, span(tailSize-2, tailSize+4), true},
		{"whole ring", span(7, 7+3*tailSize), 7 + 2*tailSize, tailSize + 5, span(7+2*tailSize, 7+3*tailSize), true},
		{"a gap starts over", append(span(0, 5), span(8, 10)...), 4, 10, nil, false},
		{"after a gap", append(span(0, 5), span(8, 10)...), 8, 10, span(8, 10), true},
		{"indexed again from a checkpoint", append(span(0, 5), span(2, 4)...), 2, 10, span(2, 4), true},
		{"not below the restart", append(span(0, 5), span(2, 4)...), 1, 10, nil, false},
		{"negative offset", span(0, 5), -1, 10, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl entryTail
			for _, o := range tc.adds {
				tl.add(queue.Entry{Offset: o, CommitLogOffset: 1000 + o})
			}
			dst := []queue.Entry{{Offset: -7, CommitLogOffset: 993}}
			got, kept := tl.read(tc.from, tc.max, dst)
			if kept != tc.wantKept {
				t.Fatalf("kept %v, want %v", kept, tc.wantKept)
			}
			if got[0].Offset != -7 {
				t.Fatal("read changed what dst held")
			}
			if g := offsets(got[1:]); !slices.Equal(g, tc.want) {
				t.Fatalf("read %v, want %v", g, tc.want)
			}
		})
	}
}

// TestPullTail pulls a topic queue and a light queue from every offset,
// with the newest entries in the queues' tails and, after a restart, with
// none: every pull returns the same records, and the kept entries are
// those of the index.
func TestPullTail(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, nil)
	defer func() { e.Close() }()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	const lmq = "%LMQ%tail"
	total := 0
	send := func(n int) {
		t.Helper()
		for range n {
			if _, err := e.Send(ctx, newMsg("T", fmt.Sprint(total), message.PropertyInnerMultiDispatch, lmq)); err != nil {
				t.Fatal(err)
			}
			total++
		}
		if err := e.WaitDispatched(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string, wantKept bool) {
		t.Helper()
		for _, qn := range []string{"T", lmq} {
			q, err := e.readQueue(qn, 0)
			if err != nil {
				t.Fatal(err)
			}
			from := int64(total - tailSize)
			kept, ok := q.tail.read(from, tailSize, nil)
			if ok != wantKept {
				t.Fatalf("%s: %s: newest entries kept %v, want %v", stage, qn, ok, wantKept)
			}
			if ok {
				stored, err := e.queues.Entries(qn, 0, from, tailSize, nil)
				if err != nil || !slices.Equal(kept, stored) {
					t.Fatalf("%s: %s: tail %v, index %v (%v)", stage, qn, kept, stored, err)
				}
			}
			for from := range int64(total) + 1 {
				for _, max := range []int{1, 5, tailSize, tailSize + 9} {
					res, err := e.Pull(ctx, qn, 0, from, max, nil)
					if err != nil {
						t.Fatalf("%s: %s: pull %d×%d: %v", stage, qn, from, max, err)
					}
					if want := min(max, total-int(from)); len(res.Records) != want {
						t.Fatalf("%s: %s: pull %d×%d gave %d records, want %d", stage, qn, from, max, len(res.Records), want)
					}
					for i, r := range res.Records {
						m, _, err := message.DecodeStored(r)
						off := from + int64(i)
						if err != nil || m.QueueOffset != off || string(m.Body) != fmt.Sprint(off) {
							t.Fatalf("%s: %s: pull %d×%d record %d: offset %d body %q (%v)", stage, qn, from, max, i, m.QueueOffset, m.Body, err)
						}
					}
					if res.NextOffset != from+int64(len(res.Records)) {
						t.Fatalf("%s: %s: pull %d×%d: next %d", stage, qn, from, max, res.NextOffset)
					}
					res.Release()
				}
			}
		}
	}
	for _, n := range []int{1, 3, 7, 20, 40, 2} {
		send(n)
	}
	check("live", true)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, dir, nil)
	check("reopened", false)
	send(tailSize + 3)
	check("reopened and sent to", true)
}
