package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sync"
	"sync/atomic"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
)

// State keys of a session (namespace route.Namespace; id is the client
// id, which holds no NUL):
//
//	s/<id>              → JSON sessionRecord
//	o/<id> 0 <filter>   → the subscription's committed offset, 8 bytes
//	i/<id> 0 <pid>      → JSON outRecord: a QoS 2 (or shared) message sent
//	                      and not acknowledged
//	d/<id> 0 <filter> 0 <offset> → empty: a QoS 2 message completed past
//	                      the committed offset, not to be sent again
//	q/<id> 0 <pid>      → empty: a QoS 2 PUBLISH stored, awaiting PUBREL
//	w/<id>              → JSON willRecord
const neverExpires = 0xFFFFFFFF

type subscription struct {
	raw    string // as subscribed: "$share/g/f" or f
	filter string // the filter matched
	group  string // the share name; "" when not shared
	queue  string
	opts   atomic.Pointer[subOpts] // replaced when the filter is subscribed again

	// Of a non-shared subscription, guarded by the session's mu.
	next      int64   // the next queue offset to read
	inflight  []int64 // queue offsets sent and not acknowledged, ascending
	committed int64   // last offset persisted
	// done holds the QoS 2 messages completed at or past committed
	// (stored under d/), ascending; recoverEnd is, after a restart, the
	// offset below which the pump skips what is in inflight (resent
	// from its record) or done.
	done       []int64
	recoverEnd int64
	shared     *sharedGroup
}

// subOpts are a subscription's options.
type subOpts struct {
	qos          byte
	noLocal, rap bool
	rh           byte
	subID        int
}

func (sub *subscription) o() *subOpts { return sub.opts.Load() }

// commitOffset is where delivery resumes after a restart.
func (sub *subscription) commitOffset() int64 {
	if len(sub.inflight) > 0 {
		return sub.inflight[0]
	}
	return sub.next
}

func (sub *subscription) removeInflight(off int64) {
	if i, ok := slices.BinarySearch(sub.inflight, off); ok {
		sub.inflight = slices.Delete(sub.inflight, i, i+1)
	}
}

// addInflight notes off as sent; after a restart the pump may send
// offsets below one resent from its record, so it keeps the order.
func (sub *subscription) addInflight(off int64) {
	if n := len(sub.inflight); n == 0 || sub.inflight[n-1] < off {
		sub.inflight = append(sub.inflight, off)
		return
	}
	if i, ok := slices.BinarySearch(sub.inflight, off); !ok {
		sub.inflight = slices.Insert(sub.inflight, i, off)
	}
}

// settled reports whether the message at off is not to be sent by the
// pump: in flight already or a completed QoS 2 one (after a restart).
func (sub *subscription) settled(off int64) bool {
	_, in := slices.BinarySearch(sub.inflight, off)
	_, done := slices.BinarySearch(sub.done, off)
	return in || done
}

type outFlight struct {
	pid    uint16
	seq    uint64
	sub    string // raw filter of the subscription; "" for a retained message
	offset int64
	qos    byte
	rel    bool // PUBREC came, PUBREL sent

	msg    *mapping.Message // retained messages only: not in a queue
	stored bool             // has an i/ record: QoS 2 or shared, of a persistent session
	group  *sharedGroup     // a shared subscription's message
	subID  int
	sent   time.Time // when it was sent (shared QoS 1: for stalls)
}

type session struct {
	s  *Server
	id string

	mu      sync.Mutex
	owner   string // the principal of the connections that hold it; set under Server.mu and mu
	version byte
	persist atomic.Bool // kept after the connection ends
	stored  atomic.Bool // has state in the store (persists, or did)
	expiry  uint32      // seconds after the connection ends; neverExpires
	subs    map[string]*subscription
	out     map[uint16]*outFlight
	nextPID uint16
	seq     uint64
	qos2In  map[uint16]struct{}
	conn    *conn
	gone    time.Time // when the last connection ended; zero while connected
	// willPending: the last connection's will waits, for its delay
	// (willTimer) or for the session's end, whichever comes first.
	willPending bool
	willTimer   *time.Timer
	expireTimer *time.Timer // ends the session once it has no connection
	commitTimer *time.Timer // writes the offsets that moved (commitOffsets)

	// commitMu orders offset writes with the drop of the session's state.
	commitMu sync.Mutex
}

