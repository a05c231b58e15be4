package plugins

import (
	"context"
	"slices"
	"sync"
)

// gather sends the requests of concurrent callers to a plugin together.
// A caller that finds fewer than maxCalls calls in flight sends its
// request (and any waiting, up to maxBytes); callers that find the calls
// busy wait, and when a call ends the first of them sends the next one,
// with every request that waits by then. A lone caller thus pays one
// call, and under load a call carries the requests that arrived while
// the previous one was out: the cost of a call (a round trip between
// processes, framing, scheduling on both sides) is shared by all of
// them.
//
// Invariant: a request waits in the queue without the lead only while
// maxCalls calls are in flight or handed to waiting requests (lead).
type gather[Req, Resp any] struct {
	// send makes one call of reqs and returns an answer and an error
	// for each.
	send     func(reqs []Req) ([]Resp, []error)
	maxCalls int
	maxBytes int // the requests one call carries, unless one alone is larger

	mu    sync.Mutex
	queue []*waiter[Req, Resp]
	calls int
}

// waiter is one caller's request and, once its call ends, its answer.
// The fields but req and size are guarded by gather.mu.
type waiter[Req, Resp any] struct {
	req  Req
	size int
	wake chan struct{} // one signal: the answer is in, or lead

	lead  bool // this caller holds a call slot: it sends its request itself
	taken bool // the request is in a call
	done  bool // resp and err are the answer
	resp  Resp
	err   error
}

// do sends req (of about size bytes on the wire) and returns its answer.
// When ctx ends first, do returns ctx's error, and held is true when the
// request is in a call still: its memory must then be left alone.
func (g *gather[Req, Resp]) do(ctx context.Context, req Req, size int) (resp Resp, err error, held bool) {
	w := &waiter[Req, Resp]{req: req, size: size, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if g.calls < g.maxCalls {
		g.calls++
		w.lead = true
		g.mu.Unlock()
		g.lead(w)
		return w.resp, w.err, false
	}
	g.mu.Unlock()
	select {
	case <-w.wake:
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		switch {
		case w.done:
			return w.resp, w.err, false
		case w.taken:
			return resp, ctx.Err(), true
		}
		g.queue = slices.DeleteFunc(g.queue, func(q *waiter[Req, Resp]) bool { return q == w })
		if w.lead {
			g.handOn() // the call slot handed to w goes on
		}
		return resp, ctx.Err(), false
	}
	g.mu.Lock()
	lead := w.lead
	g.mu.Unlock()
	if lead {
		g.lead(w)
	}
	return w.resp, w.err, false
}

// lead makes one call of w's request and of the requests waiting without
// the lead, answers them, and hands the call slot on. The caller holds
// the slot (w.lead).
func (g *gather[Req, Resp]) lead(w *waiter[Req, Resp]) {
	g.mu.Lock()
	batch := []*waiter[Req, Resp]{w}
	w.taken = true
	bytes := w.size
	g.queue = slices.DeleteFunc(g.queue, func(q *waiter[Req, Resp]) bool {
		switch {
		case q == w:
			return true
		case q.lead || bytes+q.size > g.maxBytes:
			return false // another's to send, or too much for this call
		}
		bytes += q.size
		q.taken = true
		batch = append(batch, q)
		return true
	})
	g.mu.Unlock()

	reqs := make([]Req, len(batch))
	for i, q := range batch {
		reqs[i] = q.req
	}
	resps, errs := g.send(reqs)

	g.mu.Lock()
	for i, q := range batch {
		q.resp, q.err, q.done = resps[i], errs[i], true
		if q != w {
			q.wake <- struct{}{}
		}
	}
	g.handOn()
	g.mu.Unlock()
}

// handOn gives the call slot of a call that ended (or of a caller that
// gave up on it) to the first request waiting without the lead, or back
// when there is none. g.mu is held.
func (g *gather[Req, Resp]) handOn() {
	for _, q := range g.queue {
		if !q.lead {
			q.lead = true
			q.wake <- struct{}{}
			return
		}
	}
	g.calls--
}
