package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

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
// acknowledged, and a half message is never resolved twice.

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
	half, err := e.halfMessage(r.CommitLogOffset)
	if err != nil {
		return err
	}
	if half.Properties[message.PropertyProducerGroup] != r.ProducerGroup && r.ProducerGroup != "" {
		return fmt.Errorf("%w: %s, not %s", ErrTransactionGroup, half.Properties[message.PropertyProducerGroup], r.ProducerGroup)
	}
	if r.QueueOffset >= 0 && r.QueueOffset != half.QueueOffset {
		return fmt.Errorf("%w: half message at %d has queue offset %d, not %d", ErrTransactionNotFound, r.CommitLogOffset, half.QueueOffset, r.QueueOffset)
	}
	if r.Decision == Unknown {
		return nil
	}
	return e.resolve(ctx, r.CommitLogOffset, half, r.Decision)
}

// halfMessage reads the pending half message at off.
func (e *Engine) halfMessage(off int64) (*message.Message, error) {
	m, err := e.MessageAt(off)
	if err != nil || m.Topic != message.TopicTransHalf {
		return nil, fmt.Errorf("%w at commit-log offset %d", ErrTransactionNotFound, off)
	}
	return m, nil
}

// resolve appends the record that settles the half message at off.
func (e *Engine) resolve(ctx context.Context, off int64, half *message.Message, d Decision) error {
	if err := e.disp.waitFor(ctx, off+1); err != nil { // the half message must be indexed
		return err
	}
	// Read the index position before the pending check: a decision indexed
	// in between must not be mistaken for one that is safe to forget.
	indexed := e.disp.pos.Load()
	pending, err := e.halves.Pending(off)
	if err != nil {
		return err
	}
	if !pending || !e.txnChecks.BeginResolve(off, indexed) {
		return fmt.Errorf("%w: half message at %d", ErrTransactionResolved, off)
	}
	rec := int64(-1)
	defer func() { e.txnChecks.EndResolve(off, rec) }()
	src := strconv.FormatInt(off, 10)
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	switch d {
	case Commit:
		err = e.commitHalf(ctx, s, half, src)
	case Rollback:
		err = e.markHalf(s, message.TopicTransOpHalf, half, src)
	default:
		err = e.markHalf(s, message.TopicTransCheckMaxTime, half, src)
	}
	if err == nil {
		rec = s.offs[0]
	}
	return err
}

// commitHalf stores the committed copy of half in its real queue.
func (e *Engine) commitHalf(ctx context.Context, s *sendState, half *message.Message, src string) error {
	topic := half.Properties[message.PropertyRealTopic]
	t, err := e.topic(topic)
	if err != nil {
		e.opts.Logger.Warn("committed transaction's topic is gone; dropping it", "topic", topic)
		return e.markHalf(s, message.TopicTransOpHalf, half, src)
	}
	qs := *t.queues.Load()
	qid, err := strconv.Atoi(half.Properties[message.PropertyRealQueueID])
	if err != nil || qid < 0 || qid >= len(qs) {
		qid = int(t.next.Add(1) % uint32(len(qs)))
	}
	m := half
	delete(m.Properties, message.PropertyRealTopic)
	delete(m.Properties, message.PropertyRealQueueID)
	delete(m.Properties, message.PropertyTransactionPrepared)
	m.Properties[propertyTransactionSource] = src
	m.SysFlag = message.WithTransactionType(m.SysFlag, message.SysFlagTransactionCommit)
	m.PreparedTransactionOffset = half.CommitLogOffset
	m.Topic = topic
	msgs := [1]*message.Message{m}
	due, err := e.messageDue(m, dueAfter(0))
	if err == nil && due > 0 {
		return e.schedule(s, t, qs[qid], m, due)
	}
	return e.store(s, t, qs[qid], msgs[:], "", nil)
}

// markHalf appends a marker record under topic that retires half.
func (e *Engine) markHalf(s *sendState, topic string, half *message.Message, src string) error {
	q, err := e.systemQueue(topic)
	if err != nil {
		return err
	}
	half.Properties[propertyTransactionSource] = src
	half.Topic = topic
	msgs := [1]*message.Message{half}
	return e.store(s, nil, q, msgs[:], "", nil)
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
			if err := e.checkTransactions(); err != nil {
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
	var half *message.Message
	st := e.txnChecks.Get(off, func() txn.Check {
		m, err := e.MessageAt(off)
		first := now + e.opts.TransactionTimeout.Milliseconds()
		if err == nil {
			half = m
			immunity := e.opts.TransactionTimeout.Milliseconds()
			if v, err := strconv.Atoi(m.Properties[message.PropertyCheckImmunitySeconds]); err == nil && v > 0 {
				immunity = int64(v) * 1000
			}
			first = m.StoreTimestamp + immunity
		}
		return txn.Check{Next: first}
	})
	if st.Next > now {
		return nil
	}
	if half == nil {
		m, err := e.halfMessage(off)
		if err != nil {
			return err
		}
		half = m
	}
	if st.Count >= e.opts.TransactionCheckMax {
		e.opts.Logger.Warn("discarding a half message that was never resolved", "offset", off, "group", half.Properties[message.PropertyProducerGroup], "checks", st.Count)
		err := e.resolve(context.Background(), off, half, Unknown)
		if errors.Is(err, ErrTransactionResolved) {
			return nil
		}
		return err
	}
	e.txnChecks.Set(off, txn.Check{Count: st.Count + 1, Next: now + e.opts.TransactionCheckInterval.Milliseconds()})
	return e.sendCheck(off, half)
}

// sendCheck asks a live producer of half's group to resolve it.
func (e *Engine) sendCheck(off int64, half *message.Message) error {
	group := half.Properties[message.PropertyProducerGroup]
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
	h := HalfMessage{
		CommitLogOffset: off,
		QueueOffset:     half.QueueOffset,
		MsgID:           half.UniqKey(),
		TransactionID:   half.Properties[message.PropertyTransactionID],
		ProducerGroup:   group,
		Topic:           half.Properties[message.PropertyRealTopic],
	}
	if h.TransactionID == "" {
		h.TransactionID = h.MsgID
	}
	rec, err := e.log.Read(off, nil)
	if err != nil {
		return err
	}
	qid, _ := strconv.Atoi(half.Properties[message.PropertyRealQueueID])
	restored, err := restoreTopic(rec, h.Topic, int32(qid))
	if err != nil {
		return err
	}
	h.Record = restored
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return check(ctx, p, h)
}

// restoreTopic re-encodes a stored record under another topic and queue.
func restoreTopic(rec []byte, topic string, queue int32) ([]byte, error) {
	m, _, err := message.DecodeStored(rec)
	if err != nil {
		return nil, err
	}
	m.Topic, m.QueueID = topic, queue
	out, err := message.AppendStored(nil, m)
	if err != nil {
		return nil, err
	}
	message.PatchStored(out, m.QueueOffset, m.CommitLogOffset, m.StoreTimestamp)
	return out, nil
}
