package registry

import (
	"slices"
	"strings"
)

// Queue allocation splits a topic's queues among the consumers of a group
// the way RocketMQ clients do on their side, for servers that assign queues
// themselves (gRPC QueryAssignment) and for tests that predict a client's
// share. Both functions sort their inputs first, as the clients do before
// allocating: queues by topic, broker name, then id; client ids as strings
// (byte order, as the Go client's sort.Strings; the Java client's
// String.compareTo agrees for the ASCII ids clients generate). Duplicates
// are dropped. The inputs are not modified. The result is nil when me is
// not among the consumers or there is nothing to allocate.

// AllocateAveragely returns me's share under RocketMQ's default strategy
// (AllocateMessageQueueAveragely, the Go client's AllocateByAveragely):
// each consumer gets a contiguous block; with n queues and m consumers the
// first n%m consumers get n/m+1 queues and the others n/m. With fewer
// queues than consumers, the first n consumers get one queue each. For
// example 8 queues among 3 consumers give blocks of 3, 3 and 2.
func AllocateAveragely(queues []Queue, consumers []ClientID, me ClientID) []Queue {
	qs, index, m := prepareAllocation(queues, consumers, me)
	if index < 0 {
		return nil
	}
	n := len(qs)
	mod := n % m
	size := 1
	if n > m {
		size = n / m
		if index < mod {
			size++
		}
	}
	start := index*size + mod
	if index < mod {
		start = index * size
	}
	count := min(size, n-start)
	if count <= 0 {
		return nil
	}
	return qs[start : start+count : start+count]
}

// AllocateAveragelyByCircle returns me's share under RocketMQ's
// AllocateMessageQueueAveragelyByCircle (the Go client's
// AllocateByAveragelyCircle): queues are dealt round-robin, so the consumer
// at index i gets queues i, i+m, i+2m, ... For example 8 queues among 3
// consumers give {0,3,6}, {1,4,7} and {2,5}.
func AllocateAveragelyByCircle(queues []Queue, consumers []ClientID, me ClientID) []Queue {
	qs, index, m := prepareAllocation(queues, consumers, me)
	if index < 0 {
		return nil
	}
	var out []Queue
	for i := index; i < len(qs); i += m {
		out = append(out, qs[i])
	}
	return out
}

// prepareAllocation returns the sorted, deduplicated queues, me's index
// among the sorted, deduplicated consumers (-1 when absent or when there is
// nothing to allocate) and the number of consumers.
func prepareAllocation(queues []Queue, consumers []ClientID, me ClientID) (qs []Queue, index, m int) {
	if me == "" || len(queues) == 0 || len(consumers) == 0 {
		return nil, -1, 0
	}
	cs := slices.Clone(consumers)
	slices.SortFunc(cs, func(a, b ClientID) int { return strings.Compare(string(a), string(b)) })
	cs = slices.Compact(cs)
	index, found := slices.BinarySearch(cs, me)
	if !found {
		return nil, -1, 0
	}
	qs = slices.Clone(queues)
	slices.SortFunc(qs, compareQueues)
	qs = slices.Compact(qs)
	return qs, index, len(cs)
}