func newSession(s *Server, id string) *session {
	return &session{s: s, id: id, subs: map[string]*subscription{}, out: map[uint16]*outFlight{}, qos2In: map[uint16]struct{}{}}
}

type sessionRecord struct {
	V    byte        `json:"v"`
	E    uint32      `json:"e"`
	U    string      `json:"u,omitempty"`    // owner
	Gone int64       `json:"gone,omitempty"` // Unix ms
	Subs []subRecord `json:"subs,omitempty"`
}

type subRecord struct {
	R   string `json:"r"`
	Q   byte   `json:"q"`
	NL  bool   `json:"nl,omitempty"`
	RAP bool   `json:"rap,omitempty"`
	RH  byte   `json:"rh,omitempty"`
	SI  int    `json:"si,omitempty"`
}

type outRecord struct {
	S   string `json:"s,omitempty"`
	O   int64  `json:"o"`
	Q   byte   `json:"q"`
	Rel bool   `json:"rel,omitempty"`
	Seq uint64 `json:"seq"`
	SI  int    `json:"si,omitempty"`
	G   string `json:"g,omitempty"` // shared group key
	// M is a retained message sent from no queue, with its content.
	M json.RawMessage `json:"m,omitempty"`
}

func sessKey(id string) string     { return "s/" + id }
func subKey(id string) string      { return id + "\x00" }
func offKey(id, raw string) string { return "o/" + subKey(id) + raw }
func pidKey(kind, id string, pid uint16) string {
	return kind + "/" + subKey(id) + string([]byte{byte(pid >> 8), byte(pid)})
}
func doneKey(id, raw string, off int64) string {
	return "d/" + subKey(id) + raw + "\x00" + string(binary.BigEndian.AppendUint64(nil, uint64(off)))
}

// record returns the session's header; mu held.
func (ss *session) record() sessionRecord {
	r := sessionRecord{V: ss.version, E: ss.expiry, U: ss.owner}
	if !ss.gone.IsZero() {
		r.Gone = ss.gone.UnixMilli()
	}
	for _, sub := range ss.subs {
		o := sub.o()
		r.Subs = append(r.Subs, subRecord{R: sub.raw, Q: o.qos, NL: o.noLocal, RAP: o.rap, RH: o.rh, SI: o.subID})
	}
	slices.SortFunc(r.Subs, func(a, b subRecord) int { return strings.Compare(a.R, b.R) })
	return r
}

// saveLocked writes the session's header; mu held.
func (ss *session) saveLocked() error {
	if !ss.persist.Load() {
		return nil
	}
	return ss.s.st.Apply(ss.recordOpLocked())
}

// recordOpLocked returns the write of the session's header, which the
// caller makes; mu held, the session persists.
func (ss *session) recordOpLocked() engine.StateOp {
	b, _ := json.Marshal(ss.record())
	ss.stored.Store(true)
	return engine.StateOp{Key: sessKey(ss.id), Value: b}
}

// appendOffsetOpsLocked appends to ops the write of sub's committed
// offset, if it moved, and the deletes of the done marks it passed; mu
// held.
func (ss *session) appendOffsetOpsLocked(ops []engine.StateOp, sub *subscription) []engine.StateOp {
	op, changed := ss.offsetOpLocked(sub)
	if !changed {
		return ops
	}
	ops = append(ops, op)
	n := 0
	for n < len(sub.done) && sub.done[n] < sub.committed {
		ops = append(ops, engine.StateOp{Key: doneKey(ss.id, sub.raw, sub.done[n]), Delete: true})
		n++
	}
	sub.done = sub.done[n:]
	return ops
}

