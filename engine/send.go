package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// AnyQueue lets the engine choose the queue of a batch.
const AnyQueue int32 = -1

// SendResult says where a message was stored.
type SendResult struct {
	MsgID           string // client message id (UNIQ_KEY), generated when the producer gave none
	QueueID         int32
	QueueOffset     int64
	CommitLogOffset int64
	StoreTimestamp  int64 // ms since the epoch
	StoreHost       netip.AddrPort
}

// OffsetMsgID returns the message's offset id: its store host and
// commit-log offset, hex-encoded as RocketMQ does.
func (r SendResult) OffsetMsgID() string { return message.OffsetID(r.StoreHost, r.CommitLogOffset) }

// sendState is the per-call scratch of a send, pooled so that the append
// path does not allocate. It stamps records under the commit log's append
// lock.
type sendState struct {
	buf   []byte
	recs  [][]byte
	offs  []int64
	ids   []sentID
	q     *queueState // where the records are stored
	qid   int32       // the queue the sender asked for (differs for scheduled messages)
	first int64       // queue offset of the first record
	now   int64       // store time, ms

	// queues, when not empty, holds the queue of each record instead of
	// q: a batch of copies moved to their queues (see appendMoved).
	queues []*queueState
	// read holds a record read back from the log.
	read []byte
}

// Stamp assigns each record its queue offset, commit-log offset and store
// time. It runs under the commit log's append lock, which orders it with
// every other append to the queue.
func (s *sendState) Stamp(i int, rec []byte, offset int64) {
	q := s.q
	if len(s.queues) > 0 {
		q = s.queues[i]
	}
	if i == 0 {
		s.now = time.Now().UnixMilli()
		s.first = q.next
	}
	message.PatchStored(rec, q.next, offset, s.now)
	q.next++
}

func (s *sendState) reset() {
	s.buf = s.buf[:0]
	s.recs = s.recs[:0]
	s.offs = s.offs[:0]
	clear(s.ids)
	s.ids = s.ids[:0]
	s.q = nil
	clear(s.queues)
	s.queues = s.queues[:0]
}

// Send stores m in a queue of its topic chosen by the engine: by the hash of
// the message group (__SHARDINGKEY) when it has one, else round-robin. m is
// not modified; a client message id is generated when it has none.
//
// On a replica it fails with ErrNotMaster. With Options.Replicator (sync
// replication) it refuses with ErrInSyncReplicasNotEnough before storing,
// and waits for the replicas after: a valid result with an error
// matching ErrReplicaTimeout means stored here but not confirmed by
// enough replicas.
func (e *Engine) Send(ctx context.Context, m *message.Message) (SendResult, error) {
	return e.SendToQueue(ctx, m, AnyQueue)
}

// SendToQueue stores m in queue queueID of its topic (AnyQueue lets the
// engine choose).
func (e *Engine) SendToQueue(ctx context.Context, m *message.Message, queueID int32) (res SendResult, err error) {
	if e.opts.SendLatency != nil {
		defer e.sendLatency(m.Topic, time.Now(), &err)
	}
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	msgs := [1]*message.Message{m}
	if err := e.append(ctx, s, msgs[:], queueID); err != nil {
		return SendResult{}, err
	}
	e.messageSizes(msgs[:])
	return s.result(0, e.opts.StoreHost), e.replicated(ctx, s)
}

// messageSizes reports stored messages to Options.MessageSize.
func (e *Engine) messageSizes(msgs []*message.Message) {
	if e.opts.MessageSize == nil {
		return
	}
	for _, m := range msgs {
		e.opts.MessageSize(m.Topic, len(m.Body))
	}
}

// sendLatency reports a send that began at start to Options.SendLatency.
func (e *Engine) sendLatency(topic string, start time.Time, err *error) {
	e.opts.SendLatency(topic, time.Since(start), *err)
}

