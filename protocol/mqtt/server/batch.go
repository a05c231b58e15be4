package server

import (
	"fmt"
	"strings"
	"sync"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

// A reader stores the QoS 0 and 1 PUBLISH packets of a burst, not
// retained and to one engine topic (an MQTT topic's first level), in one
// engine append: one append, and one wake-up of the subscriptions'
// pumps, for the burst instead of one each. The batch is stored before
// the reader queues any answer (commitReader), so a PUBACK still goes
// only once its message is in the commit log, and before the reader
// handles a packet whose meaning may rest on it (handle), or stores a
// message on its own (QoS 2, retained): a connection's messages are
// stored in the order it sent them.
const (
	maxPublishBatch      = 64      // messages
	maxPublishBatchBytes = 1 << 20 // payload bytes
)

// publishBatch is the reader's batch of messages to store.
type publishBatch struct {
	msgs []*message.Message // in sc.recs
	acks []*packet.Puback   // of each message, in sc.acks; nil for QoS 0
	size int
	// sc holds the messages, their bytes and their PUBACKs from the
	// first message until the reader has queued its answers (release).
	sc *pubScratch
}

// pubScratch holds a reader's messages and their bytes (payloads and
// encoded properties) until the engine has stored them, and their
// PUBACKs until they are queued: pooled, so that a busy connection
// reuses them and an idle one holds none. Nothing in it is overwritten
// before release: an append that moves an array leaves the old one to
// what points into it.
type pubScratch struct {
	buf  []byte
	recs []message.Message
	acks []packet.Puback
}

var pubScratches = sync.Pool{New: func() any { return new(pubScratch) }}

// reset empties the batch once it is stored; its scratch stays, for the
// PUBACKs still to be queued.
func (b *publishBatch) reset() {
	clear(b.msgs)
	clear(b.acks)
	b.msgs, b.acks, b.size = b.msgs[:0], b.acks[:0], 0
}

// release returns the scratch to the pool: the batch is stored and
// nothing points into the scratch any more (the reader's answers are
// queued or dropped).
func (b *publishBatch) release() {
	sc := b.sc
	if sc == nil {
		return
	}
	b.sc = nil
	clear(sc.recs)
	clear(sc.acks)
	sc.recs, sc.acks = sc.recs[:0], sc.acks[:0]
	if cap(sc.buf) <= 256<<10 { // an outsized batch's buffer is not kept
		sc.buf = sc.buf[:0]
		pubScratches.Put(sc)
	}
}

// scratch returns the batch's scratch, taking one from the pool.
func (b *publishBatch) scratch() *pubScratch {
	if b.sc == nil {
		b.sc = pubScratches.Get().(*pubScratch)
	}
	return b.sc
}

// newAck returns a PUBACK for pid, held in the scratch.
func (b *publishBatch) newAck(pid uint16) *packet.Puback {
	sc := b.scratch()
	sc.acks = append(sc.acks, packet.Puback{PacketID: pid})
	return &sc.acks[len(sc.acks)-1]
}

// add encodes the message of p into the batch's scratch, without copying
// through a property map: its payload and properties are appended to
// the scratch buffer.
func (b *publishBatch) add(p *packet.Publish, publisher string) (*message.Message, error) {
	sc := b.scratch()
	var m mapping.Message
	setFromPublish(&m, p, publisher)
	if len(p.Payload) > 0 {
		at := len(sc.buf)
		sc.buf = append(sc.buf, p.Payload...)
		m.Payload = sc.buf[at:len(sc.buf):len(sc.buf)]
	}
	sc.recs = append(sc.recs, message.Message{})
	r := &sc.recs[len(sc.recs)-1]
	var err error
	if sc.buf, err = mapping.Encode(r, &m, sc.buf); err != nil {
		sc.recs = sc.recs[:len(sc.recs)-1]
		return nil, err
	}
	return r, nil
}

// batchPublish adds an accepted PUBLISH of QoS 0 or 1, not retained, to
// the reader's batch, and its PUBACK to the reader's answers.
func (c *conn) batchPublish(p *packet.Publish) bool {
	b := &c.pubs
	if len(b.msgs) > 0 {
		if first, _, _ := strings.Cut(p.Topic, "/"); first != b.msgs[0].Topic && c.storePublishes() != nil {
			return false
		}
	}
	r, err := b.add(p, c.ss.id)
	if err != nil {
		return c.publishFailed(p, fmt.Errorf("mqtt: publish to %s: %w", p.Topic, err))
	}
	var ack *packet.Puback
	if p.QoS == 1 {
		ack = b.newAck(p.PacketID)
	}
	b.msgs = append(b.msgs, r)
	b.acks = append(b.acks, ack)
	b.size += len(r.Body)
	if (len(b.msgs) >= maxPublishBatch || b.size >= maxPublishBatchBytes) && c.storePublishes() != nil {
		return false
	}
	if ack == nil {
		return true
	}
	return c.answer(ack)
}

// publishFailed answers a PUBLISH that could not be stored: a 3.1.1
// connection ends (it has no negative acknowledgement), a 5.0 one gets a
// PUBACK/PUBREC with the reason.
func (c *conn) publishFailed(p *packet.Publish, err error) bool {
	if c.version != packet.Version5 {
		c.s.log.Debug("mqtt: publish failed; closing", "client", c.ss.id, "err", err)
		return false
	}
	return c.pubAck(p, publishCode(err), err.Error())
}

// storePublishes stores the reader's batch. When the engine refuses the
// batch before storing any of it, each message is sent again on its own,
// so that one message's refusal (too large, say) is its alone. A message
// not stored gets its reason in its PUBACK (5.0); on a 3.1.1 connection
// it ends the connection: the answers not yet sent are dropped, the
// connection closed and the error returned (the client sends again what
// was not acknowledged).
func (c *conn) storePublishes() error {
	b := &c.pubs
	if len(b.msgs) == 0 {
		return nil
	}
	defer b.reset()
	s := c.s
	stored, err := s.e.StoreBatch(c.hookCtx, b.msgs, engine.AnyQueue)
	if err == nil {
		s.msgsIn.Add(int64(len(b.msgs)))
		return nil
	}
	for i, m := range b.msgs {
		if !stored && len(b.msgs) > 1 {
			_, err = s.e.Send(c.hookCtx, m)
		}
		if err == nil {
			s.msgsIn.Add(1)
			continue
		}
		err = fmt.Errorf("mqtt: publish to %s: %w", m.Property(mapping.PropOriginTopic), err)
		if c.version != packet.Version5 {
			s.log.Debug("mqtt: publish failed; closing", "client", c.ss.id, "err", err)
			clear(c.racks)
			c.racks = c.racks[:0]
			c.nc.Close()
			return err
		}
		if a := b.acks[i]; a != nil {
			a.ReasonCode = publishCode(err)
			if c.problemInfo {
				a.Properties.ReasonString = err.Error()
			}
		}
	}
	return nil
}
