package registry

import (
	"fmt"
	"slices"
	"testing"
)

// queueIDs returns queues 0..n-1 of topic T on broker-a.
func queueIDs(n int) []Queue {
	qs := make([]Queue, n)
	for i := range qs {
		qs[i] = Queue{Topic: "T", Broker: "broker-a", ID: int32(i)}
	}
	return qs
}

func idsOf(qs []Queue) []int32 {
	out := []int32{}
	for _, q := range qs {
		out = append(out, q.ID)
	}
	return out
}

func cids(n int) []ClientID {
	out := make([]ClientID, n)
	for i := range out {
		out[i] = ClientID(fmt.Sprintf("192.168.24.%03d@default", i+1))
	}
	return out
}

// Results RocketMQ's clients produce (the first rows are the Go client's
// own strategy tests; the others follow from its algorithm by hand).
func TestAllocateKnownResults(t *testing.T) {
	tests := []struct {
		queues, consumers int
		averagely         [][]int32 // per consumer, in sorted id order
		circle            [][]int32
	}{
		{6, 2, [][]int32{{0, 1, 2}, {3, 4, 5}}, [][]int32{{0, 2, 4}, {1, 3, 5}}},
		{6, 3, [][]int32{{0, 1}, {2, 3}, {4, 5}}, [][]int32{{0, 3}, {1, 4}, {2, 5}}},
		{6, 4, [][]int32{{0, 1}, {2, 3}, {4}, {5}}, [][]int32{{0, 4}, {1, 5}, {2}, {3}}},
		{6, 7, [][]int32{{0}, {1}, {2}, {3}, {4}, {5}, {}}, [][]int32{{0}, {1}, {2}, {3}, {4}, {5}, {}}},
		{8, 3, [][]int32{{0, 1, 2}, {3, 4, 5}, {6, 7}}, [][]int32{{0, 3, 6}, {1, 4, 7}, {2, 5}}},
		{10, 4, [][]int32{{0, 1, 2}, {3, 4, 5}, {6, 7}, {8, 9}}, [][]int32{{0, 4, 8}, {1, 5, 9}, {2, 6}, {3, 7}}},
		{4, 4, [][]int32{{0}, {1}, {2}, {3}}, [][]int32{{0}, {1}, {2}, {3}}},
		{2, 3, [][]int32{{0}, {1}, {}}, [][]int32{{0}, {1}, {}}},
		{5, 1, [][]int32{{0, 1, 2, 3, 4}}, [][]int32{{0, 1, 2, 3, 4}}},
	}
	for _, tt := range tests {
		qs, cs := queueIDs(tt.queues), cids(tt.consumers)
		for i, me := range cs {
			if got := idsOf(AllocateAveragely(qs, cs, me)); !slices.Equal(got, tt.averagely[i]) {
				t.Errorf("averagely %d queues/%d consumers, consumer %d: %v, want %v", tt.queues, tt.consumers, i, got, tt.averagely[i])
			}
			if got := idsOf(AllocateAveragelyByCircle(qs, cs, me)); !slices.Equal(got, tt.circle[i]) {
				t.Errorf("circle %d queues/%d consumers, consumer %d: %v, want %v", tt.queues, tt.consumers, i, got, tt.circle[i])
			}
		}
	}
}

// Inputs are sorted (queues by topic, broker, id; consumers by id) and
// deduplicated before allocating, and are not modified.
func TestAllocateSortsInputs(t *testing.T) {
	qs := []Queue{
		{"T", "broker-b", 1}, {"T", "broker-a", 1}, {"S", "broker-b", 0},
		{"T", "broker-b", 0}, {"T", "broker-a", 0}, {"T", "broker-a", 0},
	}
	orig := slices.Clone(qs)
	cs := ids("c-2", "c-1", "c-1")
	want1 := []Queue{{"S", "broker-b", 0}, {"T", "broker-a", 0}, {"T", "broker-a", 1}}
	want2 := []Queue{{"T", "broker-b", 0}, {"T", "broker-b", 1}}
	if got := AllocateAveragely(qs, cs, "c-1"); !slices.Equal(got, want1) {
		t.Fatalf("c-1: %v, want %v", got, want1)
	}
	if got := AllocateAveragely(qs, cs, "c-2"); !slices.Equal(got, want2) {
		t.Fatalf("c-2: %v, want %v", got, want2)
	}
	wantC := []Queue{{"S", "broker-b", 0}, {"T", "broker-a", 1}, {"T", "broker-b", 1}}
	if got := AllocateAveragelyByCircle(qs, cs, "c-1"); !slices.Equal(got, wantC) {
		t.Fatalf("circle c-1: %v, want %v", got, wantC)
	}
	if !slices.Equal(qs, orig) || !slices.Equal(cs, ids("c-2", "c-1", "c-1")) {
		t.Fatal("inputs modified")
	}
	for _, f := range []func([]Queue, []ClientID, ClientID) []Queue{AllocateAveragely, AllocateAveragelyByCircle} {
		if f(qs, cs, "stranger") != nil || f(qs, cs, "") != nil || f(nil, cs, "c-1") != nil || f(qs, nil, "c-1") != nil {
			t.Fatal("allocation for an absent consumer or empty input")
		}
	}
}

// javaAverage is RocketMQ's AllocateMessageQueueAveragely formula written
// out as in the Java client, used as an oracle.
func javaAverage(mqAll, index, cidAll int) (start, count int) {
	mod := mqAll % cidAll
	averageSize := 0
	if mqAll <= cidAll {
		averageSize = 1
	} else if mod > 0 && index < mod {
		averageSize = mqAll/cidAll + 1
	} else {
		averageSize = mqAll / cidAll
	}
	if mod > 0 && index < mod {
		start = index * averageSize
	} else {
		start = index*averageSize + mod
	}
	return start, max(0, min(averageSize, mqAll-start))
}

// Every queue goes to exactly one consumer under both strategies, shares
// differ by at most one, and averagely matches the Java formula.
func TestAllocatePartitions(t *testing.T) {
	for n := 1; n <= 40; n++ {
		for m := 1; m <= 12; m++ {
			qs, cs := queueIDs(n), cids(m)
			for name, f := range map[string]func([]Queue, []ClientID, ClientID) []Queue{
				"averagely": AllocateAveragely, "circle": AllocateAveragelyByCircle,
			} {
				owner := make([]int, n)
				lo, hi := n, 0
				for i, me := range cs {
					got := f(qs, cs, me)
					lo, hi = min(lo, len(got)), max(hi, len(got))
					for _, q := range got {
						owner[q.ID]++
					}
					if name == "averagely" {
						var want []Queue
						if start, count := javaAverage(n, i, m); count > 0 {
							want = qs[start : start+count]
						}
						if !slices.Equal(got, want) {
							t.Fatalf("%d/%d consumer %d: %v, want %v", n, m, i, idsOf(got), idsOf(want))
						}
					}
				}
				for id, k := range owner {
					if k != 1 {
						t.Fatalf("%s %d/%d: queue %d allocated %d times", name, n, m, id, k)
					}
				}
				if hi-lo > 1 {
					t.Fatalf("%s %d/%d: shares from %d to %d", name, n, m, lo, hi)
				}
			}
		}
	}
}
