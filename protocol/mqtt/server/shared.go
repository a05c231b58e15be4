package server

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
)

// A sharedGroup delivers the queue of one filter to the members of one
// share name ($share/NAME/FILTER), each message to one member. Its
// position is engine state ("g/"+key: the lowest offset not yet
// acknowledged), so a restart delivers again at most what was in flight.
// Messages in flight to a member that leaves (disconnects, unsubscribes,
// ends) are handed to the others.
type sharedGroup struct {
	s                        *Server
	key, name, filter, queue string

	mu          sync.Mutex
	next        int64   // next queue offset to read
	outstanding []int64 // sent at QoS > 0, not acknowledged; ascending
	redo        []int64 // to hand out again; ascending
	members     []*member
	rr          int
	committed   int64
	cancel      context.CancelFunc
	kick        chan struct{}
	stopWait    context.CancelFunc
}

type member struct {
	ss  *session
	c   *conn
	sub *subscription
}

func sharedKey(name, filter string) string { return name + "\x00" + filter }

// sharedGroup returns (creating) the group of name and filter.
func (s *Server) sharedGroup(name, filter, queue string) *sharedGroup {
	key := sharedKey(name, filter)
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.shared[key]; g != nil {
		return g
	}
	g := &sharedGroup{s: s, key: key, name: name, filter: filter, queue: queue, committed: -1, kick: make(chan struct{}, 1)}
	if v, ok, err := s.st.Get("g/" + key); err == nil && ok && len(v) == 8 {
		g.next = int64(binary.BigEndian.Uint64(v))
		g.committed = g.next
	} else {
		g.next = s.queueEnd(queue)
	}
	s.shared[key] = g
	return g
}

// startOp returns, for a group whose position is not stored yet, the
// write of its start, which the caller makes durable before it
// acknowledges the subscription: after a crash the group resumes there,
// not at the queue's end, so the messages stored in between are not
// skipped.
func (g *sharedGroup) startOp() (engine.StateOp, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.committed >= 0 {
		return engine.StateOp{}, false
	}
	g.committed = g.next
	return engine.StateOp{Key: "g/" + g.key, Value: binary.BigEndian.AppendUint64(nil, uint64(g.next))}, true
}

// sharedGroupByKey returns a group that exists; mu of the server held or
// during New.
func (s *Server) sharedGroupByKey(key string) *sharedGroup { return s.shared[key] }

func (g *sharedGroup) wakeLocked() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
	if g.stopWait != nil {
		g.stopWait()
	}
}

func (g *sharedGroup) join(ss *session, c *conn, sub *subscription) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members = slices.DeleteFunc(g.members, func(m *member) bool { return m.ss == ss })
	g.members = append(g.members, &member{ss: ss, c: c, sub: sub})
	if g.cancel == nil {
		ctx, cancel := context.WithCancel(g.s.ctx)
		g.cancel = cancel
		g.s.wg.Add(1)
		go func() {
			defer g.s.wg.Done()
			g.run(ctx)
		}()
	}
	g.wakeLocked()
}

// leave removes the session's membership; with c set, only c's.
func (g *sharedGroup) leave(ss *session, c *conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members = slices.DeleteFunc(g.members, func(m *member) bool { return m.ss == ss && (c == nil || m.c == c) })
	if len(g.members) == 0 && g.cancel != nil {
		g.cancel()
		g.cancel = nil
	}
}

func insertSorted(s []int64, v int64) []int64 {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s
	}
	return slices.Insert(s, i, v)
}

