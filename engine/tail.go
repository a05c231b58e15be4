package engine

import (
	"sync"

	"github.com/karmanmq/karman/engine/queue"
)

// tailSize is how many of a queue's newest entries its state keeps in
// memory: enough for a reader at the tail (a long-polling consumer, an
// MQTT subscription, which pulls 32 at a time) to be a pull behind. A
// queue holds them (2.5 KiB) from its first entry since it was loaded.
const tailSize = 64

// entryTail keeps the newest consume-queue entries of one queue as the
// dispatcher indexes them, so that a reader at the queue's tail reads
// them without opening an index iterator. It holds the entries of the
// offsets [first, first+n), each at its offset modulo tailSize.
//
// The dispatcher adds an entry before its index batch commits; readers
// take only entries below the queue's end, which the dispatcher
// publishes after the commit, so they see nothing the index lacks.
type entryTail struct {
	mu    sync.Mutex
	ring  *[tailSize]queue.Entry // nil until the queue's first entry
	first int64
	n     int
}

// add keeps e, the queue's next entry. An entry that does not follow the
// newest kept (the dispatcher indexing records again from its checkpoint)
// starts the tail over with it.
func (t *entryTail) add(e queue.Entry) {
	t.mu.Lock()
	if t.ring == nil {
		t.ring = new([tailSize]queue.Entry)
	}
	if t.n == 0 || e.Offset != t.first+int64(t.n) {
		t.first, t.n = e.Offset, 0
	}
	t.ring[e.Offset%tailSize] = e
	if t.n == tailSize {
		t.first++
	} else {
		t.n++
	}
	t.mu.Unlock()
}

// read appends to dst the kept entries from offset from on, at most max of
// them. ok is false, and dst unchanged, when the entry at from is not kept.
func (t *entryTail) read(from int64, max int, dst []queue.Entry) (_ []queue.Entry, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	end := t.first + int64(t.n)
	if from < t.first || from >= end || from < 0 {
		return dst, false
	}
	for off := from; off < end && max > 0; off++ {
		dst = append(dst, t.ring[off%tailSize])
		max--
	}
	return dst, true
}
