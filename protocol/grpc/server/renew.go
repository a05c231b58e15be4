package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/session"
)

// Auto-renewal of receipts.
//
// A message received with auto_renew gets a lease of
// ConsumeOptions.AutoRenewInvisible, which the server renews (with
// engine.ChangeInvisible) RenewBefore its end, for at most MaxRenew, while
// the receiving client's session lives. Renewal changes the receipt
// handle, but the client keeps the one it was given: the lease maps that
// first handle to the current one, so acks, nacks and dead-letter
// forwards with it act on the current lease. A lease ends when one of
// those succeeds, when renewal finds the message gone, when its time is
// up, or when the client's session is dropped (terminated or expired);
// the message then becomes visible when its current lease runs out.
//
// Lock order: a lease's mu, then leaseTable.mu, then a sessionLeases'
// mu. A lease's mu is held across the engine call that acts on its
// handle, so an ack and a renewal of one message never race. The renewal
// scan holds one client's leases at a time, never the table, so receives
// and acks of other clients do not wait for it.

// lease is one message kept invisible for a client.
type lease struct {
	owner *session.Session
	group string
	first string // the handle the client was given
	until int64  // ms: renew no later than this

	deadline atomic.Int64 // ms: when the current lease ends

	mu     sync.Mutex
	handle string // the current handle
	ended  bool
}

// sessionLeases are the leases of one client, by first handle.
type sessionLeases struct {
	mu sync.Mutex
	m  map[string]*lease
}

// leaseTable holds the leases of every client. The zero value is ready.
type leaseTable struct {
	mu sync.Mutex
	m  map[*session.Session]*sessionLeases // changes under mu; each value's m under its own mu too
}

// add starts a lease of handle h, given to owner and invisible until
// deadline, to be renewed until no later than until.
func (t *leaseTable) add(owner *session.Session, group, h string, deadline, until time.Time) *lease {
	l := &lease{owner: owner, group: group, first: h, handle: h, until: until.UnixMilli()}
	l.deadline.Store(deadline.UnixMilli())
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[*session.Session]*sessionLeases{}
	}
	sl := t.m[owner]
	if sl == nil {
		sl = &sessionLeases{m: map[string]*lease{}}
		t.m[owner] = sl
	}
	sl.mu.Lock()
	sl.m[h] = l
	sl.mu.Unlock()
	return l
}

// lookup returns owner's lease of the first handle h, or nil.
func (t *leaseTable) lookup(owner *session.Session, h string) *lease {
	if owner == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sl := t.m[owner]; sl != nil {
		sl.mu.Lock()
		defer sl.mu.Unlock()
		return sl.m[h]
	}
	return nil
}

// remove forgets owner's leases ls.
func (t *leaseTable) remove(owner *session.Session, ls ...*lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sl := t.m[owner]
	if sl == nil {
		return
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	for _, l := range ls {
		if sl.m[l.first] == l {
			delete(sl.m, l.first)
		}
	}
	if len(sl.m) == 0 {
		delete(t.m, owner)
	}
}

// len returns the number of leases held.
func (t *leaseTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, sl := range t.m {
		sl.mu.Lock()
		n += len(sl.m)
		sl.mu.Unlock()
	}
	return n
}

// due returns the leases to renew by now, after dropping those of
// sessions that are gone.
func (t *leaseTable) due(now, before int64) []*lease {
	t.mu.Lock()
	sls := make([]*sessionLeases, 0, len(t.m))
	for owner, sl := range t.m {
		if sessionGone(owner) {
			delete(t.m, owner)
			continue
		}
		sls = append(sls, sl)
	}
	t.mu.Unlock()
	var out []*lease
	for _, sl := range sls {
		sl.mu.Lock()
		for _, l := range sl.m {
			if l.deadline.Load()-now <= before {
				out = append(out, l)
			}
		}
		sl.mu.Unlock()
	}
	return out
}

func sessionGone(s *session.Session) bool {
	select {
	case <-s.Gone():
		return true
	default:
		return false
	}
}

// withLease runs op on the current handle of the message a client's
// handle h names: the renewed handle when h is the first handle of one of
// the client's leases in group, else h itself. When op succeeds, or finds
// the message acknowledged, redelivered or its handle replaced, the lease
// ends.
func (s *Server) withLease(owner *session.Session, group, h string, op func(handle string) error) error {
	l := s.leases.lookup(owner, h)
	if l == nil || l.group != group {
		return op(h)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		h = l.handle
	}
	err := op(h)
	if err == nil || errors.Is(err, engine.ErrHandleExpired) || errors.Is(err, engine.ErrInvalidHandle) {
		l.ended = true
		s.leases.remove(l.owner, l)
	}
	return err
}

// renewLoop renews due leases every RenewInterval until ctx ends.
func (s *Server) renewLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.Consume.RenewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.renewDue(ctx, time.Now())
		}
	}
}

// renewDue renews the leases that end within RenewBefore of now.
func (s *Server) renewDue(ctx context.Context, now time.Time) {
	o := &s.opts.Consume
	ms := now.UnixMilli()
	for _, l := range s.leases.due(ms, o.RenewBefore.Milliseconds()) {
		if ctx.Err() != nil {
			return
		}
		s.renew(ctx, l, ms)
	}
}

// minRenew is the shortest lease renewal asks the engine for.
const minRenew = 10 * time.Millisecond

// renew extends one lease, or ends it when its time is up or its message
// is gone.
func (s *Server) renew(ctx context.Context, l *lease, now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	d := min(s.opts.Consume.AutoRenewInvisible, time.Duration(l.until-now)*time.Millisecond)
	if d < minRenew {
		// Renewed for the last time: the lease runs out on its own.
		if l.deadline.Load() <= now {
			s.endLease(l)
		}
		return
	}
	h, err := s.eng.ChangeInvisible(ctx, l.group, l.handle, d)
	switch {
	case err == nil:
		l.handle = h
		l.deadline.Store(now + d.Milliseconds())
	case errors.Is(err, engine.ErrHandleExpired), errors.Is(err, engine.ErrInvalidHandle), l.deadline.Load() <= now:
		// Acknowledged by another path, redelivered, or past saving.
		s.endLease(l)
	default:
		s.log.Debug("receipt renewal failed; retrying", "group", l.group, "err", err)
	}
}

// endLease ends l, whose mu the caller holds.
func (s *Server) endLease(l *lease) {
	l.ended = true
	s.leases.remove(l.owner, l)
}