// SendBatch stores msgs, which must share one topic, contiguously in one
// queue (queueID, or one the engine chooses for AnyQueue) as a single
// append: all of them are stored or none.
func (e *Engine) SendBatch(ctx context.Context, msgs []*message.Message, queueID int32) (res []SendResult, err error) {
	err = e.sendBatch(ctx, msgs, queueID, func(s *sendState) {
		res = make([]SendResult, len(msgs))
		for i := range res {
			res[i] = s.result(i, e.opts.StoreHost)
		}
	})
	return res, err
}

// StoreBatch is SendBatch for a sender that needs no results (ids,
// offsets): stored reports whether msgs are in the log, which they can be
// with an error (one matching ErrReplicaTimeout), as SendBatch's results
// can.
func (e *Engine) StoreBatch(ctx context.Context, msgs []*message.Message, queueID int32) (stored bool, err error) {
	err = e.sendBatch(ctx, msgs, queueID, func(*sendState) { stored = true })
	return stored, err
}

// sendBatch is SendBatch; appended is called once msgs are in the log,
// before the wait for replicas.
func (e *Engine) sendBatch(ctx context.Context, msgs []*message.Message, queueID int32, appended func(*sendState)) (err error) {
	if len(msgs) == 0 {
		return fmt.Errorf("%w: empty batch", ErrInvalidArgument)
	}
	if e.opts.SendLatency != nil {
		defer e.sendLatency(msgs[0].Topic, time.Now(), &err)
	}
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	if err := e.append(ctx, s, msgs, queueID); err != nil {
		return err
	}
	e.messageSizes(msgs)
	appended(s)
	return e.replicated(ctx, s)
}

func (e *Engine) put(s *sendState) {
	if cap(s.buf) > 8<<20 || cap(s.read) > 8<<20 {
		return // do not keep buffers of outsized batches
	}
	s.reset()
	e.bufs.Put(s)
}

func (s *sendState) result(i int, host netip.AddrPort) SendResult {
	return SendResult{
		MsgID:           s.id(i),
		QueueID:         s.qid,
		QueueOffset:     s.first + int64(i),
		CommitLogOffset: s.offs[i],
		StoreTimestamp:  s.now,
		StoreHost:       host,
	}
}

// append validates msgs, encodes them into s and appends them to the log:
// to their queue, or to the timer topic when they are scheduled.
func (e *Engine) append(ctx context.Context, s *sendState, msgs []*message.Message, queueID int32) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if err := e.refuseSend(); err != nil {
		return err
	}
	if e.Role() != RoleMaster {
		return fmt.Errorf("%w: this broker is a replica, send to the master", ErrNotMaster)
	}
	if r := e.opts.Replicator; r != nil {
		if err := r.CheckWrite(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(e.hooks.Store) > 0 {
		var err error
		if msgs, err = e.beforeStore(ctx, msgs, queueID); err != nil {
			return err
		}
	}
	topic := msgs[0].Topic
	t, err := e.sendTopic(topic)
	if err != nil {
		return err
	}
	msgs = decodeActedOn(msgs)
	q, err := e.writeQueue(t, msgs[0], queueID)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Topic != topic {
			return fmt.Errorf("%w: %s and %s", ErrBatchMixedTargets, topic, m.Topic)
		}
		if err := e.validate(m); err != nil {
			return err
		}
	}
	msgs = withoutRetiringProperties(msgs)
	due, err := e.dueTime(msgs)
	if err != nil {
		return err
	}
	half := msgs[0].IsTransactionPrepared() || message.TransactionType(msgs[0].SysFlag) == message.SysFlagTransactionPrepared
	if err := e.checkMessageType(t, msgs, due, half); err != nil {
		return err
	}
	switch {
	case half:
		return e.storeHalf(s, t, q, msgs[0])
	case due > 0:
		return e.schedule(s, t, q, msgs[0], due)
	}
	return e.store(s, t, q, msgs, "", nil)
}

