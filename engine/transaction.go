package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine/commitlog"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/engine/txn"
)

// Transactional messages.
//
// A message marked TRAN_MSG=true is a half message: it is stored under
// RMQ_SYS_TRANS_HALF_TOPIC with its real topic and queue in REAL_TOPIC and
// REAL_QID, invisible to consumers. EndTransaction commits it (a copy
// becomes visible in its real queue, with its message id and properties)
// or rolls it back. A half message left undecided is checked: the engine
// asks a live producer of its producer group, through the front-end that
// producer is connected to (see SetTransactionChecker), first after
// TransactionTimeout (or the message's CHECK_IMMUNITY_TIME_IN_SECONDS),
// then every TransactionCheckInterval, at most TransactionCheckMax times;
// after that it is discarded and recorded under TRANS_CHECK_MAX_TIME_TOPIC,
// where admin tools can read it.
//
// Every decision is a record in the commit log carrying TRAN_SRC (the half
// message's commit-log offset), which retires the half message when the
// dispatcher indexes it; a decision is therefore durable as soon as it is
// acknowledged, and a half message is never resolved twice. A decision does
// not wait for the half message to be indexed: until it is, no decision on
// it can be indexed either, and one already appended holds a claim in
// txnChecks. The committed copy is the stored half message rewritten in
// place of a decode and re-encode (message.AppendRewritten). The dispatcher
// writes the index entries of a half message decided within its own index
// batch not at all (see deferHalf).

// Errors of EndTransaction.
var (
	ErrTransactionNotFound = errors.New("engine: no pending half message")
	ErrTransactionResolved = errors.New("engine: transaction already resolved")
	ErrTransactionGroup    = errors.New("engine: half message belongs to another producer group")
)

// propertyTransactionSource names, in a record that resolves a half message,
// the half message's commit-log offset.
const propertyTransactionSource = "TRAN_SRC"

// Decision is a producer's verdict on a transaction.
type Decision int

// Decisions.
const (
	Unknown  Decision = iota // no decision yet: keep checking
	Commit                   // make the message visible
	Rollback                 // discard it
)

func (d Decision) String() string {
	return [...]string{"UNKNOWN", "COMMIT", "ROLLBACK"}[d]
}

// EndTransactionRequest names a half message and its decision. The half
// message is found by CommitLogOffset when it is positive, else by MsgID.
type EndTransactionRequest struct {
	ProducerGroup   string
	CommitLogOffset int64
	MsgID           string
	// QueueOffset, when not negative, must match the half message's offset
	// in the half topic (remoting's tranStateTableOffset).
	QueueOffset int64
	Decision    Decision
	FromCheck   bool
}

// HalfMessage is a half message handed to a TransactionChecker.
type HalfMessage struct {
	// Record is the stored record with its real topic and queue restored.
	Record          []byte
	CommitLogOffset int64
	QueueOffset     int64 // in the half topic
	MsgID           string
	TransactionID   string
	ProducerGroup   string
	Topic           string
}

// TransactionChecker asks producer (a client of the checker's protocol,
// connected to its front-end) to resolve half; the answer comes back later
// through EndTransaction. It should not wait for the answer.
type TransactionChecker func(ctx context.Context, producer registry.ClientInfo, half HalfMessage) error

type checkers struct {
	byProtocol atomic.Pointer[map[string]TransactionChecker]
}

// HalfMessages returns how many transactional half messages wait for
// their producer's decision (as far as the index has caught up with the
// log), counting up to limit.
func (e *Engine) HalfMessages(limit int) (int, error) {
	if err := e.checkOpen(); err != nil {
		return 0, err
	}
	return e.halves.Count(limit)
}

// SetTransactionChecker registers how to reach producers connected through
// protocol (the registry's Heartbeat.Protocol) for transaction checks.
func (e *Engine) SetTransactionChecker(protocol string, fn TransactionChecker) {
	for {
		old := e.checkers.byProtocol.Load()
		m := map[string]TransactionChecker{}
		if old != nil {
			for k, v := range *old {
				m[k] = v
			}
		}
		m[protocol] = fn
		if e.checkers.byProtocol.CompareAndSwap(old, &m) {
			return
		}
	}
}

