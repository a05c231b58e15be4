package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

func pubrel(pid uint16) *packet.Pubrel { return &packet.Pubrel{PacketID: pid} }

func sortOut(outs []*outFlight) {
	slices.SortFunc(outs, func(a, b *outFlight) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
}

// startSub starts delivering a subscription on c.
func (c *conn) startSub(sub *subscription) {
	if sub.group != "" {
		if sub.shared != nil {
			sub.shared.join(c.ss, c, sub)
		}
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.pumpMu.Lock()
	if old := c.pumps[sub.raw]; old != nil {
		old()
	}
	c.pumps[sub.raw] = cancel
	c.pumpWG.Add(1)
	c.pumpMu.Unlock()
	go func() {
		defer c.pumpWG.Done()
		c.pump(ctx, sub)
	}()
}

// stopSub stops a subscription's pump.
func (c *conn) stopSub(raw string) {
	c.pumpMu.Lock()
	if cancel := c.pumps[raw]; cancel != nil {
		cancel()
		delete(c.pumps, raw)
	}
	c.pumpMu.Unlock()
}

// pump delivers a non-shared subscription's queue to c.
func (c *conn) pump(ctx context.Context, sub *subscription) {
	s, ss := c.s, c.ss
	var batch pumpBatch
	var dec mapping.Decoder
	for ctx.Err() == nil {
		ss.mu.Lock()
		off, recoverEnd := sub.next, sub.recoverEnd
		ss.mu.Unlock()
		res, err := s.e.Pull(ctx, sub.queue, 0, off, 32, nil)
		if err != nil {
			var re *engine.OffsetRangeError
			if errors.As(err, &re) {
				ss.mu.Lock()
				if sub.next == off {
					sub.next = max(re.Min, min(off, re.Max))
				}
				ss.mu.Unlock()
				if off < re.Max {
					continue
				}
			} else if ctx.Err() == nil {
				s.log.Warn("mqtt: pull", "client", ss.id, "filter", sub.raw, "err", err)
			}
			if res != nil {
				res.Release()
			}
			if err := s.e.WaitForArrival(ctx, sub.queue, 0, off); err != nil && ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		if len(res.Records) == 0 {
			next := res.NextOffset
			res.Release()
			ss.mu.Lock()
			if sub.next == off {
				sub.next = next
			}
			ss.mu.Unlock()
			if next == off {
				s.e.WaitForArrival(ctx, sub.queue, 0, off)
			}
			continue
		}
		if sub.o().qos == 0 && res.MaxOffset-off > s.opts.MaxQoS0Lag {
			// Too slow for its QoS 0 messages: skip to the newest.
			skipTo := res.MaxOffset - 1
			s.droppedQoS0.Add(skipTo - off)
			res.Release()
			ss.mu.Lock()
			if sub.next == off {
				sub.next = skipTo
			}
			ss.mu.Unlock()
			continue
		}
		// The pull's messages and their PUBLISH packets are written (or
		// the pump ends) before the scratch goes back to the pool: nothing
		// keeps them past this pull.
		scratch := pullScratches.Get().(*pullScratch)
		msgs := scratch.decode(&dec, res.Records)
		next := res.NextOffset
		res.Release()
		for i := range msgs {
			sm := &msgs[i]
			if sm.off < recoverEnd && c.settled(sub, sm.off) {
				continue
			}
			if err := c.deliver(ctx, sub, sm.off, &sm.m, &sm.pub, &batch); err != nil {
				return
			}
		}
		if c.commitPump(&batch) != nil || c.flush() != nil {
			return
		}
		scratch.put()
		ss.mu.Lock()
		if sub.next <= next && ss.subs[sub.raw] == sub {
			sub.next = next
			if sub.commitOffset() != sub.committed {
				ss.commitLaterLocked()
			}
		}
		ss.mu.Unlock()
	}
}

// settled reports whether the pump skips the message at off of sub: after
// a restart, one resent from its record or a completed QoS 2 one.
func (c *conn) settled(sub *subscription, off int64) bool {
	c.ss.mu.Lock()
	defer c.ss.mu.Unlock()
	return sub.settled(off)
}

// outPublish builds the PUBLISH of m for a subscriber.
func (c *conn) outPublish(m *mapping.Message, qos byte, retain bool, subID int) *packet.Publish {
	p := new(packet.Publish)
	c.setPublish(p, m, qos, retain, subID)
	return p
}

// setPublish sets p to the PUBLISH of m for a subscriber.
func (c *conn) setPublish(p *packet.Publish, m *mapping.Message, qos byte, retain bool, subID int) {
	*p = packet.Publish{Topic: m.Topic, QoS: qos, Retain: retain, Payload: m.Payload}
	if c.version != packet.Version5 {
		return
	}
	pr := &p.Properties
	if m.HasPayloadFormat {
		pr.PayloadFormat = m.PayloadFormat
		pr.SetPresent(packet.PropPayloadFormat)
	}
	if !m.ExpireAt.IsZero() {
		pr.MessageExpiry = uint32(max(1, (time.Until(m.ExpireAt)+time.Second-1)/time.Second))
	}
	pr.ContentType, pr.ResponseTopic = m.ContentType, m.ResponseTopic
	if m.CorrelationData != nil {
		pr.CorrelationData = m.CorrelationData
		pr.SetPresent(packet.PropCorrelationData)
	}
	for _, u := range m.UserProperties {
		pr.UserProperties = append(pr.UserProperties, packet.UserProperty{Key: u.Key, Value: u.Value})
	}
	if subID > 0 {
		pr.SubscriptionIdentifiers = []int{subID}
	}
}

// tooLarge reports whether p exceeds the client's Maximum Packet Size:
// such a message is not sent and counts as delivered [MQTT-3.1.2-25].
func (c *conn) tooLarge(p packet.Packet) bool {
	return c.clientMaxSize > 0 && p.Size(c.version) > c.clientMaxSize
}

// pumpBatch holds a pump's QoS 2 PUBLISH packets of a persistent session
// until their records are on disk: one sync for the batch (commit), not
// one per message. They are held apart from the connection's write
// buffer, which other goroutines flush; the messages after one of them
// are held too, to keep their order.
type pumpBatch struct {
	ops  []engine.StateOp
	pubs []*packet.Publish
}

// commitPump writes the batch's records, synced, then queues its
// packets.
func (c *conn) commitPump(b *pumpBatch) error {
	if len(b.pubs) == 0 {
		return nil
	}
	var err error
	if len(b.ops) > 0 {
		err = c.s.st.ApplySync(b.ops...)
		clear(b.ops)
		b.ops = b.ops[:0]
	}
	if err != nil {
		// Not sent: a reconnect sends them again from the session.
		c.s.log.Warn("mqtt: store in-flight messages", "client", c.ss.id, "err", err)
		clear(b.pubs)
		b.pubs = b.pubs[:0]
		c.nc.Close()
		return err
	}
	for i, p := range b.pubs {
		if err := c.queue(p); err != nil {
			return err
		}
		b.pubs[i] = nil
		c.s.msgsOut.Add(1)
	}
	b.pubs = b.pubs[:0]
	return nil
}

// deliver sends the message at queue offset off of sub, built in p, or
// holds it in batch (a stored QoS 2 one; the pump commits the batch
// before it flushes). It returns an error only when ctx ended before it
// could be sent.
func (c *conn) deliver(ctx context.Context, sub *subscription, off int64, m *mapping.Message, p *packet.Publish, batch *pumpBatch) error {
	ss := c.ss
	o := sub.o()
	if o.noLocal && m.Publisher == ss.id {
		return nil
	}
	if !m.ExpireAt.IsZero() && !time.Now().Before(m.ExpireAt) {
		return nil
	}
	qos := min(m.QoS, o.qos)
	c.setPublish(p, m, qos, o.rap && m.Retain, o.subID)
	if c.tooLarge(p) {
		return nil
	}
	if qos == 0 {
		if len(batch.pubs) > 0 { // behind a held one
			batch.pubs = append(batch.pubs, p)
			return nil
		}
		if err := c.queue(p); err != nil {
			return err
		}
		c.s.msgsOut.Add(1)
		return nil
	}
	select {
	case <-c.credits:
	default:
		// Out of slots: what is queued goes now, and the acks come.
		if err := c.commitPump(batch); err != nil {
			return err
		}
		if err := c.flush(); err != nil {
			return err
		}
		select {
		case <-c.credits:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ss.mu.Lock()
	if ss.subs[sub.raw] != sub {
		ss.mu.Unlock()
		c.credit()
		return nil
	}
	pid, ok := ss.allocPID()
	if !ok {
		ss.mu.Unlock()
		c.credit()
		return errors.New("mqtt: no free packet id")
	}
	ss.seq++
	// QoS 1 in flight lives in memory: after a crash the messages from
	// the committed offset are sent again (at least once). QoS 2 is
	// stored, so that it is resent with its packet id, never anew.
	f := &outFlight{pid: pid, seq: ss.seq, sub: sub.raw, offset: off, qos: qos, subID: o.subID,
		stored: qos == 2 && ss.persist.Load()}
	ss.out[pid] = f
	sub.addInflight(off)
	sub.next = max(sub.next, off+1)
	ss.mu.Unlock()
	p.PacketID = pid
	if f.stored {
		// Exactly once: the record is on disk before the PUBLISH goes.
		batch.ops = append(batch.ops, outOp(ss.id, f))
	}
	if len(batch.pubs) > 0 || f.stored {
		batch.pubs = append(batch.pubs, p)
		return nil
	}
	if err := c.queue(p); err != nil {
		return err
	}
	c.s.msgsOut.Add(1)
	return nil
}

// retainedOut is a retained message for a subscriber, at QoS qos.
type retainedOut struct {
	m     *mapping.Message
	qos   byte
	subID int
}

// deliverRetained sends messages that are in no queue (retained ones).
// QoS > 0 is tracked as in flight; a persistent session stores them,
// with their content, in one synced write before they go, so that a
// restart sends again those not acknowledged. A message the client has
// no room for is skipped rather than the reader blocked.
func (c *conn) deliverRetained(list []retainedOut) {
	ss := c.ss
	persist := ss.persist.Load()
	var pubs []*packet.Publish
	var ops []engine.StateOp
	now := time.Now()
	for _, r := range list {
		m := r.m
		if !m.ExpireAt.IsZero() && !now.Before(m.ExpireAt) {
			continue
		}
		p := c.outPublish(m, r.qos, true, r.subID)
		if c.tooLarge(p) {
			continue
		}
		if r.qos > 0 {
			select {
			case <-c.credits:
			default:
				continue
			}
			ss.mu.Lock()
			pid, ok := ss.allocPID()
			if !ok {
				ss.mu.Unlock()
				c.credit()
				continue
			}
			ss.seq++
			f := &outFlight{pid: pid, seq: ss.seq, qos: r.qos, msg: m, subID: r.subID, offset: -1, stored: persist}
			ss.out[pid] = f
			ss.mu.Unlock()
			if persist {
				ops = append(ops, outOp(ss.id, f))
			}
			p.PacketID = pid
		}
		pubs = append(pubs, p)
	}
	if len(ops) > 0 {
		if err := c.s.st.ApplySync(ops...); err != nil {
			c.s.log.Warn("mqtt: store retained messages in flight", "client", ss.id, "err", err)
		}
	}
	for _, p := range pubs {
		if c.queue(p) != nil {
			return
		}
		c.s.msgsOut.Add(1)
	}
	c.flush()
}

// resend sends an in-flight message again after a reconnect; false when
// it can no longer be read.
func (c *conn) resend(f *outFlight) bool {
	m := f.msg
	if m == nil {
		queue := ""
		if f.group != nil {
			queue = f.group.queue
		} else {
			c.ss.mu.Lock()
			if sub := c.ss.subs[f.sub]; sub != nil {
				queue = sub.queue
			}
			c.ss.mu.Unlock()
		}
		if queue == "" {
			return false
		}
		res, err := c.s.e.Pull(c.ctx, queue, 0, f.offset, 1, nil)
		if err != nil {
			return false
		}
		if len(res.Records) == 0 {
			res.Release()
			return false
		}
		rm, off, err := mapping.FromStored(res.Records[0])
		res.Release()
		if err != nil || off != f.offset {
			return false
		}
		m = rm
	}
	p := c.outPublish(m, f.qos, f.msg != nil, f.subID) // a retained message keeps its flag
	p.PacketID, p.Dup = f.pid, true
	return c.write(p) == nil
}

// credit returns one outbound slot.
func (c *conn) credit() {
	select {
	case c.credits <- struct{}{}:
	default:
	}
}

// acked ends an outbound message (PUBACK, PUBCOMP, or a failed PUBREC).
func (ss *session) acked(c *conn, pid uint16) {
	ss.mu.Lock()
	f, ok := ss.out[pid]
	var ops []engine.StateOp
	persist := ss.persist.Load()
	if ok {
		delete(ss.out, pid)
		if persist && f.stored {
			ops = append(ops, engine.StateOp{Key: pidKey("i", ss.id, pid), Delete: true})
		}
		if sub := ss.subs[f.sub]; sub != nil && f.group == nil && f.msg == nil {
			sub.removeInflight(f.offset)
			switch {
			case !persist:
			case f.stored || f.qos == 2:
				// A QoS 2 exchange ends now, in one write with the
				// offset; when messages before it are still in flight
				// the offset stays below it, and a mark keeps it from
				// being sent again after a restart.
				ops = ss.appendOffsetOpsLocked(ops, sub)
				if f.qos == 2 && sub.committed <= f.offset {
					i, _ := slices.BinarySearch(sub.done, f.offset)
					sub.done = slices.Insert(sub.done, i, f.offset)
					ops = append(ops, engine.StateOp{Key: doneKey(ss.id, sub.raw, f.offset), Value: []byte{}})
				}
			default:
				ss.commitLaterLocked()
			}
		}
	}
	ss.mu.Unlock()
	if !ok {
		return
	}
	c.credit()
	if len(ops) > 0 {
		// The message is done and the offset moves past it in one
		// write, with the reader's batch (for QoS 2 synced before the
		// reader waits again).
		c.stage(f.qos == 2, ops...)
	}
	if f.group != nil {
		f.group.done(f.offset)
	}
}

// dropOut forgets an in-flight message that cannot be sent again.
func (ss *session) dropOut(c *conn, f *outFlight) { ss.acked(c, f.pid) }

// received handles a PUBREC: the message is delivered; PUBREL follows.
func (ss *session) received(c *conn, pid uint16, code packet.ReasonCode) {
	if code.IsError() {
		ss.acked(c, pid)
		return
	}
	ss.mu.Lock()
	f, ok := ss.out[pid]
	if ok {
		f.rel = true
	}
	ss.mu.Unlock()
	if !ok {
		rel := pubrel(pid)
		if c.version == packet.Version5 {
			rel.ReasonCode = packet.PacketIdentifierNotFound
		}
		c.write(rel)
		return
	}
	// PUBREL goes once the record says so, with the reader's batch.
	if ss.persist.Load() && f.stored {
		c.stage(f.qos == 2 || f.msg != nil, outOp(ss.id, f))
	}
	c.answer(pubrel(pid))
}

// storedMsg is a message of a pull, its queue offset, and room for its
// PUBLISH to a subscriber.
type storedMsg struct {
	m   mapping.Message
	off int64
	pub packet.Publish
}

// pullScratch is room for the messages of one pull of a subscription's
// pump, pooled: a pump holds one only from its pull until the pull's
// packets are written, so an idle subscription holds none.
type pullScratch struct {
	msgs []storedMsg
	buf  []byte
}

var pullScratches = sync.Pool{New: func() any { return new(pullScratch) }}

// decode is decodeRecords into the scratch's arrays, grown as needed.
func (s *pullScratch) decode(d *mapping.Decoder, recs [][]byte) []storedMsg {
	n := 0
	for _, r := range recs {
		n += len(r) // bounds the payloads
	}
	if cap(s.buf) < n {
		s.buf = make([]byte, 0, n)
	}
	if cap(s.msgs) < len(recs) {
		s.msgs = make([]storedMsg, len(recs))
	}
	return decodeInto(d, recs, s.buf[:0], s.msgs[:len(recs)])
}

// put hands the scratch back for another pull. Outsized arrays (a pull
// of large messages) are left to the garbage collector.
func (s *pullScratch) put() {
	if cap(s.buf) > 256<<10 {
		return
	}
	pullScratches.Put(s)
}

// decodeRecords decodes the stored records of a pull with d, skipping any
// that do not decode (the engine counts those as corrupt). The messages
// and their PUBLISH packets share one array, and their payloads one
// copy: two allocations for the pull, beside the names d makes anew.
func decodeRecords(d *mapping.Decoder, recs [][]byte) []storedMsg {
	n := 0
	for _, r := range recs {
		n += len(r) // bounds the payloads
	}
	return decodeInto(d, recs, make([]byte, 0, n), make([]storedMsg, len(recs)))
}

// decodeInto decodes recs into msgs (as long as recs), their payloads
// appended to buf, skipping any that do not decode, and returns the
// messages decoded.
func decodeInto(d *mapping.Decoder, recs [][]byte, buf []byte, msgs []storedMsg) []storedMsg {
	i := 0
	for _, r := range recs {
		off, b, err := d.Decode(&msgs[i].m, r, buf)
		if err == nil {
			msgs[i].off, buf = off, b
			i++
		}
	}
	return msgs[:i]
}
