package server

import (
	"slices"
	"time"

	"github.com/karmanmq/karman/engine"
)

// attach binds connection c to the session of id, taking it over from a
// connection that holds it, and reports whether a session was present.
// A session is resumed only by its owner, the principal that made it:
// another one's connection starts a new session, so that it gets no
// subscriptions or messages the owner was authorized for. A session with
// no owner (saved before authentication was turned on) is taken by the
// first principal that connects with its client id; resume then checks
// its subscriptions under that principal. The session's record, when it
// persists, and ops (the connection's will) are synced before attach
// returns.
func (s *Server) attach(c *conn, id string, clean, persist bool, expiry uint32, ops ...engine.StateOp) (*session, bool, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, false, ErrClosed
		}
		ss := s.sessions[id]
		if ss != nil {
			ss.mu.Lock()
			old := ss.conn
			ss.mu.Unlock()
			if old != nil {
				s.mu.Unlock()
				old.takeover()
				<-old.done
				continue
			}
		}
		var stale *session
		present := false
		if ss != nil && (clean || !ss.ownedBy(c.principal.Name)) {
			delete(s.sessions, id)
			stale, ss = ss, nil
		}
		if ss == nil {
			ss = newSession(s, id)
			s.sessions[id] = ss
		} else {
			present = true
		}
		ss.mu.Lock()
		ss.willPending = false // a reconnect cancels a delayed will [MQTT-3.1.3-9]
		if ss.willTimer != nil {
			ss.willTimer.Stop()
			ss.willTimer = nil
		}
		if ss.expireTimer != nil {
			ss.expireTimer.Stop()
			ss.expireTimer = nil
		}
		ss.conn, ss.gone, ss.owner = c, time.Time{}, c.principal.Name
		ss.version, ss.expiry = c.version, expiry
		wasPersistent := ss.persist.Load()
		ss.persist.Store(persist)
		if persist {
			ops = append(ops, ss.recordOpLocked())
		}
		ss.mu.Unlock()
		s.mu.Unlock()
		if stale != nil {
			s.endSession(stale)
		}
		var err error
		if len(ops) > 0 {
			// The CONNACK promises the session and the will: they are
			// on disk first, written outside Server.mu so that
			// connections arriving together share one sync.
			ss.commitMu.Lock()
			err = s.st.ApplySync(ops...)
			ss.commitMu.Unlock()
		}
		if wasPersistent && !persist {
			// Kept in memory for this connection only from now on.
			if derr := ss.drop(); derr != nil && err == nil {
				err = derr
			}
			ss.stored.Store(false)
		}
		if err != nil {
			s.detach(c)
			return nil, false, err
		}
		return ss, present, nil
	}
}

// detach unbinds c from its session; a session that does not persist
// ends.
func (s *Server) detach(c *conn) {
	ss := c.ss
	if ss == nil {
		return
	}
	s.mu.Lock()
	ss.mu.Lock()
	if ss.conn != c {
		ss.mu.Unlock()
		s.mu.Unlock()
		return
	}
	ss.conn = nil
	ss.gone = time.Now()
	end := !ss.persist.Load()
	if end && s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	if !end {
		if err := ss.saveLocked(); err != nil {
			s.log.Warn("mqtt: save session", "client", ss.id, "err", err)
		}
		ss.scheduleExpiryLocked()
	}
	// QoS 1 messages of shared subscriptions go to other members.
	var moved []*outFlight
	for pid, f := range ss.out {
		if f.group != nil && !f.rel {
			moved = append(moved, f)
			delete(ss.out, pid)
		}
	}
	subs := make([]*subscription, 0, len(ss.subs))
	for _, sub := range ss.subs {
		subs = append(subs, sub)
	}
	persist := ss.persist.Load()
	ss.mu.Unlock()
	s.mu.Unlock()
	for _, f := range moved {
		if persist {
			s.st.Delete(pidKey("i", ss.id, f.pid))
		}
		f.group.requeue(f.offset)
	}
	if end {
		s.endSession(ss)
		return
	}
	// The pumps stopped: the offsets that moved are written now.
	if err := ss.commitOffsets(); err != nil {
		s.log.Warn("mqtt: commit offsets", "client", ss.id, "err", err)
	}
	for _, sub := range subs {
		if sub.shared != nil {
			sub.shared.leave(ss, c) // not a connection that took the session since
		}
	}
}

// ownedBy reports whether principal name may resume ss: its owner's, or
// a session without one.
func (ss *session) ownedBy(name string) bool { return ss.owner == name || ss.owner == "" }

// resume checks c's principal and the session's subscriptions under it
// (see recheckSubs) again, for a change between CONNECT and CONNACK or
// while the session had no connection, sends again what the session has in flight for those it
// keeps, in order, and starts their delivery.
func (c *conn) resume() {
	ss := c.ss
	if err := c.s.e.Hooks().CheckPrincipal(c.principal); err != nil {
		c.revoke("not authorized any more: "+err.Error(), true) // changed since CONNECT
		return
	}
	dropped, _ := c.recheckSubs(ss)
	ss.mu.Lock()
	outs := make([]*outFlight, 0, len(ss.out))
	var revoked []*outFlight // messages of subscriptions dropped
	for _, f := range ss.out {
		if !f.rel && f.sub != "" && slices.Contains(dropped, f.sub) {
			revoked = append(revoked, f)
			continue
		}
		outs = append(outs, f)
	}
	subs := make([]*subscription, 0, len(ss.subs))
	for _, sub := range ss.subs {
		subs = append(subs, sub)
	}
	ss.mu.Unlock()
	for _, f := range revoked {
		ss.dropOut(c, f)
	}
	sortOut(outs)
	for _, f := range outs {
		select { // they count against the client's receive maximum
		case <-c.credits:
		default:
		}
		if f.rel {
			c.write(pubrel(f.pid))
			continue
		}
		if !c.resend(f) {
			ss.dropOut(c, f)
		}
	}
	for _, sub := range subs {
		c.startSub(sub)
	}
}