// storeHalf stores m as a half message for queue q of t.
func (e *Engine) storeHalf(s *sendState, t *topicState, q *queueState, m *message.Message) error {
	if m.Properties[message.PropertyProducerGroup] == "" {
		return fmt.Errorf("%w: a transactional message needs its producer group in %s", ErrInvalidMessage, message.PropertyProducerGroup)
	}
	hq, err := e.systemQueue(message.TopicTransHalf)
	if err != nil {
		return err
	}
	extra := [...]string{
		message.PropertyRealTopic, q.topic,
		message.PropertyRealQueueID, strconv.Itoa(int(q.id)),
	}
	s.qid = q.id
	msgs := [1]*message.Message{m}
	return e.store(s, t, hq, msgs[:], message.TopicTransHalf, extra[:])
}

// EndTransaction commits or rolls back a half message. Unknown keeps it
// pending (it will be checked).
func (e *Engine) EndTransaction(ctx context.Context, r EndTransactionRequest) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if r.CommitLogOffset <= 0 && r.MsgID != "" {
		if err := e.WaitDispatched(ctx); err != nil {
			return err
		}
		off, ok, err := e.keys.ByID(r.MsgID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: no message %s", ErrTransactionNotFound, r.MsgID)
		}
		r.CommitLogOffset = off
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	half, err := e.readHalf(s, r.CommitLogOffset)
	if err != nil {
		return err
	}
	if string(half.group) != r.ProducerGroup && r.ProducerGroup != "" {
		return fmt.Errorf("%w: %s, not %s", ErrTransactionGroup, half.group, r.ProducerGroup)
	}
	if r.QueueOffset >= 0 && r.QueueOffset != half.QueueOffset {
		return fmt.Errorf("%w: half message at %d has queue offset %d, not %d", ErrTransactionNotFound, r.CommitLogOffset, half.QueueOffset, r.QueueOffset)
	}
	if r.Decision == Unknown {
		return nil
	}
	return e.resolve(s, r.CommitLogOffset, &half, r.Decision)
}

// halfRecord is a stored half message read back, with the properties a
// decision needs, found in one pass over them.
type halfRecord struct {
	message.Header
	rec       []byte // the stored record
	group     []byte // PGROUP
	realTopic []byte
	realQueue int  // -1 when REAL_QID is missing or not a number
	scheduled bool // it is a delayed or timer message as well
}

// readHalf reads the pending half message at off into s.read.
func (e *Engine) readHalf(s *sendState, off int64) (halfRecord, error) {
	rec, err := e.log.Read(off, s.read[:0])
	if err != nil {
		return halfRecord{}, fmt.Errorf("%w at commit-log offset %d: %w", ErrTransactionNotFound, off, err)
	}
	s.read = rec
	h, err := message.PeekStored(rec)
	if err != nil || !bytes.Equal(h.Topic, halfTopic) {
		return halfRecord{}, fmt.Errorf("%w at commit-log offset %d", ErrTransactionNotFound, off)
	}
	half := halfRecord{Header: h, rec: rec, realQueue: -1}
	for props := h.Properties; len(props) > 0; {
		var k, v []byte
		var ok bool
		if k, v, props, ok = message.NextProperty(props); !ok {
			continue
		}
		switch string(k) {
		case message.PropertyProducerGroup:
			half.group = v
		case message.PropertyRealTopic:
			half.realTopic = v
		case message.PropertyRealQueueID:
			half.realQueue = -1
			if n, ok := parseInt(v); ok && n <= math.MaxInt32 {
				half.realQueue = int(n)
			}
		case message.PropertyDelayLevel, message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS:
			half.scheduled = true
		}
	}
	return half, nil
}

// resolve appends the record that settles the half message at off.
func (e *Engine) resolve(s *sendState, off int64, half *halfRecord, d Decision) error {
	if !e.txnChecks.BeginResolve(off, e.disp.pos.Load()) {
		return fmt.Errorf("%w: half message at %d", ErrTransactionResolved, off)
	}
	rec := int64(-1)
	defer func() { e.txnChecks.EndResolve(off, rec) }()
	// With the claim held no other decision can start. An earlier one
	// still holds its claim (and BeginResolve refused), or was forgotten
	// once indexed: then the half message, stored before it, is indexed
	// too and no longer pending. So a half message that is not indexed yet
	// needs no look at the index.
	if off < e.disp.pos.Load() {
		pending, err := e.halves.Pending(off)
		if err != nil {
			return err
		}
		if !pending {
			return fmt.Errorf("%w: half message at %d", ErrTransactionResolved, off)
		}
	}
	src := strconv.FormatInt(off, 10)
	var err error
	switch d {
	case Commit:
		err = e.commitHalf(s, half, off, src)
	case Rollback:
		err = e.markHalf(s, message.TopicTransOpHalf, half.rec, src)
	default:
		err = e.markHalf(s, message.TopicTransCheckMaxTime, half.rec, src)
	}
	if err == nil {
		rec = s.offs[0]
		switch d {
		case Commit:
			e.txnCommits.Add(1)
		case Rollback:
			e.txnRollbacks.Add(1)
		}
	}
	return err
}

