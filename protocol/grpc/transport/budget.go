package transport

import (
	"sync"
	"sync/atomic"

	"golang.org/x/net/http2"
)

// recvBudget bounds the bytes of received messages that the server's
// connections hold together: messages being assembled and messages
// waiting for their handler. Each connection's window is credited as
// data arrives while the server holds less than the budget, or while the
// connection itself holds less than its window (so that no connection
// waits on the others forever); otherwise the credit waits until
// handlers consume what they were sent, and the client sends no more
// than the window it still has. So what all connections hold stays
// under the budget plus, for each connection, about twice its window.
type recvBudget struct {
	limit    int64
	held     atomic.Int64
	nStarved atomic.Int32

	mu      sync.Mutex
	starved map[*conn]struct{} // connections whose credit waits for the budget
}

// addHeld counts n more bytes held by connection c (n < 0: fewer), and
// credits the connections that waited for them.
func (c *conn) addHeld(n int64) {
	if n == 0 {
		return
	}
	c.held.Add(n)
	b := &c.srv.budget
	total := b.held.Add(n)
	if n > 0 {
		return
	}
	if c.starved.Load() {
		c.creditConn()
	}
	if total < b.limit && b.nStarved.Load() > 0 {
		b.mu.Lock()
		waiting := b.starved
		b.starved = nil
		b.nStarved.Store(0)
		b.mu.Unlock()
		for w := range waiting {
			w.starved.Store(false)
			w.creditConn()
		}
	}
}

// creditConn gives the client back the connection window it used, once
// a quarter of the window is due and the budget allows (recvBudget).
func (c *conn) creditConn() {
	b := &c.srv.budget
	c.fmu.Lock()
	if c.recvUnacked < int64(c.opts.ConnWindowSize)/4 {
		c.fmu.Unlock()
		return
	}
	if b.held.Load() >= b.limit && c.held.Load() >= int64(c.opts.ConnWindowSize) {
		c.fmu.Unlock()
		if !c.starved.Swap(true) {
			b.mu.Lock()
			if b.starved == nil {
				b.starved = make(map[*conn]struct{})
			}
			b.starved[c] = struct{}{}
			b.nStarved.Add(1)
			b.mu.Unlock()
			// A release between the check above and the listing did
			// not see this connection waiting: look again.
			if b.held.Load() < b.limit {
				c.forgetStarved()
				c.starved.Store(false)
				c.creditConn()
			}
		}
		return
	}
	incr := c.recvUnacked
	c.recvUnacked = 0
	c.recvWin += incr
	c.fmu.Unlock()
	c.queue(func(b []byte) []byte { return appendWindowUpdate(b, 0, uint32(incr)) })
}

// forgetStarved drops a closed connection from the budget's waiters.
func (c *conn) forgetStarved() {
	b := &c.srv.budget
	b.mu.Lock()
	if _, ok := b.starved[c]; ok {
		delete(b.starved, c)
		b.nStarved.Add(-1)
	}
	b.mu.Unlock()
}

// takeData counts n bytes of a DATA frame against the connection window.
func (c *conn) takeData(n int64) error {
	c.fmu.Lock()
	c.recvWin -= n
	over := c.recvWin < 0
	c.recvUnacked += n
	c.fmu.Unlock()
	if over {
		return c.connError(http2.ErrCodeFlowControl, "data beyond the connection window")
	}
	c.creditConn()
	return nil
}

// holdPartial counts n more bytes of a message being assembled (n < 0:
// fewer), unless the stream has let go of what it held.
func (st *stream) holdPartial(n int64) {
	st.mu.Lock()
	if st.gone {
		n = 0
	} else {
		st.heldPartial += n
	}
	st.mu.Unlock()
	st.c.addHeld(n)
}

// releaseHeld lets go of everything the stream holds, in the budget's
// count; messages already queued stay readable.
func (st *stream) releaseHeld() {
	st.mu.Lock()
	var n int64
	if !st.gone {
		n = int64(st.queued) + st.heldPartial
		st.gone = true
		st.heldPartial = 0
	}
	st.mu.Unlock()
	st.c.addHeld(-n)
}
