package engine

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
)

// DeliveryKind says what a Delivery record is: a delivery to a consumer
// or what became of one.
type DeliveryKind uint8

const (
	// DeliveryPull: a pull handed the messages From..To of a queue to a
	// consumer.
	DeliveryPull DeliveryKind = iota + 1
	// DeliveryPop: a pop handed the message at From to a consumer, as its
	// delivery Attempt.
	DeliveryPop
	// DeliveryCommit: the group's committed offset in the queue moved to
	// To; the messages below it count as consumed.
	DeliveryCommit
	// DeliveryAck: the consumer acknowledged the popped message at From.
	DeliveryAck
	// DeliveryInvisible: the popped message at From becomes visible
	// again after Delay (a consumer's negative acknowledgement, or one
	// asking for more time).
	DeliveryInvisible
	// DeliveryRetry: the consumer sent the message back; redelivery
	// Attempt follows from the group's retry topic after Delay.
	DeliveryRetry
	// DeliveryDeadLetter: the message went to the group's dead-letter
	// topic after Attempt deliveries.
	DeliveryDeadLetter
)

var deliveryKinds = [...]string{"", "pull", "pop", "commit", "ack", "invisible", "retry", "dead-letter"}

// String returns the kind's name: pull, pop, commit, ack, invisible,
// retry or dead-letter.
func (k DeliveryKind) String() string {
	if int(k) < len(deliveryKinds) {
		return deliveryKinds[k]
	}
	return "unknown"
}

// Delivery is one record of a consumer group's delivery history (see
// Engine.Deliveries).
type Delivery struct {
	// At is when it happened, in ms since the epoch.
	At   int64
	Kind DeliveryKind
	// Topic and Queue are the queue read (a retry topic for redeliveries
	// of sent-back messages) or, for a retry or dead letter, the queue of
	// the message the consumer gave up on.
	Topic string
	Queue int32
	// From and To are queue offsets: the first and last message of a
	// pull, the message of a pop, ack, invisible, retry or dead letter
	// (From == To), the new committed offset of a commit (To).
	From, To int64
	// ID is the message's id (its client id, or for a copy in a retry or
	// dead-letter topic the id of the message it copies) when the record
	// is about one message of a retry topic, or a retry or dead letter;
	// "" for records of a range of an ordinary queue.
	ID string
	// Attempt is a pop's delivery attempt, the redelivery a retry
	// schedules or the deliveries a dead letter followed; 0 when unknown.
	Attempt int32
	// Delay is when a retried or invisible message is redelivered.
	Delay time.Duration
	// Protocol, Client and Addr name the consumer, as far as its front-end
	// told (hook.Client).
	Protocol, Client string
	Addr             netip.AddrPort
}

// Bounds of the delivery history: it is kept in memory, per group, the
// latest deliveryRing records of each of at most deliveryGroups groups,
// and deliveryRecords records in all (about 40 MB): a group whose ring
// finds them taken keeps the records it has, the latest first.
const (
	deliveryRing    = 1024
	deliveryGroups  = 4096
	deliveryRecords = 256 * deliveryRing
)

// deliveries is the engine's delivery history: a ring of records per
// consumer group, in memory, saved to a file at close and every
// deliverySaveInterval while it changes, and read back at open (see
// deliveries_persist.go).
// Recording takes the group's mutex for a copy of one record.
type deliveries struct {
	groups  sync.Map // group → *groupDeliveries
	count   atomic.Int32
	dropped atomic.Int64 // records of groups past deliveryGroups or deliveryRecords
	slots   atomic.Int64 // records taken by the rings
	// limit, when set (by tests), replaces deliveryRecords.
	limit int64
	// opened is when the engine opened: records are timed by the
	// monotonic clock from then, which costs a third of a wall-clock
	// reading.
	opened time.Time
}

// now is the time of a record, in ms since the epoch.
func (d *deliveries) now() int64 {
	if d.opened.IsZero() {
		return time.Now().UnixMilli()
	}
	return d.opened.UnixMilli() + time.Since(d.opened).Milliseconds()
}

