package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/timer"
)

// Delayed and timer messages.
//
// A message with a DELAY level (1..18) or a timer property
// (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS) is stored under the
// timer topic rmq_sys_wheel_timer with its real topic and queue in
// REAL_TOPIC and REAL_QID and its due time in TIMER_OUT_MS; the dispatcher
// indexes it in the timer index (package timer). When it falls due the
// scheduler appends a copy to the real queue, without the scheduling
// properties but TIMER_DELIVER_MS and with TIMER_SRC naming the scheduled
// record, which the dispatcher uses to retire the timer entry (RocketMQ's
// timer store, too, delivers TIMER_DELIVER_MS). The copies of the messages
// due together are appended as one batch, each the stored record rewritten
// (message.AppendRewritten) rather than decoded and encoded again; every
// field but the topic, queue and properties is the scheduled record's,
// its store host included. Levels above 18 are capped at 18, as RocketMQ
// does; DELAY wins over the timer properties.

// ErrNotRecallable reports a recall of a message that is not (or no
// longer) waiting to be delivered.
var ErrNotRecallable = errors.New("engine: message is not scheduled")

// DefaultDelayLevels are RocketMQ's delay levels 1..18.
var DefaultDelayLevels = []time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute,
	6 * time.Minute, 7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute,
	20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
}

// propertyTimerSource names, in a delivered or cancelled timer message, the
// timer entry it retires: "due,offset".
const propertyTimerSource = "TIMER_SRC"

// dueAfter returns the time d from now in ms since the epoch, rounded up
// so that a delay never ends before all of it has passed.
func dueAfter(d time.Duration) int64 {
	return (time.Now().Add(d).UnixNano() + 999_999) / 1_000_000
}

// dueTime returns when msgs should be delivered, in ms since the epoch, or
// 0 for now.
func (e *Engine) dueTime(msgs []*message.Message) (int64, error) {
	if !slices.ContainsFunc(msgs, hasScheduleProperty) {
		return 0, nil // the common case, without reading the clock
	}
	now := dueAfter(0)
	due, err := e.messageDue(msgs[0], now)
	if err != nil || len(msgs) == 1 {
		return due, err
	}
	for _, m := range msgs {
		if d, err := e.messageDue(m, now); err != nil || d > 0 {
			return 0, fmt.Errorf("%w: a batch cannot carry delayed or timer messages", ErrInvalidMessage)
		}
	}
	return 0, nil
}

func (e *Engine) messageDue(m *message.Message, now int64) (int64, error) {
	p := m.Properties
	if v, ok := p[message.PropertyDelayLevel]; ok {
		level, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%w: delay level %q is not a number", ErrInvalidMessage, v)
		}
		if level <= 0 {
			return 0, nil
		}
		level = min(level, len(e.opts.DelayLevels))
		return now + e.opts.DelayLevels[level-1].Milliseconds(), nil
	}
	var due int64
	for _, k := range [...]string{message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		v, ok := p[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: %s=%q is not a non-negative integer", ErrInvalidMessage, k, v)
		}
		switch k {
		case message.PropertyTimerDeliverMS:
			due = n
		case message.PropertyTimerDelaySec:
			if n > e.opts.TimerHorizon.Milliseconds()/1000 {
				return 0, e.beyondHorizon(k, v)
			}
			due = now + n*1000
		default:
			due = now + n
		}
		break
	}
	if due <= now {
		return 0, nil
	}
	if due-now > e.opts.TimerHorizon.Milliseconds() {
		return 0, e.beyondHorizon("delivery time", strconv.FormatInt(due, 10))
	}
	return due, nil
}

func (e *Engine) beyondHorizon(what, v string) error {
	return fmt.Errorf("%w: %s %s is more than %s ahead", ErrBeyondTimerHorizon, what, v, e.opts.TimerHorizon)
}

// schedule stores m in the timer topic, due at due, for queue q of t.
func (e *Engine) schedule(s *sendState, t *topicState, q *queueState, m *message.Message, due int64) error {
	tq, err := e.systemQueue(message.TopicTimer)
	if err != nil {
		return err
	}
	extra := [...]string{
		message.PropertyRealTopic, q.topic,
		message.PropertyRealQueueID, strconv.Itoa(int(q.id)),
		message.PropertyTimerOutMS, strconv.FormatInt(due, 10),
	}
	s.qid = q.id
	msgs := [1]*message.Message{m}
	return e.store(s, t, tq, msgs[:], message.TopicTimer, extra[:])
}

// systemQueue returns queue 0 of a system topic, creating the topic.
func (e *Engine) systemQueue(name string) (*queueState, error) {
	t, err := e.topic(name)
	if errors.Is(err, ErrTopicNotFound) {
		var created bool
		if _, created, err = e.meta.CreateTopic(meta.Topic{Name: name, ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW, System: true}); err != nil {
			return nil, err
		}
		if created {
			e.topicCreated(name)
		}
		t, err = e.topic(name)
	}
	if err != nil {
		return nil, err
	}
	return (*t.queues.Load())[0], nil
}

// deliverDue is the timer scheduler's DeliverFunc: it appends a copy of
// each due message to its real queue, in batches, and waits until the
// index has retired the entries.
func (e *Engine) deliverDue(ctx context.Context, due []timer.Entry) error {
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	last := int64(-1) // the last record appended
	err := e.deliverAll(s, due, &last)
	if last >= 0 {
		// Also after a failure: the scheduler retries from the first
		// entry, and must find those delivered so far retired.
		if werr := e.disp.waitFor(ctx, last+1); err == nil {
			err = werr
		}
	}
	return err
}