// commitLaterLocked arms the write of the offsets that moved: QoS 1 is
// at least once, so an acknowledgement moves the offset in memory and
// the offset is written at most OffsetCommitInterval later (and when the
// connection ends); a crash in between sends those messages again; mu
// held.
func (ss *session) commitLaterLocked() {
	if !ss.persist.Load() || ss.commitTimer != nil {
		return
	}
	ss.commitTimer = time.AfterFunc(ss.s.opts.OffsetCommitInterval, func() {
		if err := ss.commitOffsets(); err != nil {
			ss.s.log.Warn("mqtt: commit offsets", "client", ss.id, "err", err)
		}
	})
}

// commitOffsets writes, in one batch, the committed offsets of the
// subscriptions that moved.
func (ss *session) commitOffsets() error {
	ss.commitMu.Lock()
	defer ss.commitMu.Unlock()
	ss.mu.Lock()
	if ss.commitTimer != nil {
		ss.commitTimer.Stop()
		ss.commitTimer = nil
	}
	var ops []engine.StateOp
	for _, sub := range ss.subs {
		ops = ss.appendOffsetOpsLocked(ops, sub)
	}
	ss.mu.Unlock()
	if len(ops) == 0 {
		return nil
	}
	return ss.s.st.Apply(ops...)
}

// offsetOpLocked returns the write of the subscription's committed
// offset, if it changed, and takes it as written; mu held.
func (ss *session) offsetOpLocked(sub *subscription) (engine.StateOp, bool) {
	if !ss.persist.Load() || sub.group != "" {
		return engine.StateOp{}, false
	}
	c := sub.commitOffset()
	if c == sub.committed {
		return engine.StateOp{}, false
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(c))
	sub.committed = c
	return engine.StateOp{Key: offKey(ss.id, sub.raw), Value: v}, true
}

func (ss *session) putOut(f *outFlight) error {
	if !ss.persist.Load() || !f.stored {
		return nil
	}
	op := outOp(ss.id, f)
	if f.qos == 2 || f.msg != nil {
		// Exactly once: on disk before the PUBLISH or PUBREL goes; a
		// retained message is in no queue to read it again from.
		return ss.s.st.ApplySync(op)
	}
	return ss.s.st.Apply(op)
}

// outOp returns the write of f's record.
func outOp(id string, f *outFlight) engine.StateOp {
	r := outRecord{S: f.sub, O: f.offset, Q: f.qos, Rel: f.rel, Seq: f.seq, SI: f.subID}
	if f.group != nil {
		r.G = f.group.key
	}
	if f.msg != nil {
		r.M = mapping.Marshal(f.msg)
	}
	b, _ := json.Marshal(r)
	return engine.StateOp{Key: pidKey("i", id, f.pid), Value: b}
}

// drop deletes every stored trace of the session.
func (ss *session) drop() error {
	ss.commitMu.Lock()
	defer ss.commitMu.Unlock()
	st := ss.s.st
	return errors.Join(
		st.Delete(sessKey(ss.id)),
		st.DeletePrefix("o/"+subKey(ss.id)),
		st.DeletePrefix("i/"+subKey(ss.id)),
		st.DeletePrefix("d/"+subKey(ss.id)),
		st.DeletePrefix("q/"+subKey(ss.id)),
	)
}

// allocPID returns a packet id not in use for outbound messages; mu held.
// ok is false when all 65,535 are.
func (ss *session) allocPID() (uint16, bool) {
	for range 65535 {
		ss.nextPID++
		if ss.nextPID == 0 {
			ss.nextPID = 1
		}
		if _, used := ss.out[ss.nextPID]; !used {
			return ss.nextPID, true
		}
	}
	return 0, false
}