func removeSorted(s []int64, v int64) []int64 {
	if i, found := slices.BinarySearch(s, v); found {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// requeue hands a message in flight to another member.
func (g *sharedGroup) requeue(off int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.outstanding = removeSorted(g.outstanding, off)
	g.redo = insertSorted(g.redo, off)
	g.wakeLocked()
}

// done ends a message in flight.
func (g *sharedGroup) done(off int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.outstanding = removeSorted(g.outstanding, off)
	g.saveLocked()
	g.wakeLocked()
}

func (g *sharedGroup) saveLocked() {
	c := g.next
	if len(g.outstanding) > 0 {
		c = min(c, g.outstanding[0])
	}
	if len(g.redo) > 0 {
		c = min(c, g.redo[0])
	}
	if c == g.committed {
		return
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(c))
	if err := g.s.st.Put("g/"+g.key, v[:]); err == nil {
		g.committed = c
	}
}

// pick chooses a member for a message of QoS qos, taking one of its
// outbound slots when qos > 0; nil when none has room.
func (g *sharedGroup) pickLocked(qos byte) *member {
	n := len(g.members)
	for i := range n {
		m := g.members[(g.rr+i)%n]
		q := min(qos, m.sub.o().qos)
		if q == 0 {
			g.rr = (g.rr + i + 1) % n
			return m
		}
		select {
		case <-m.c.credits:
			g.rr = (g.rr + i + 1) % n
			return m
		default:
		}
	}
	return nil
}

func (g *sharedGroup) run(ctx context.Context) {
	s := g.s
	touched := map[*conn]struct{}{}
	var dec mapping.Decoder
	flush := func() {
		for c := range touched {
			c.flush()
		}
		clear(touched)
	}
	for ctx.Err() == nil {
		g.mu.Lock()
		off, redo, n := g.next, false, 32
		if len(g.redo) > 0 {
			off, redo, n = g.redo[0], true, 1
		}
		g.mu.Unlock()
		res, err := s.e.Pull(ctx, g.queue, 0, off, n, nil)
		if err != nil {
			var re *engine.OffsetRangeError
			if errors.As(err, &re) {
				g.mu.Lock()
				if redo {
					g.redo = removeSorted(g.redo, off)
				} else if g.next == off {
					g.next = max(re.Min, min(off, re.Max))
				}
				g.mu.Unlock()
				if redo || off < re.Max {
					continue
				}
			}
			g.wait(ctx, off)
			continue
		}
		if len(res.Records) == 0 {
			next := res.NextOffset
			res.Release()
			g.mu.Lock()
			if redo {
				g.redo = removeSorted(g.redo, off)
			} else if g.next == off {
				g.next = next
			}
			g.mu.Unlock()
			if next == off && !redo {
				g.wait(ctx, off)
			}
			continue
		}
		msgs := decodeRecords(&dec, res.Records)
		next := res.NextOffset
		res.Release()
		if redo && len(msgs) > 0 && msgs[0].off != off {
			msgs = nil // the message to redo is gone
		}
		done := true
		for i := 0; i < len(msgs) && ctx.Err() == nil; {
			m := &msgs[i].m
			qo := msgs[i].off
			if redo {
				qo = off
			}
			if !m.ExpireAt.IsZero() && !time.Now().Before(m.ExpireAt) {
				g.advance(qo, redo, false)
				i++
				continue
			}
			g.mu.Lock()
			mb := g.pickLocked(m.QoS)
			g.mu.Unlock()
			if mb == nil {
				flush()  // what is queued goes, and the acks come
				select { // every member is full: wait for an ack or a member
				case <-g.kick:
				case <-ctx.Done():
				}
				continue
			}
			qos := min(m.QoS, mb.sub.o().qos)
			if mb.c.deliverShared(g, mb.sub, qo, m, qos) {
				touched[mb.c] = struct{}{}
				g.advance(qo, redo, qos > 0)
				i++
			} else if qos > 0 {
				mb.c.credit()
			}
		}
		if ctx.Err() != nil {
			done = false
		}
		flush()
		g.mu.Lock()
		if done && !redo && g.next < next {
			g.next = next // past entries skipped in the batch
		}
		if redo && len(msgs) == 0 {
			g.redo = removeSorted(g.redo, off)
		}
		g.saveLocked()
		g.mu.Unlock()
	}
}

// advance moves past off, noting it in flight when sent at QoS > 0.
func (g *sharedGroup) advance(off int64, redo, inflight bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if redo {
		g.redo = removeSorted(g.redo, off)
	} else if g.next == off {
		g.next = off + 1
	}
	if inflight {
		g.outstanding = insertSorted(g.outstanding, off)
	}
}

// wait waits for the queue to grow past off, or for a kick.
func (g *sharedGroup) wait(ctx context.Context, off int64) {
	wctx, cancel := context.WithCancel(ctx)
	g.mu.Lock()
	g.stopWait = cancel
	g.mu.Unlock()
	select {
	case <-g.kick: // something to redo or a new member: look again
	default:
		g.s.e.WaitForArrival(wctx, g.queue, 0, off)
	}
	g.mu.Lock()
	g.stopWait = nil
	g.mu.Unlock()
	cancel()
}

// deliverShared sends a shared subscription's message; the slot for
// qos > 0 is taken. false: not sent.
func (c *conn) deliverShared(g *sharedGroup, sub *subscription, off int64, m *mapping.Message, qos byte) bool {
	ss := c.ss
	subID := sub.o().subID
	p := c.outPublish(m, qos, false, subID)
	if c.tooLarge(p) {
		return true
	}
	if qos > 0 {
		ss.mu.Lock()
		pid, ok := ss.allocPID()
		if !ok {
			ss.mu.Unlock()
			return false
		}
		ss.seq++
		f := &outFlight{pid: pid, seq: ss.seq, sub: sub.raw, offset: off, qos: qos, group: g, subID: subID, sent: time.Now(),
			stored: ss.persist.Load()}
		ss.out[pid] = f
		ss.mu.Unlock()
		ss.putOut(f)
		p.PacketID = pid
	}
	if err := c.queue(p); err != nil {
		if qos > 0 {
			// The connection is going: its detach hands the message on.
			return true
		}
		return false
	}
	c.s.msgsOut.Add(1)
	return true
}

// stallLoop hands the QoS 1 messages that members of shared subscriptions
// leave unacknowledged for SharedStallTimeout to other members. The
// member's copy stays in flight on its session; its group no longer
// waits for it.
func (s *Server) stallLoop() {
	defer s.wg.Done()
	t := time.NewTicker(min(time.Second, s.opts.SharedStallTimeout/2))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			type moved struct {
				g   *sharedGroup
				off int64
			}
			var ms []moved
			s.mu.Lock()
			for _, ss := range s.sessions {
				ss.mu.Lock()
				for _, f := range ss.out {
					if f.group != nil && f.qos == 1 && !f.sent.IsZero() && now.Sub(f.sent) >= s.opts.SharedStallTimeout {
						ms = append(ms, moved{f.group, f.offset})
						f.group = nil
					}
				}
				ss.mu.Unlock()
			}
			s.mu.Unlock()
			for _, m := range ms {
				m.g.requeue(m.off)
			}
		}
	}
}
