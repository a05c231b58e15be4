package server

import (
	"strconv"
	"time"

	"github.com/karmanmq/karman/protocol/mqtt/mapping"
)

// sysMessages returns the $SYS/broker/... statistics as messages.
func (s *Server) sysMessages() []*mapping.Message {
	st := s.Stats()
	now := time.Now()
	n := func(topic string, v int64) *mapping.Message {
		return &mapping.Message{Topic: "$SYS/broker/" + topic, Payload: []byte(strconv.FormatInt(v, 10)), Retain: true}
	}
	return []*mapping.Message{
		{Topic: "$SYS/broker/version", Payload: []byte("karman"), Retain: true},
		n("uptime", int64(now.Sub(s.started)/time.Second)),
		n("clients/connected", st.Connections),
		n("clients/total", st.Sessions),
		n("messages/received", st.MessagesIn),
		n("messages/sent", st.MessagesOut),
		n("messages/dropped", st.DroppedQoS0),
		n("subscriptions/count", st.Subscriptions),
		n("retained messages/count", st.Retained),
		n("load/bytes/received", st.BytesIn),
	}
}

// sysLoop sends the statistics to the connected subscribers of $SYS
// topics every SysInterval, at QoS 0, without storing them.
func (s *Server) sysLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.SysInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		msgs := s.sysMessages()
		type target struct {
			c     *conn
			subID int
			rap   bool
			f     string
		}
		var targets []target
		s.mu.Lock()
		for _, ss := range s.sessions {
			ss.mu.Lock()
			if ss.conn != nil {
				for _, sub := range ss.subs {
					if sub.group == "" && len(sub.filter) > 0 && sub.filter[0] == '$' {
						o := sub.o()
						targets = append(targets, target{ss.conn, o.subID, o.rap, sub.filter})
					}
				}
			}
			ss.mu.Unlock()
		}
		s.mu.Unlock()
		for _, tg := range targets {
			for _, m := range msgs {
				if matchFilter(tg.f, m.Topic) {
					p := tg.c.outPublish(m, 0, tg.rap, tg.subID)
					if !tg.c.tooLarge(p) {
						tg.c.write(p)
					}
				}
			}
		}
	}
}