// loadSessions reads the sessions of the last run, adds their filters to
// the router and drops those that expired meanwhile.
func (s *Server) loadSessions() error {
	now := time.Now()
	type loaded struct {
		ss  *session
		rec sessionRecord
	}
	var all []loaded
	err := s.st.Scan("s/", func(k string, v []byte) error {
		var r sessionRecord
		if err := json.Unmarshal(v, &r); err != nil {
			s.log.Warn("mqtt: dropping an unreadable session", "key", k, "err", err)
			return nil
		}
		ss := newSession(s, strings.TrimPrefix(k, "s/"))
		ss.version, ss.expiry, ss.owner = r.V, r.E, r.U
		ss.persist.Store(true)
		ss.stored.Store(true)
		ss.gone = now // connected at the crash: its connection ended now
		if r.Gone != 0 {
			ss.gone = time.UnixMilli(r.Gone)
		}
		all = append(all, loaded{ss, r})
		return nil
	})
	if err != nil {
		return fmt.Errorf("mqtt: load sessions: %w", err)
	}
	for _, l := range all {
		ss := l.ss
		if ss.expired(now) {
			if err := ss.drop(); err != nil {
				return err
			}
			continue
		}
		for _, r := range l.rec.Subs {
			sub, err := s.newSubscription(r.R, r.Q, r.NL, r.RAP, r.RH, r.SI)
			if err != nil {
				continue
			}
			if sub.queue, err = s.router.Add(sub.filter); err != nil {
				return err
			}
			if sub.group != "" {
				sub.shared = s.sharedGroup(sub.group, sub.filter, sub.queue)
			}
			ss.subs[sub.raw] = sub
		}
		if err := ss.loadState(); err != nil {
			return err
		}
		s.sessions[ss.id] = ss
		ss.scheduleExpiryLocked()
	}
	return nil
}