type groupDeliveries struct {
	d    *deliveries
	mu   sync.Mutex
	recs []Delivery // grows to deliveryRing (or while slots last), then wraps at next
	next int
	full bool // recs grows no more
	// dirty: a record came in since the history was last saved.
	dirty bool
	// commits is the last committed offset recorded per queue, so that a
	// commit that moves nothing is not recorded again.
	commits map[queueRef]int64
}

type queueRef struct {
	topic string
	queue int32
}

// ring returns group's ring, made on first use; nil for no group, or
// past deliveryGroups groups.
func (d *deliveries) ring(group string) *groupDeliveries {
	if group == "" {
		return nil
	}
	if v, ok := d.groups.Load(group); ok {
		return v.(*groupDeliveries)
	}
	if d.count.Load() >= deliveryGroups {
		d.dropped.Add(1)
		return nil
	}
	v, loaded := d.groups.LoadOrStore(group, &groupDeliveries{d: d})
	if !loaded {
		d.count.Add(1)
	}
	return v.(*groupDeliveries)
}

// add records r for group; r.At is set when zero.
func (d *deliveries) add(group string, r Delivery) {
	if group == "" {
		return
	}
	g := d.ring(group)
	if g == nil {
		return
	}
	if r.At == 0 {
		r.At = d.now()
	}
	g.mu.Lock()
	if r.Kind == DeliveryCommit {
		ref := queueRef{r.Topic, r.Queue}
		if last, ok := g.commits[ref]; ok && last == r.To {
			g.mu.Unlock()
			return
		}
		if g.commits == nil {
			g.commits = map[queueRef]int64{}
		}
		g.commits[ref] = r.To
	}
	g.put(r)
	g.mu.Unlock()
}

// put appends r, overwriting the oldest record once the ring is full. The
// caller holds g.mu.
func (g *groupDeliveries) put(r Delivery) {
	g.dirty = true
	if !g.full {
		limit := g.d.limit
		if limit == 0 {
			limit = deliveryRecords
		}
		if len(g.recs) < deliveryRing && g.d.slots.Add(1) <= limit {
			g.recs = append(g.recs, r)
			return
		}
		if len(g.recs) < deliveryRing {
			g.d.slots.Add(-1) // not taken
		}
		g.full = true
	}
	if len(g.recs) == 0 {
		g.d.dropped.Add(1)
		return
	}
	g.recs[g.next] = r
	g.next = (g.next + 1) % len(g.recs)
}

// all returns a copy of the group's records, oldest first.
func (d *deliveries) all(group string) []Delivery {
	v, ok := d.groups.Load(group)
	if !ok {
		return nil
	}
	g := v.(*groupDeliveries)
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Delivery, 0, len(g.recs))
	out = append(out, g.recs[g.next:]...)
	return append(out, g.recs[:g.next]...)
}

// clientOf fills the consumer fields of r from the client ctx carries.
func clientOf(ctx context.Context, r *Delivery) {
	if c, ok := hook.FromContext(ctx); ok {
		r.Protocol, r.Client, r.Addr = c.Protocol, c.ID, c.Addr
	}
}

// historyID is the id a message's records are kept under: its client id,
// or, for a copy without one (a retry or dead letter of a message that
// had none), the id of the message it copies, or its offset id.
func historyID(m *message.Message) string {
	if id := m.UniqKey(); id != "" {
		return id
	}
	if id := m.Property(message.PropertyOriginMessageID); id != "" {
		return id
	}
	return m.ID()
}

// recordHistoryID is historyID of a stored record, read in place; "" when
// the record cannot be read.
func recordHistoryID(rec []byte) string {
	h, err := message.PeekStored(rec)
	if err != nil {
		return ""
	}
	if id, ok := h.Property(message.PropertyUniqKey); ok && len(id) > 0 {
		return string(id)
	}
	if id, ok := h.Property(message.PropertyOriginMessageID); ok && len(id) > 0 {
		return string(id)
	}
	return message.OffsetID(h.StoreHost, h.CommitLogOffset)
}

// recordQueueOffset reads the queue offset of a stored record in place.
func recordQueueOffset(rec []byte) int64 {
	off, ok := message.StoredQueueOffset(rec)
	if !ok {
		return -1
	}
	return off
}

