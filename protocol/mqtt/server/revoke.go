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
//     naming it, 3.1.1 clients a closed connection. A refused
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
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.sessions))
	for _, ss := range s.sessions {
		ss.mu.Lock()
		if c := ss.conn; c != nil {
			conns = append(conns, c)
		}
		ss.mu.Unlock()
	}
	s.mu.Unlock()
	hooks := s.e.Hooks()
	for _, c := range conns {
		if s.ctx.Err() != nil {
			return
		}
		if err := hooks.CheckPrincipal(c.principal); err != nil {
			s.log.Info("mqtt: principal revoked", "client", c.ss.id, "user", c.principal.Name, "err", err)
			c.revoke("not authorized any more: " + err.Error())
			continue
		}
		if dropped, err := c.recheckSubs(); len(dropped) > 0 {
			c.revoke("not authorized to subscribe to " + dropped[0] + " any more: " + err.Error())
		}
	}
}

// recheckSubs checks each subscription of c's session under c's
// principal, removes the refused ones, and returns their filters and the
// first one's refusal.
func (c *conn) recheckSubs() (dropped []string, first error) {
	ss, hooks := c.ss, c.s.e.Hooks()
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
		if err == nil || !c.dropSub(sub.raw) {
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
// for.
func (c *conn) revoke(reason string) {
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