// loadState reads the session's offsets, messages in flight and QoS 2
// ids awaiting PUBREL.
func (ss *session) loadState() error {
	st := ss.s.st
	found := map[*subscription]bool{}
	err := st.Scan("o/"+subKey(ss.id), func(k string, v []byte) error {
		sub := ss.subs[strings.TrimPrefix(k, "o/"+subKey(ss.id))]
		if sub != nil && len(v) == 8 {
			sub.committed = int64(binary.BigEndian.Uint64(v))
			sub.next = sub.committed
			found[sub] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, sub := range ss.subs {
		if sub.group == "" && !found[sub] {
			// Its offset was not stored (a crash between the two writes
			// of SUBSCRIBE): start from the queue's first message.
			sub.next, _ = ss.s.e.MinOffset(sub.queue, 0)
		}
	}
	err = st.Scan("i/"+subKey(ss.id), func(k string, v []byte) error {
		var r outRecord
		kb := []byte(k)
		if json.Unmarshal(v, &r) != nil || len(kb) < 2 {
			return nil
		}
		pid := uint16(kb[len(kb)-2])<<8 | uint16(kb[len(kb)-1])
		f := &outFlight{pid: pid, seq: r.Seq, sub: r.S, offset: r.O, qos: r.Q, rel: r.Rel, subID: r.SI, stored: true}
		if len(r.M) > 0 { // a retained message
			m, err := mapping.Unmarshal(r.M)
			if err != nil {
				ss.s.log.Warn("mqtt: dropping an unreadable retained message in flight", "client", ss.id, "err", err)
				return st.Delete(k)
			}
			f.msg = m
		} else if r.G != "" {
			f.group = ss.s.sharedGroupByKey(r.G)
			if f.group == nil {
				return nil
			}
			if !r.Rel { // QoS 1 or unreceived QoS 2: to whichever member is there
				f.group.requeue(r.O)
				return st.Delete(k)
			}
		} else if sub := ss.subs[r.S]; sub != nil {
			// Resent from here; the pump, from the committed offset,
			// sends what came before it again and skips it.
			sub.inflight = append(sub.inflight, r.O)
			sub.recoverEnd = max(sub.recoverEnd, r.O+1)
		} else if !r.Rel {
			return nil
		}
		ss.out[pid] = f
		ss.seq = max(ss.seq, r.Seq)
		return nil
	})
	if err != nil {
		return err
	}
	for _, sub := range ss.subs {
		slices.Sort(sub.inflight)
	}
	dp := "d/" + subKey(ss.id)
	err = st.Scan(dp, func(k string, _ []byte) error {
		rest := strings.TrimPrefix(k, dp)
		if len(rest) < 9 || rest[len(rest)-9] != 0 {
			return nil
		}
		off := int64(binary.BigEndian.Uint64([]byte(rest[len(rest)-8:])))
		sub := ss.subs[rest[:len(rest)-9]]
		if sub == nil || sub.group != "" || off < sub.committed {
			return st.Delete(k)
		}
		sub.done = append(sub.done, off)
		sub.recoverEnd = max(sub.recoverEnd, off+1)
		return nil
	})
	if err != nil {
		return err
	}
	for _, sub := range ss.subs {
		slices.Sort(sub.done)
	}
	return st.Scan("q/"+subKey(ss.id), func(k string, _ []byte) error {
		kb := []byte(k)
		ss.qos2In[uint16(kb[len(kb)-2])<<8|uint16(kb[len(kb)-1])] = struct{}{}
		return nil
	})
}

// expired reports whether a session without a connection has outlived
// its expiry interval; mu held or the session not shared yet.
func (ss *session) expired(now time.Time) bool {
	if ss.conn != nil || ss.gone.IsZero() || ss.expiry == neverExpires {
		return false
	}
	return now.Sub(ss.gone) >= time.Duration(ss.expiry)*time.Second
}

// scheduleExpiry arms the timer that ends the session once its expiry
// interval after the connection's end has passed; mu held.
func (ss *session) scheduleExpiryLocked() {
	if ss.expireTimer != nil {
		ss.expireTimer.Stop()
		ss.expireTimer = nil
	}
	if ss.conn != nil || ss.expiry == neverExpires || ss.gone.IsZero() {
		return
	}
	left := time.Until(ss.gone.Add(time.Duration(ss.expiry) * time.Second))
	ss.expireTimer = time.AfterFunc(max(left, 0), func() { ss.s.expire(ss) })
}

// expire ends a session whose expiry interval passed.
func (s *Server) expire(ss *session) {
	s.mu.Lock()
	ss.mu.Lock()
	ok := s.sessions[ss.id] == ss && ss.expired(time.Now())
	if ok {
		delete(s.sessions, ss.id)
	}
	ss.mu.Unlock()
	s.mu.Unlock()
	if ok {
		s.endSession(ss)
	}
}

// endSession releases what a session holds, once it is out of the map:
// its filters, its shared messages, its stored state; and publishes a
// delayed will that still waits.
func (s *Server) endSession(ss *session) {
	ss.mu.Lock()
	subs := ss.subs
	ss.subs = map[string]*subscription{}
	outs := ss.out
	ss.out = map[uint16]*outFlight{}
	willWaiting := ss.willPending
	ss.willPending = false
	if ss.willTimer != nil {
		ss.willTimer.Stop()
		ss.willTimer = nil
	}
	if ss.expireTimer != nil {
		ss.expireTimer.Stop()
		ss.expireTimer = nil
	}
	if ss.commitTimer != nil {
		ss.commitTimer.Stop()
		ss.commitTimer = nil
	}
	stored := ss.stored.Load()
	ss.mu.Unlock()
	for _, f := range outs {
		if f.group != nil {
			f.group.requeue(f.offset)
		}
	}
	for _, sub := range subs {
		s.releaseSubscription(ss, sub)
	}
	if willWaiting {
		s.publishWill(ss.id)
	}
	if stored {
		// Also a session whose expiry a DISCONNECT set to 0.
		if err := ss.drop(); err != nil {
			s.log.Warn("mqtt: drop session state", "client", ss.id, "err", err)
		}
	}
}

func (s *Server) releaseSubscription(ss *session, sub *subscription) {
	if sub.shared != nil {
		sub.shared.leave(ss, nil)
	}
	if err := s.router.Release(sub.filter); err != nil {
		s.log.Warn("mqtt: release filter", "filter", sub.filter, "err", err)
	}
}

// queueEndWait bounds queueEnd's wait for the dispatcher.
const queueEndWait = 2 * time.Second

// queueEnd returns the end of a filter's queue, where a new subscription
// starts: once every record appended so far is indexed, so that records
// appended before the filter was routed but indexed after are not taken
// for new ones. The wait is bounded: a master with sync replication
// indexes only what its replicas hold, and with none in sync it would
// not end; the subscription then starts at what is indexed.
func (s *Server) queueEnd(queue string) int64 {
	ctx, cancel := context.WithTimeout(s.ctx, queueEndWait)
	s.e.WaitDispatched(ctx)
	cancel()
	n, err := s.e.MaxOffset(queue, 0)
	if err != nil {
		return 0
	}
	return n
}
