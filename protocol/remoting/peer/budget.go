package peer

import (
	"sync"
)

// SmallFrame is the frame size up to which a frame may take the last
// part of a Budget that larger frames leave free.
const SmallFrame = 64 << 10

// Budget bounds the memory of the incoming frames that the Peers sharing
// it hold at once: a frame's length is taken from the budget when its
// length prefix has been read, before its memory is allocated, and given
// back once its request is handled (its response queued) or its response
// delivered. A Peer that finds no room stops reading until there is some,
// so TCP slows the sender down; Close ends the wait.
//
// Frames larger than SmallFrame leave an eighth of the budget (less when
// the budget is close to one maximal frame) to smaller ones, so that
// connections stalled in the middle of large frames cannot keep ordinary
// requests out. Waiting large frames are admitted in arrival order;
// small ones pass them when they fit.
//
// A Budget is safe for concurrent use.
type Budget struct {
	limit int64 // what all frames may hold
	large int64 // what frames above SmallFrame may hold, with the rest

	mu      sync.Mutex
	used    int64
	waiters []*budgetWaiter // in arrival order
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once n is granted
}

// NewBudget returns a Budget of limit bytes for frames of at most
// maxFrame bytes. A limit below maxFrame is raised to it, so that one
// maximal frame always fits.
func NewBudget(limit int64, maxFrame int) *Budget {
	limit = max(limit, int64(maxFrame))
	reserve := min(limit/8, limit-int64(maxFrame))
	return &Budget{limit: limit, large: limit - reserve}
}

// Limit returns the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }

// InUse returns how many bytes frames hold.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Waiting returns how many frames wait for room.
func (b *Budget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// fits reports whether n bytes fit now. b.mu is held.
func (b *Budget) fits(n int64) bool {
	if n > SmallFrame {
		return b.used+n <= b.large
	}
	return b.used+n <= b.limit
}

// acquire takes n bytes, waiting for room until cancel is closed (then
// it fails with ErrClosed and takes nothing).
func (b *Budget) acquire(n int, cancel <-chan struct{}) error {
	need := int64(n)
	b.mu.Lock()
	if b.fits(need) && (need <= SmallFrame || !b.largeWaiting()) {
		b.used += need
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: need, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-cancel:
	}
	b.mu.Lock()
	for i, o := range b.waiters {
		if o == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			b.mu.Unlock()
			return ErrClosed
		}
	}
	b.mu.Unlock()
	// Granted meanwhile: give it back.
	b.release(n)
	return ErrClosed
}

// largeWaiting reports whether a frame above SmallFrame waits. b.mu is
// held.
func (b *Budget) largeWaiting() bool {
	for _, w := range b.waiters {
		if w.n > SmallFrame {
			return true
		}
	}
	return false
}

// release gives back n bytes and admits the waiting frames that fit now:
// large ones in arrival order, small ones whenever they fit.
func (b *Budget) release(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= int64(n)
	if len(b.waiters) == 0 {
		return
	}
	kept := b.waiters[:0]
	largeBlocked := false
	for _, w := range b.waiters {
		if (w.n <= SmallFrame || !largeBlocked) && b.fits(w.n) {
			b.used += w.n
			close(w.ready)
			continue
		}
		if w.n > SmallFrame {
			largeBlocked = true
		}
		kept = append(kept, w)
	}
	clear(b.waiters[len(kept):])
	b.waiters = kept
}