// commitDrop are the properties a committed copy leaves out.
var commitDrop = []string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTransactionPrepared, propertyTransactionSource}

// commitHalf stores the committed copy of the half message at off in its
// real queue.
func (e *Engine) commitHalf(s *sendState, half *halfRecord, off int64, src string) error {
	t, err := e.topic(string(half.realTopic))
	if err != nil {
		e.opts.Logger.Warn("committed transaction's topic is gone; dropping it", "topic", string(half.realTopic))
		return e.markHalf(s, message.TopicTransOpHalf, half.rec, src)
	}
	qs := *t.queues.Load()
	qid := half.realQueue
	if qid < 0 || qid >= len(qs) {
		qid = int(t.next.Add(1) % uint32(len(qs)))
	}
	if half.scheduled {
		return e.commitScheduled(s, t, qs[qid], half.rec, src)
	}
	add := [...]string{propertyTransactionSource, src}
	q := qs[qid]
	rw := message.Rewrite{Topic: q.topic, QueueID: q.id, Drop: commitDrop, Add: add[:]}
	if err := s.addMoved(half.rec, q, &rw); err != nil {
		return err
	}
	message.SetTransaction(s.buf, message.SysFlagTransactionCommit, off)
	if err := e.appendMoved(s); err != nil {
		return err
	}
	t.msgsIn.Add(1)
	t.bytesIn.Add(int64(len(half.Body)))
	return nil
}

// commitScheduled stores the committed copy of a half message that is also
// a delayed or timer message: it is scheduled, or stored at once when its
// time has come.
func (e *Engine) commitScheduled(s *sendState, t *topicState, q *queueState, half []byte, src string) error {
	m, _, err := message.DecodeStored(half)
	if err != nil {
		return err
	}
	delete(m.Properties, message.PropertyRealTopic)
	delete(m.Properties, message.PropertyRealQueueID)
	delete(m.Properties, message.PropertyTransactionPrepared)
	m.Properties[propertyTransactionSource] = src
	m.SysFlag = message.WithTransactionType(m.SysFlag, message.SysFlagTransactionCommit)
	m.PreparedTransactionOffset = m.CommitLogOffset
	m.Topic = q.topic
	due, err := e.messageDue(m, dueAfter(0))
	if err == nil && due > 0 {
		return e.schedule(s, t, q, m, due)
	}
	msgs := [1]*message.Message{m}
	return e.store(s, t, q, msgs[:], "", nil)
}

// markHalf appends a copy of the stored half message half under topic,
// naming it in TRAN_SRC, which retires it.
func (e *Engine) markHalf(s *sendState, topic string, half []byte, src string) error {
	q, err := e.systemQueue(topic)
	if err != nil {
		return err
	}
	add := [...]string{propertyTransactionSource, src}
	rw := message.Rewrite{Topic: q.topic, QueueID: q.id, Drop: add[:1], Add: add[:]}
	if err := s.addMoved(half, q, &rw); err != nil {
		return err
	}
	return e.appendMoved(s)
}

// transactionLoop checks pending half messages until the engine closes.
func (e *Engine) transactionLoop() {
	defer e.wg.Done()
	t := time.NewTicker(e.opts.TransactionScanInterval)
	defer t.Stop()
	for {
		select {
		case <-e.closing:
			return
		case <-t.C:
			if e.Role() != RoleMaster {
				continue // the master checks; a replica has no producers
			}
			if err := e.checkTransactions(); err != nil && !errors.Is(err, ErrDiskFull) {
				e.opts.Logger.Error("transaction check failed", "err", err)
			}
		}
	}
}