// decodeActedOn returns msgs, or copies in which the encoded properties of
// the messages that need it are decoded into Properties: those that carry
// a property the engine acts on, and those that are not written as
// AppendStored stores them. The others keep their encoded properties,
// which are stored as they are; everything that reads their Properties
// (nil) finds none of the properties it looks for, as it should. The
// messages are not modified.
func decodeActedOn(msgs []*message.Message) []*message.Message {
	var out []*message.Message
	for i, m := range msgs {
		if m.Properties != nil || m.EncodedProperties == nil || storableAsIs(m.EncodedProperties) {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		mm := *m
		mm.LoadProperties()
		out[i] = &mm
	}
	if out == nil {
		return msgs
	}
	return out
}

// storableAsIs reports whether the encoded properties b can be stored as
// they are: they are well formed and name none of the properties a send
// acts on (scheduling, transactions, message groups, light queues and
// the engine's own markers).
func storableAsIs(b []byte) bool {
	if message.CheckEncodedProperties(b) != nil {
		return false
	}
	for len(b) > 0 {
		name, _, rest, _ := message.NextProperty(b)
		switch string(name) {
		case message.PropertyDelayLevel, message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec,
			message.PropertyTimerDelayMS, message.PropertyTransactionPrepared, message.PropertyShardingKey,
			message.PropertyInnerMultiDispatch, propertyTimerSource, propertyTransactionSource:
			return false
		}
		b = rest
	}
	return true
}

// withoutRetiringProperties returns msgs, or copies of the messages that
// carry TIMER_SRC or TRAN_SRC without them. The engine's own records use
// those properties to retire a timer entry or a half message; a message a
// client sends (one it received and sends again, say) would otherwise
// retire entries it has nothing to do with, and a delayed one would never
// be scheduled. The messages are not modified.
func withoutRetiringProperties(msgs []*message.Message) []*message.Message {
	var out []*message.Message
	for i, m := range msgs {
		_, timer := m.Properties[propertyTimerSource]
		_, txn := m.Properties[propertyTransactionSource]
		if !timer && !txn {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		mm := *m
		mm.Properties = maps.Clone(m.Properties)
		delete(mm.Properties, propertyTimerSource)
		delete(mm.Properties, propertyTransactionSource)
		out[i] = &mm
	}
	if out == nil {
		return msgs
	}
	return out
}

// checkMessageType refuses messages whose type the topic does not take.
func (e *Engine) checkMessageType(t *topicState, msgs []*message.Message, due int64, half bool) error {
	kind := meta.MessageTypeNormal
	switch {
	case half:
		if len(msgs) > 1 {
			return fmt.Errorf("%w: a batch cannot carry transactional messages", ErrInvalidMessage)
		}
		kind = meta.MessageTypeTransaction
	case due > 0 || hasScheduleProperty(msgs[0]):
		kind = meta.MessageTypeDelay
	case msgs[0].Properties[message.PropertyShardingKey] != "":
		kind = meta.MessageTypeFIFO
	}
	cfg := t.cfg.Load()
	if e.opts.DisableMessageTypeCheck || cfg.MessageType.Accepts(kind) {
		return nil
	}
	return fmt.Errorf("%w: topic %s takes %s messages, this one is %s", ErrMessageTypeMismatch, cfg.Name, cfg.MessageType, kind)
}

func hasScheduleProperty(m *message.Message) bool {
	for _, k := range [...]string{message.PropertyDelayLevel, message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		if _, ok := m.Properties[k]; ok {
			return true
		}
	}
	return false
}

// store encodes msgs into queue q and appends them as one batch. A
// non-empty topic overrides the messages' topic in the records; extra
// holds key, value pairs of properties added to every record. t (may be
// nil) counts the messages.
func (e *Engine) store(s *sendState, t *topicState, q *queueState, msgs []*message.Message, topic string, extra []string) error {
	s.q = q
	if topic == "" {
		s.qid = q.id
	}
	bodyBytes := 0
	for _, m := range msgs {
		if err := s.encode(e, m, topic, extra); err != nil {
			return err
		}
		bodyBytes += len(m.Body)
	}
	s.split()
	if err := e.appendLog(s); err != nil {
		return fmt.Errorf("engine: append to %s: %w", q.topic, err)
	}
	if t != nil {
		t.msgsIn.Add(int64(len(msgs)))
		t.bytesIn.Add(int64(bodyBytes))
	}
	return nil
}

// addMoved adds to s a copy of the stored record rec, changed as rw says,
// for queue q: a stored message moving to another queue (a scheduled
// message falling due, a committed transaction) without being decoded.
// appendMoved stores what was added.
func (s *sendState) addMoved(rec []byte, q *queueState, rw *message.Rewrite) error {
	start := len(s.buf)
	var err error
	if s.buf, err = message.AppendRewritten(s.buf, rec, rw); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	s.offs = append(s.offs, int64(start)) // record start in buf until split
	s.queues = append(s.queues, q)
	return nil
}

// appendMoved appends the copies added to s by addMoved as one batch; their
// commit-log offsets are in s.offs afterwards.
func (e *Engine) appendMoved(s *sendState) error {
	if len(s.offs) == 0 {
		return nil
	}
	s.split()
	if err := e.appendLog(s); err != nil {
		return fmt.Errorf("engine: append: %w", err)
	}
	return nil
}

// appendLog appends the records of s to the log, reports the latency when
// Options.AppendLatency asks for it, and wakes the dispatcher.
func (e *Engine) appendLog(s *sendState) error {
	var start time.Time
	if e.opts.AppendLatency != nil {
		start = time.Now()
	}
	if err := e.refuseWrite(); err != nil {
		return err
	}
	e.repl.mu.RLock()
	err := e.checkMaster()
	if err == nil {
		err = e.log.Append(s.recs, s, s.offs)
	}
	e.repl.mu.RUnlock()
	if err != nil {
		return e.diskError(err)
	}
	e.appended.Broadcast()
	if e.opts.AppendLatency != nil {
		e.opts.AppendLatency(time.Since(start))
	}
	if !e.WaitsForReplicas() {
		e.disp.notify()
	} else if end := e.log.EndOffset(); e.opts.Replicator.Confirmed(end) >= end {
		// A master that waits for replicas indexes only what they
		// confirmed: ReplicasAcked, not the append, moves that, unless
		// the replicas already hold all of it.
		e.disp.notify()
	}
	return nil
}

// sendTopic resolves the topic of a send and checks it accepts writes.
func (e *Engine) sendTopic(name string) (*topicState, error) {
	if err := message.ValidateTopic(name); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTopic, err)
	}
	if message.IsSendForbiddenTopic(name) {
		return nil, fmt.Errorf("%w: %s is a system topic and cannot be sent to", ErrReservedName, name)
	}
	if IsLightQueue(name) {
		return nil, fmt.Errorf("%w: %s is a light queue; send to a topic and name the light queue in the %s property", ErrReservedName, name, message.PropertyInnerMultiDispatch)
	}
	t, err := e.ensureTopic(name)
	if err != nil {
		return nil, err
	}
	if !t.cfg.Load().Perm.Writable() {
		return nil, fmt.Errorf("%w: topic %s is not writable", ErrNoPermission, name)
	}
	return t, nil
}

