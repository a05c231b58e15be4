package engine

import "sync"

// notifier wakes every goroutine waiting on it: Wait returns a channel that
// is closed by the next Broadcast. Broadcasting with nobody waiting costs a
// mutex and allocates nothing.
type notifier struct {
	mu sync.Mutex
	ch chan struct{} // nil while nobody waits
}

// Wait returns a channel closed at the next Broadcast. Check the condition
// waited for after taking the channel, not before, so no wake-up is missed.
func (n *notifier) Wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// Broadcast wakes every waiter.
func (n *notifier) Broadcast() {
	n.mu.Lock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.mu.Unlock()
}