// checkTransactions sends the checks that are due and discards half
// messages that used up their checks.
func (e *Engine) checkTransactions() error {
	var from int64
	for {
		offs, err := e.halves.List(from, 1024, nil)
		if err != nil || len(offs) == 0 {
			return err
		}
		now := time.Now().UnixMilli()
		for _, off := range offs {
			if err := e.checkOne(off, now); err != nil {
				e.opts.Logger.Warn("transaction check", "offset", off, "err", err)
			}
		}
		from = offs[len(offs)-1] + 1
	}
}

func (e *Engine) checkOne(off, now int64) error {
	if e.txnChecks.Resolving(off, e.disp.pos.Load()) {
		// Decided: the index still lists it until the dispatcher takes
		// the decision's record (Options.DispatchDelay).
		return nil
	}
	if st, ok := e.txnChecks.Peek(off); ok && st.Next > now {
		return nil // not due: no need to read it
	}
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	half, herr := e.readHalf(s, off)
	if errors.Is(herr, commitlog.ErrOffsetGone) {
		return e.forgetHalf(s, off)
	}
	st := e.txnChecks.Get(off, func() txn.Check {
		first := now + e.opts.TransactionTimeout.Milliseconds()
		if herr == nil {
			immunity := e.opts.TransactionTimeout.Milliseconds()
			if v, ok := half.Property(message.PropertyCheckImmunitySeconds); ok {
				if n, ok := parseInt(v); ok && n > 0 {
					immunity = n * 1000
				}
			}
			first = half.StoreTimestamp + immunity
		}
		return txn.Check{Next: first}
	})
	if st.Next > now {
		return nil
	}
	if herr != nil {
		return herr
	}
	if st.Count >= e.opts.TransactionCheckMax {
		e.opts.Logger.Warn("discarding a half message that was never resolved", "offset", off, "group", string(half.group), "checks", st.Count)
		err := e.resolve(s, off, &half, Unknown)
		if errors.Is(err, ErrTransactionResolved) {
			return nil
		}
		return err
	}
	e.txnChecks.Set(off, txn.Check{Count: st.Count + 1, Next: now + e.opts.TransactionCheckInterval.Milliseconds()})
	return e.sendCheck(off, &half)
}

// forgetHalf retires the pending half message at off whose record
// retention deleted before anyone decided: nothing is left to check or to
// deliver. It appends a record naming it in TRAN_SRC, as a discard after
// too many checks does, without the message.
func (e *Engine) forgetHalf(s *sendState, off int64) error {
	if !e.txnChecks.BeginResolve(off, e.disp.pos.Load()) {
		return nil // being decided, or decided already
	}
	rec := int64(-1)
	defer func() { e.txnChecks.EndResolve(off, rec) }()
	q, err := e.systemQueue(message.TopicTransCheckMaxTime)
	if err != nil {
		return err
	}
	m := &message.Message{Topic: q.topic, Properties: map[string]string{propertyTransactionSource: strconv.FormatInt(off, 10)}}
	msgs := [1]*message.Message{m}
	if err := e.store(s, nil, q, msgs[:], "", nil); err != nil {
		return err
	}
	rec = s.offs[0]
	e.opts.Logger.Warn("forgot a half message that retention deleted before it was resolved", "offset", off)
	return nil
}

// sendCheck asks a live producer of the group of the half message at off
// to resolve it.
func (e *Engine) sendCheck(off int64, half *halfRecord) error {
	group := string(half.group)
	producers := e.clients.Producers(group)
	m := e.checkers.byProtocol.Load()
	if len(producers) == 0 || m == nil {
		return nil // nobody to ask: the check counts, the next one may find a producer
	}
	p := producers[int(e.checkRound.Add(1))%len(producers)]
	check := (*m)[p.Protocol]
	if check == nil {
		return nil
	}
	id, _ := half.Property(message.PropertyUniqKey)
	txID, _ := half.Property(message.PropertyTransactionID)
	h := HalfMessage{
		CommitLogOffset: off,
		QueueOffset:     half.QueueOffset,
		MsgID:           string(id),
		TransactionID:   string(txID),
		ProducerGroup:   group,
		Topic:           string(half.realTopic),
	}
	if h.TransactionID == "" {
		h.TransactionID = h.MsgID
	}
	restored, err := message.AppendRewritten(nil, half.rec, &message.Rewrite{Topic: h.Topic, QueueID: int32(max(half.realQueue, 0))})
	if err != nil {
		return err
	}
	h.Record = restored
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return check(ctx, p, h)
}
