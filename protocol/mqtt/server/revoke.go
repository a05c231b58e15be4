package server

import (
	"time"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

// Rights held over time. A subscription is authorized when it is made,
// and then serves messages for as long as its session lives; a change of
// users or policies (hook.Changing) must reach it:
//
//   - A connected client: after every change, its principal is checked
//     (hook.PrincipalChecker: a user deleted or disabled), then each of its
//     subscriptions as SUBSCRIBE checks it. A principal that no longer
//     stands, or a subscription now refused, ends the connection: MQTT
//     5.0 clients get DISCONNECT 0x87 Not authorized with a reason string
//     naming it, 3.1.1 clients a closed connection. The will of a
//     principal that no longer stands is dropped; a client that lost a
//     subscription has its will published, as at any end it did not ask
//     for. A refused
//     subscription is removed from the session first, so that a client
//     coming back with its session finds it gone (and a SUBSCRIBE for it
//     is refused: 0x87, or 0x80 on 3.1.1).
//   - A session resumed by a CONNECT (its client was away during the
//     change, or the session was saved before authorization was turned
//     on): its subscriptions are checked under the connecting principal
//     before delivery starts; the refused ones are removed, with the
//     messages in flight for them, and the CONNACK says the session is
//     present.

// watchAuth starts re-checking the connected clients after every change
// of the engine's Authenticators and Authorizers that tell of changes.
func (s *Server) watchAuth() {
	hooks := s.e.Hooks()
	if !hooks.Guarded() {
		return
	}
	changed := make(chan struct{}, 1)
	cancel := hooks.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default: // a check is pending: it will see this change too
		}
	})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-changed:
				s.recheck()
			}
		}
	}()
}

// recheck checks the rights of every connected client again.
func (s *Server) recheck() {
	type held struct {
		ss *session
		c  *conn
	}
	s.mu.Lock()
	list := make([]held, 0, len(s.sessions))
	for _, ss := range s.sessions {
		ss.mu.Lock()
		// A connection is checked once its CONNACK is out; resume
		// checks what changed before.
		if c := ss.conn; c != nil && c.acked.Load() {
			list = append(list, held{ss, c})
		}
		ss.mu.Unlock()
	}
	s.mu.Unlock()
	hooks := s.e.Hooks()
	for _, h := range list {
		if s.ctx.Err() != nil {
			return
		}
		if err := hooks.CheckPrincipal(h.c.principal); err != nil {
			s.log.Info("mqtt: principal revoked", "client", h.ss.id, "user", h.c.principal.Name, "err", err)
			h.c.revoke("not authorized any more: "+err.Error(), true)
			continue
		}
		if dropped, err := h.c.recheckSubs(h.ss); len(dropped) > 0 {
			h.c.revoke("not authorized to subscribe to "+dropped[0]+" any more: "+err.Error(), false)
		}
	}
}

// recheckSubs checks each subscription of ss, c's session, under c's
// principal, removes the refused ones, and returns their filters and the
// first one's refusal.
func (c *conn) recheckSubs(ss *session) (dropped []string, first error) {
	hooks := c.s.e.Hooks()
	if len(hooks.Authorizers) == 0 {
		return nil, nil
	}
	ss.mu.Lock()
	subs := make([]*subscription, 0, len(ss.subs))
	for _, sub := range ss.subs {
		subs = append(subs, sub)
	}
	ss.mu.Unlock()
	for _, sub := range subs {
		err := c.authorizeSub(hooks, sub.filter)
		if err == nil || !c.dropSub(ss, sub.raw) {
			continue
		}
		c.s.log.Info("mqtt: subscription revoked", "client", ss.id, "user", c.principal.Name, "filter", sub.raw, "err", err)
		dropped = append(dropped, sub.raw)
		if first == nil {
			first = err
		}
	}
	return dropped, first
}

// revoke ends a connection whose rights were withdrawn: DISCONNECT 0x87
// Not authorized with reason for MQTT 5.0 clients, then the connection
// closes. The will is published as at any end the client did not ask
// for, unless dropWill: the principal no longer stands, and its will is
// dropped as at a DISCONNECT.
func (c *conn) revoke(reason string, dropWill bool) {
	if dropWill {
		c.clean.Store(true)
	}
	c.revoked.Store(true)
	defer c.cancel()
	c.nc.SetWriteDeadline(time.Now().Add(time.Second)) // a write in progress ends soon
	if c.version == packet.Version5 {
		d := &packet.Disconnect{ReasonCode: packet.NotAuthorized}
		d.Properties.ReasonString = reason
		c.write(d)
	}
	c.nc.Close()
}
