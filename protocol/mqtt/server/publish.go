package server

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
	"github.com/karmanmq/karman/protocol/mqtt/topic"
)

func matchFilter(filter, name string) bool { return topic.Match(filter, name) }

// publish stores m in the commit log (and, when it is retained, in the
// retained store) before it returns.
func (s *Server) publish(ctx context.Context, m *mapping.Message) error {
	r, err := mapping.ToRocketMQ(m)
	if err != nil {
		return err
	}
	if _, err := s.e.Send(ctx, r); err != nil {
		return fmt.Errorf("mqtt: publish to %s: %w", m.Topic, err)
	}
	s.msgsIn.Add(1)
	if m.Retain {
		if err := s.retained.set(m); err != nil {
			return err
		}
	}
	return nil
}

// retainStore holds the retained messages: in memory for matching, in
// engine state (keys "t/"+topic) for restarts.
type retainStore struct {
	s    *Server
	mu   sync.RWMutex
	msgs map[string]*mapping.Message
	// topics orders the writes of one topic's retained message: held,
	// by the topic's hash, from the change in memory until it is
	// written, so that the last message in memory is the last on disk
	// while other topics' writes share their syncs.
	topics [64]sync.Mutex
}

func (r *retainStore) load() error {
	return r.s.st.Scan("t/", func(k string, v []byte) error {
		m, err := mapping.Unmarshal(v)
		if err != nil {
			r.s.log.Warn("mqtt: dropping an unreadable retained message", "key", k, "err", err)
			return nil
		}
		r.msgs[m.Topic] = m
		return nil
	})
}

// set replaces the topic's retained message; an empty payload deletes it.
// A message of QoS 1 or 2 is on disk when set returns (its PUBACK or
// PUBREC follows); QoS 0 reaches the disk shortly after.
func (r *retainStore) set(m *mapping.Message) error {
	h := fnv.New32a()
	h.Write([]byte(m.Topic))
	tl := &r.topics[h.Sum32()%uint32(len(r.topics))]
	tl.Lock()
	defer tl.Unlock()
	op := engine.StateOp{Key: "t/" + m.Topic, Value: mapping.Marshal(m)}
	r.mu.Lock()
	if len(m.Payload) == 0 {
		if _, ok := r.msgs[m.Topic]; !ok {
			r.mu.Unlock()
			return nil
		}
		delete(r.msgs, m.Topic)
		op = engine.StateOp{Key: "t/" + m.Topic, Delete: true}
	}
	r.mu.Unlock()
	apply := r.s.st.Apply
	if m.QoS > 0 {
		apply = r.s.st.ApplySync
	}
	if err := apply(op); err != nil {
		return err
	}
	if !op.Delete {
		r.mu.Lock()
		r.msgs[m.Topic] = m
		r.mu.Unlock()
	}
	return nil
}

func (r *retainStore) matching(filter string) []*mapping.Message {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*mapping.Message
	now := time.Now()
	for t, m := range r.msgs {
		if matchFilter(filter, t) && (m.ExpireAt.IsZero() || now.Before(m.ExpireAt)) {
			out = append(out, m)
		}
	}
	return out
}

func (r *retainStore) count() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.msgs)
}

// Wills are stored under "w/"+client id while their connection lives, so
// that a crash does not lose them: the next start publishes them.
type willRecord struct {
	M     json.RawMessage `json:"m"`
	Delay uint32          `json:"d,omitempty"`
}

// willOp returns the write of a connection's will.
func willOp(id string, m *mapping.Message, delay uint32) engine.StateOp {
	b, _ := json.Marshal(willRecord{M: mapping.Marshal(m), Delay: delay})
	return engine.StateOp{Key: "w/" + id, Value: b}
}

func (s *Server) deleteWill(id string) {
	if err := s.st.Delete("w/" + id); err != nil {
		s.log.Warn("mqtt: delete will", "client", id, "err", err)
	}
}

// publishWill publishes and deletes the stored will of id.
func (s *Server) publishWill(id string) {
	v, ok, err := s.st.Get("w/" + id)
	if err != nil || !ok {
		return
	}
	var w willRecord
	if json.Unmarshal(v, &w) == nil {
		if m, err := mapping.Unmarshal(w.M); err == nil {
			// Not the server's context: a will due at shutdown is
			// published while the server stops.
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
			err := s.publish(ctx, m)
			cancel()
			if err != nil {
				s.log.Warn("mqtt: publish will", "client", id, "err", err)
			}
		}
	}
	s.deleteWill(id)
}

// willAtEnd publishes the will of a connection that ended without a
// DISCONNECT: at once, or after its delay while the session lives; a
// session that ends first publishes it then (endSession).
func (s *Server) willAtEnd(c *conn) {
	s.scheduleWill(c.ss, time.Duration(c.willDelay)*time.Second)
}

// scheduleWill publishes the session's stored will once delay has passed
// (at once when it is 0 or the session does not persist), unless a
// reconnect cancels it first.
func (s *Server) scheduleWill(ss *session, delay time.Duration) {
	ss.mu.Lock()
	if delay <= 0 || !ss.persist.Load() {
		ss.mu.Unlock()
		s.publishWill(ss.id)
		return
	}
	ss.willPending = true
	if ss.expiry == neverExpires || delay < time.Duration(ss.expiry)*time.Second {
		var t *time.Timer
		t = time.AfterFunc(delay, func() {
			ss.mu.Lock()
			mine := ss.willTimer == t && ss.willPending
			if mine {
				ss.willTimer, ss.willPending = nil, false
			}
			ss.mu.Unlock()
			if mine {
				s.publishWill(ss.id)
			}
		})
		ss.willTimer = t
	}
	ss.mu.Unlock()
}

// publishOrphanWills publishes, at start, the wills of connections the
// last run did not end; a will of a session that is still held keeps
// what is left of its delay, counted from the end of the session's last
// connection (the shutdown, or this start after a crash).
func (s *Server) publishOrphanWills() error {
	var ids []string
	var delays []uint32
	err := s.st.Scan("w/", func(k string, v []byte) error {
		var w willRecord
		json.Unmarshal(v, &w)
		ids = append(ids, strings.TrimPrefix(k, "w/"))
		delays = append(delays, w.Delay)
		return nil
	})
	if err != nil {
		return fmt.Errorf("mqtt: load wills: %w", err)
	}
	for i, id := range ids {
		ss := s.sessions[id]
		if ss != nil && delays[i] > 0 {
			ss.mu.Lock()
			left := time.Duration(delays[i])*time.Second - time.Since(ss.gone)
			ss.mu.Unlock()
			s.scheduleWill(ss, left)
			continue
		}
		s.publishWill(id)
	}
	return nil
}
