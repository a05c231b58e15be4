package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// popWaiters holds the pops of one topic that wait for something to pop,
// per consumer group, oldest first. Something that one pop can take (a
// message arriving, an acknowledgement that unblocks one) wakes the
// oldest waiter of each group concerned, not all of them, as RocketMQ's
// broker does: with many consumers long-polling a quiet topic, every
// message used to wake every one of them to find it taken.
//
// A woken pop that leaves without having popped since the wake-up
// (its wait ran out, its caller gave up) passes it on to the next waiter,
// and so does one that took as many messages as it asked for, since more
// may be waiting.
//
// A message whose invisible time ends becomes something to pop too: each
// group keeps one timer, for the earliest such deadline its waiters saw,
// which wakes one of them.
type popWaiters struct {
	n      atomic.Int32 // waiters listed, to skip the lock when none
	mu     sync.Mutex
	groups map[string]*groupWaiters
}

// groupWaiters are the waiting pops of one group, oldest first, and the
// timer for the earliest in-flight deadline they saw.
type groupWaiters struct {
	list  []*popWaiter
	due   int64 // ms since the epoch; 0 when the timer is not set
	timer *time.Timer
}

// popWaiter is one waiting pop.
type popWaiter struct {
	wake   chan struct{} // holds at most one wake-up
	listed bool          // guarded by popWaiters.mu
}

func newPopWaiter() *popWaiter { return &popWaiter{wake: make(chan struct{}, 1)} }

// add lists w at the back of group's waiters, unless it is listed.
func (ws *popWaiters) add(group string, w *popWaiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.listed {
		return
	}
	if ws.groups == nil {
		ws.groups = make(map[string]*groupWaiters)
	}
	g := ws.groups[group]
	if g == nil {
		g = &groupWaiters{}
		ws.groups[group] = g
	}
	g.list = append(g.list, w)
	w.listed = true
	ws.n.Add(1)
}

// expireAt makes sure a waiter of group is woken at due (ms since the
// epoch), when an in-flight message becomes visible again: the group's
// timer is set to the earliest deadline its waiters report.
func (ws *popWaiters) expireAt(group string, due int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	g := ws.groups[group]
	if g == nil || (g.due != 0 && g.due <= due) {
		return
	}
	g.due = due
	d := time.Until(time.UnixMilli(due))
	if g.timer == nil {
		g.timer = time.AfterFunc(d, func() { ws.expired(group, g) })
	} else {
		g.timer.Reset(d)
	}
}

// expired runs when the timer of g fires: it wakes g's oldest waiter,
// which sets the timer again if it finds nothing visible yet.
func (ws *popWaiters) expired(group string, g *groupWaiters) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	g.due = 0
	if ws.groups[group] == g && len(g.list) > 0 {
		ws.signal(group, g.list[0])
	}
}

// leave unlists w as its pop returns. When a wake-up came for w that its
// pop did not use, or more may be waiting (full), the next waiter of the
// group gets one.
func (ws *popWaiters) leave(group string, w *popWaiter, full bool) {
	ws.mu.Lock()
	wasListed := w.listed
	if wasListed {
		ws.unlist(group, w)
	}
	ws.mu.Unlock()
	unused := false
	if !wasListed {
		select {
		case <-w.wake:
			unused = true
		default:
		}
	}
	if unused || full {
		ws.wakeOne(group)
	}
}

// unlist removes w from group's waiters; ws.mu is held. A group left
// without waiters is forgotten, with its timer.
func (ws *popWaiters) unlist(group string, w *popWaiter) {
	g := ws.groups[group]
	list := g.list
	for i, x := range list {
		if x == w {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = nil
			g.list = list[:len(list)-1]
			break
		}
	}
	if len(g.list) == 0 {
		if g.timer != nil {
			g.timer.Stop()
		}
		delete(ws.groups, group)
	}
	w.listed = false
	ws.n.Add(-1)
}

// wakeOne wakes the oldest waiter of group, if any.
func (ws *popWaiters) wakeOne(group string) {
	if ws.n.Load() == 0 {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if g := ws.groups[group]; g != nil {
		ws.signal(group, g.list[0])
	}
}

// wakeEach wakes the oldest waiter of every group.
func (ws *popWaiters) wakeEach() {
	if ws.n.Load() == 0 {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for group, g := range ws.groups {
		ws.signal(group, g.list[0])
	}
}

// wakeAll wakes every waiter of group: what they wait for changed for
// all of them (the group's position moved).
func (ws *popWaiters) wakeAll(group string) {
	if ws.n.Load() == 0 {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for g := ws.groups[group]; g != nil; g = ws.groups[group] {
		ws.signal(group, g.list[0])
	}
}

// signal unlists w and hands it a wake-up; ws.mu is held.
func (ws *popWaiters) signal(group string, w *popWaiter) {
	ws.unlist(group, w)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