// recordPull records a pull of group that returned recs from (topic,
// queueID): one record for the range, or one per message when a filter
// left some of the range out, or, from a retry topic, one per message
// with its id, so that the history of a sent-back message finds its
// redeliveries.
func (e *Engine) recordPull(ctx context.Context, group, topic string, queueID int32, recs [][]byte) {
	if group == "" || len(recs) == 0 {
		return
	}
	r := Delivery{Kind: DeliveryPull, Topic: topic, Queue: queueID, At: e.history.now()}
	clientOf(ctx, &r)
	if message.IsRetryTopic(topic) {
		for _, rec := range recs {
			r.From = recordQueueOffset(rec)
			r.To, r.ID = r.From, recordHistoryID(rec)
			e.history.add(group, r)
		}
		return
	}
	r.From, r.To = recordQueueOffset(recs[0]), recordQueueOffset(recs[len(recs)-1])
	if r.To-r.From+1 == int64(len(recs)) {
		e.history.add(group, r)
		return
	}
	// A filter left messages out of the range: one record each for
	// those delivered, so that none left out looks delivered.
	g := e.history.ring(group)
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rec := range recs {
		r.From = recordQueueOffset(rec)
		r.To = r.From
		g.put(r)
	}
}

// recordPops records the messages a pop of group handed out, under one
// lock.
func (e *Engine) recordPops(ctx context.Context, group, topic string, popped []PoppedMessage) {
	g := e.history.ring(group)
	if g == nil || len(popped) == 0 {
		return
	}
	r := Delivery{Kind: DeliveryPop, Topic: topic, At: e.history.now()}
	clientOf(ctx, &r)
	retry := message.IsRetryTopic(topic)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range popped {
		r.Queue, r.From, r.To, r.Attempt = p.Queue, p.Offset, p.Offset, p.Attempt
		if retry {
			r.ID = recordHistoryID(p.Record)
		}
		g.put(r)
	}
}

// recordAcks records the acknowledgements of the messages at offs of
// (topic, queue) by a consumer of group, under one lock.
func (e *Engine) recordAcks(ctx context.Context, group, topic string, queue int32, offs []int64) {
	g := e.history.ring(group)
	if g == nil || len(offs) == 0 {
		return
	}
	r := Delivery{Kind: DeliveryAck, Topic: topic, Queue: queue, At: e.history.now()}
	clientOf(ctx, &r)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, off := range offs {
		r.From, r.To = off, off
		g.put(r)
	}
}

// Deliveries returns the delivery history group's records keep of m (a
// message of an ordinary topic, as stored there), oldest first: the pulls
// and pops that handed it or its retry copies out, the commits that
// passed it (the first per queue), its acknowledgements, invisibility
// changes, retries and dead letter. The history keeps the latest 1,024
// records of each group: older deliveries are not found. It survives a
// restart: saved when the engine closes and every 30 seconds while it
// changes, so a crash loses at most the last 30 seconds of it.
func (e *Engine) Deliveries(group string, m *message.Message) []Delivery {
	id := historyID(m)
	all := e.history.all(group)
	// Where the message was read: its own queue, and the retry copies
	// delivered from the retry topic.
	type place struct {
		queueRef
		off int64
	}
	at := []place{{queueRef{m.Topic, m.QueueID}, m.QueueOffset}}
	for _, r := range all {
		p := place{queueRef{r.Topic, r.Queue}, r.From}
		if r.ID == id && (r.Kind == DeliveryPull || r.Kind == DeliveryPop) && !slices.Contains(at, p) {
			at = append(at, p)
		}
	}
	committed := make([]bool, len(at))
	var out []Delivery
	for _, r := range all {
		if r.ID != "" {
			if r.ID == id {
				out = append(out, r)
			}
			continue
		}
		for i, p := range at {
			if r.Topic != p.topic || r.Queue != p.queue {
				continue
			}
			switch {
			case r.Kind == DeliveryCommit:
				if !committed[i] && r.To > p.off {
					committed[i] = true
					out = append(out, r)
				}
			case r.From <= p.off && p.off <= r.To:
				out = append(out, r)
			}
		}
	}
	return out
}