var shardSeed = maphash.MakeSeed()

// writeQueue picks the queue a send goes to.
func (e *Engine) writeQueue(t *topicState, m *message.Message, queueID int32) (*queueState, error) {
	cfg := t.cfg.Load()
	qs := *t.queues.Load()
	n := min(cfg.WriteQueues, int32(len(qs)))
	if queueID == AnyQueue {
		if key := m.Properties[message.PropertyShardingKey]; key != "" {
			queueID = int32(maphash.String(shardSeed, key) % uint64(n))
		} else {
			queueID = int32(t.next.Add(1) % uint32(n))
		}
	}
	if queueID < 0 || queueID >= n {
		return nil, fmt.Errorf("%w: topic %s has %d write queues, not %d", ErrInvalidQueue, cfg.Name, n, queueID)
	}
	return qs[queueID], nil
}

// validate checks one message before it is encoded.
func (e *Engine) validate(m *message.Message) error {
	switch {
	case len(m.Body) == 0:
		return fmt.Errorf("%w: topic %s", ErrEmptyBody, m.Topic)
	case len(m.Body) > e.opts.MaxMessageSize:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrMessageTooLarge, len(m.Body), e.opts.MaxMessageSize)
	}
	if err := message.ValidateProperties(m.Properties); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if lmq := m.Properties[message.PropertyInnerMultiDispatch]; lmq != "" {
		for name := range strings.SplitSeq(lmq, ",") {
			if !IsLightQueue(name) {
				return fmt.Errorf("%w: %s names %q, which is not a light queue (%s...)", ErrInvalidMessage, message.PropertyInnerMultiDispatch, name, LightQueuePrefix)
			}
			if err := message.ValidateTopic(name); err != nil {
				return fmt.Errorf("%w: light queue: %w", ErrInvalidMessage, err)
			}
		}
	}
	return nil
}