// deliverAll appends the copies of due to their queues, in batches, and
// the records that retire the entries it cannot deliver; last is set to
// the offset of each record appended.
func (e *Engine) deliverAll(s *sendState, due []timer.Entry, last *int64) error {
	limit := int(min(1<<20, e.opts.SegmentSize/4)) // a batch must fit in a segment
	flush := func() error {
		if err := e.appendMoved(s); err != nil {
			return err
		}
		if n := len(s.offs); n > 0 {
			*last = s.offs[n-1]
		}
		s.reset()
		return nil
	}
	for _, en := range due {
		if len(s.buf) >= limit {
			if err := flush(); err != nil {
				return err
			}
		}
		err := e.deliverOne(s, en)
		if err == nil {
			continue
		}
		if !errors.Is(err, errDropScheduled) {
			return err
		}
		// Keep the log in due order: what was gathered goes first.
		if err := flush(); err != nil {
			return err
		}
		source := strconv.FormatInt(en.Due, 10) + "," + strconv.FormatInt(en.Offset, 10)
		if err := e.retireTimer(s, source); err != nil {
			return err
		}
		*last = s.offs[0]
		s.reset()
	}
	return flush()
}

// errDropScheduled reports a scheduled message that cannot be delivered:
// its timer entry is retired without a delivery.
var errDropScheduled = errors.New("engine: scheduled message cannot be delivered")

// timerDrop are the properties a delivered copy leaves out. It keeps
// TIMER_DELIVER_MS, as RocketMQ's timer store does: consumers read a timer
// message's delivery time there.
var timerDrop = []string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyDelayLevel,
	message.PropertyTimerDelaySec, message.PropertyTimerDelayMS, message.PropertyTimerOutMS,
	propertyTimerSource}

// deliverOne adds to s the copy of the scheduled message of en for its real
// queue: the stored record with its real topic and queue, without the
// scheduling properties (timerDrop) and with TIMER_SRC naming en. It fails with
// errDropScheduled when the message cannot be read or its topic is gone.
func (e *Engine) deliverOne(s *sendState, en timer.Entry) error {
	rec, err := e.log.Read(en.Offset, s.read[:0])
	if err != nil {
		e.opts.Logger.Error("scheduled message unreadable; dropping it", "offset", en.Offset, "err", err)
		return errDropScheduled
	}
	s.read = rec
	h, err := message.PeekStored(rec)
	if err != nil {
		e.opts.Logger.Error("scheduled message unreadable; dropping it", "offset", en.Offset, "err", err)
		return errDropScheduled
	}
	topic, _ := h.Property(message.PropertyRealTopic)
	t, err := e.topic(string(topic))
	if err != nil {
		e.opts.Logger.Warn("scheduled message's topic is gone; dropping it", "topic", string(topic), "offset", en.Offset)
		return errDropScheduled
	}
	qs := *t.queues.Load()
	qid := -1
	if v, ok := h.Property(message.PropertyRealQueueID); ok {
		if n, ok := parseInt(v); ok && n < int64(len(qs)) {
			qid = int(n)
		}
	}
	if qid < 0 {
		qid = int(t.next.Add(1) % uint32(len(qs)))
	}
	source := strconv.FormatInt(en.Due, 10) + "," + strconv.FormatInt(en.Offset, 10)
	add := [...]string{propertyTimerSource, source}
	q := qs[qid]
	rw := message.Rewrite{Topic: q.topic, QueueID: q.id, Drop: timerDrop, Add: add[:]}
	if err := s.addMoved(rec, q, &rw); err != nil {
		e.opts.Logger.Error("scheduled message cannot be delivered; dropping it", "offset", en.Offset, "err", err)
		return errDropScheduled
	}
	t.msgsIn.Add(1)
	t.bytesIn.Add(int64(len(h.Body)))
	return nil
}

// retireTimer appends a record that retires a timer entry without
// delivering it.
func (e *Engine) retireTimer(s *sendState, source string) error {
	tq, err := e.systemQueue(message.TopicTimer)
	if err != nil {
		return err
	}
	m := &message.Message{Topic: message.TopicTimer, Body: []byte("retired"), Properties: map[string]string{propertyTimerSource: source}}
	msgs := [1]*message.Message{m}
	return e.store(s, nil, tq, msgs[:], "", nil)
}

// Recall cancels a scheduled message of topic that has not been delivered
// yet, given its message id.
func (e *Engine) Recall(ctx context.Context, topic, msgID string) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if err := e.WaitDispatched(ctx); err != nil { // the id index must know every message sent so far
		return err
	}
	off, ok, err := e.keys.ByID(msgID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: no message %s", ErrNotRecallable, msgID)
	}
	m, err := e.MessageAt(off)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecallable, err)
	}
	due, err := strconv.ParseInt(m.Properties[message.PropertyTimerOutMS], 10, 64)
	if m.Topic != message.TopicTimer || err != nil || m.Properties[message.PropertyRealTopic] != topic {
		return fmt.Errorf("%w: message %s of %s is not waiting for delivery", ErrNotRecallable, msgID, topic)
	}
	e.sched.Lock()
	defer e.sched.Unlock()
	pending, err := e.timers.Has(timer.Entry{Due: due, Offset: off})
	if err != nil {
		return err
	}
	if !pending {
		return fmt.Errorf("%w: message %s was already delivered or recalled", ErrNotRecallable, msgID)
	}
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	if err := e.retireTimer(s, strconv.FormatInt(due, 10)+","+strconv.FormatInt(off, 10)); err != nil {
		return err
	}
	return e.WaitDispatched(ctx)
}
