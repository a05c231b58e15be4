package registry

import (
	"context"
	"sync"
)

// Watch returns a stream of consumer-group changes (Joined, Left,
// SubscriptionChanged) from every Heartbeat, Unregister, Disconnect and
// Expire after the call, in the order they happened. The channel is closed
// after ctx is done; cancel ctx to stop watching.
//
// A watcher never slows the registry: changes wait in a backlog of the
// watcher's own, and once the backlog holds Options.WatchBacklog changes,
// further changes to a group are replaced by a single Change{Kind: Resync}
// for it, after which the watcher should read that group's state
// (ConsumerIDs, ConsumerGroup) rather than rely on the individual changes.
// A watcher that never reads costs memory bounded by the backlog plus one
// entry per group.
func (r *Registry) Watch(ctx context.Context) <-chan Change {
	w := &watcher{
		limit: r.opts.WatchBacklog,
		wake:  make(chan struct{}, 1),
	}
	out := make(chan Change)
	r.mu.Lock()
	r.watchers[w] = struct{}{}
	r.mu.Unlock()
	go func() {
		defer func() {
			r.mu.Lock()
			delete(r.watchers, w)
			r.mu.Unlock()
			close(out)
		}()
		w.pump(ctx, out)
	}()
	return out
}

type watcher struct {
	mu      sync.Mutex
	backlog []Change
	head    int             // backlog[head:] is undelivered
	resync  map[string]bool // groups with a Resync in the backlog
	limit   int
	wake    chan struct{} // capacity 1: "the backlog is not empty"
}

// push queues changes without blocking. Called with r.mu held.
func (w *watcher) push(changes []Change) {
	w.mu.Lock()
	for _, ch := range changes {
		if w.resync[ch.Group] {
			continue // the pending Resync covers it
		}
		if len(w.backlog)-w.head >= w.limit {
			if w.resync == nil {
				w.resync = make(map[string]bool)
			}
			w.resync[ch.Group] = true
			ch = Change{Group: ch.Group, Kind: Resync}
		}
		w.backlog = append(w.backlog, ch)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest undelivered change.
func (w *watcher) next() (Change, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head == len(w.backlog) {
		w.backlog, w.head = w.backlog[:0], 0
		return Change{}, false
	}
	ch := w.backlog[w.head]
	w.backlog[w.head] = Change{}
	w.head++
	if w.head >= 64 && 2*w.head >= len(w.backlog) {
		// Slide the undelivered tail to the front so a reader that keeps up
		// without ever emptying the backlog does not grow it forever.
		n := copy(w.backlog, w.backlog[w.head:])
		clear(w.backlog[n:])
		w.backlog, w.head = w.backlog[:n], 0
	}
	if ch.Kind == Resync {
		delete(w.resync, ch.Group)
	}
	return ch, true
}

func (w *watcher) pump(ctx context.Context, out chan<- Change) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		for {
			ch, ok := w.next()
			if !ok {
				break
			}
			select {
			case out <- ch:
			case <-ctx.Done():
				return
			}
		}
	}
}