// encode appends m's stored record to s.buf, adding a client message id
// when m has none, and the extra properties.
func (s *sendState) encode(e *Engine, m *message.Message, topic string, extra []string) error {
	mm := *m
	mm.StoreHost = e.opts.StoreHost
	mm.QueueID = s.q.id
	if topic != "" {
		mm.Topic = topic
	}
	if mm.BornTimestamp == 0 {
		mm.BornTimestamp = time.Now().UnixMilli()
	}
	start := len(s.buf)
	var err error
	if s.buf, err = message.AppendStored(s.buf, &mm); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	id := sentID{given: m.UniqKey()}
	var generated []byte
	if id.given == "" {
		// Made into the record: a string of it only for a result asked for.
		var idBuf [64]byte
		generated = e.ids.AppendNext(idBuf[:0])
	}
	if len(generated) > 0 || len(extra) > 0 {
		var at int
		if s.buf, at, err = appendProperties(s.buf, start, generated, extra); err != nil {
			return err
		}
		id.at, id.n = int32(at), int32(len(generated))
	}
	s.ids = append(s.ids, id)
	s.offs = append(s.offs, int64(start)) // record start in buf until split
	return nil
}

// split turns the record start positions kept in s.offs into s.recs.
func (s *sendState) split() {
	for i, start := range s.offs {
		end := len(s.buf)
		if i+1 < len(s.offs) {
			end = int(s.offs[i+1])
		}
		s.recs = append(s.recs, s.buf[start:end])
	}
}

// sentID is the message id of a record of a send: the one the message
// carried, or else the generated one at s.buf[at:at+n].
type sentID struct {
	given string
	at, n int32
}

// id returns the message id of the send's record i.
func (s *sendState) id(i int) string {
	if id := s.ids[i]; id.given != "" || id.n == 0 {
		return id.given
	}
	id := s.ids[i]
	return string(s.buf[id.at : id.at+id.n])
}

// appendProperties adds to the properties of the record that starts at
// buf[start:] and is the last one in buf a generated message id (when
// uniq is not empty; at is where its value lies in buf) and the name,
// value pairs of each of pairs. Properties are the last field of a stored
// record, so they are appended and the two lengths fixed.
func appendProperties(buf []byte, start int, uniq []byte, pairs ...[]string) (_ []byte, at int, _ error) {
	rec := buf[start:]
	h, err := message.PeekStored(rec)
	if err != nil {
		return buf, 0, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	lenAt := start + len(rec) - len(h.Properties) - 2
	if len(uniq) > 0 {
		buf = append(buf, message.PropertyUniqKey...)
		buf = append(buf, 1)
		at = len(buf)
		buf = append(buf, uniq...)
		buf = append(buf, 2)
	}
	for _, kv := range pairs {
		for i := 0; i+1 < len(kv); i += 2 {
			buf = append(buf, kv[i]...)
			buf = append(buf, 1)
			buf = append(buf, kv[i+1]...)
			buf = append(buf, 2)
		}
	}
	propsLen := len(buf) - lenAt - 2
	if propsLen > math.MaxInt16 {
		return buf[:start+len(rec)], 0, fmt.Errorf("%w: properties longer than %d bytes", ErrInvalidMessage, math.MaxInt16)
	}
	binary.BigEndian.PutUint16(buf[lenAt:], uint16(propsLen))
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start))
	return buf, at, nil
}
