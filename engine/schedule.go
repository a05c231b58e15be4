package engine

import (
	"context"
	"errors"
	"fmt"
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
// properties and with TIMER_SRC naming the scheduled record, which the
// dispatcher uses to retire the timer entry. Levels above 18 are capped at
// 18, as RocketMQ does; DELAY wins over the timer properties.

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
func (e *Engine) dueTime(msgs []*message.Message, now int64) (int64, error) {
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
	return fmt.Errorf("%w: %s %s is more than %s ahead", ErrInvalidMessage, what, v, e.opts.TimerHorizon)
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
		if _, _, err = e.meta.CreateTopic(meta.Topic{Name: name, ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW, System: true}); err != nil {
			return nil, err
		}
		t, err = e.topic(name)
	}
	if err != nil {
		return nil, err
	}
	return (*t.queues.Load())[0], nil
}

// deliverDue is the timer scheduler's DeliverFunc: it appends each due
// message to its real queue and waits until the index has retired the
// entries.
func (e *Engine) deliverDue(ctx context.Context, due []timer.Entry) error {
	s := e.bufs.Get().(*sendState)
	defer e.put(s)
	for _, en := range due {
		s.reset()
		if err := e.deliverOne(s, en); err != nil {
			return err
		}
	}
	return e.WaitDispatched(ctx)
}

func (e *Engine) deliverOne(s *sendState, en timer.Entry) error {
	source := strconv.FormatInt(en.Due, 10) + "," + strconv.FormatInt(en.Offset, 10)
	m, err := e.MessageAt(en.Offset)
	if err != nil {
		e.opts.Logger.Error("scheduled message unreadable; dropping it", "offset", en.Offset, "err", err)
		return e.retireTimer(s, source)
	}
	topic := m.Properties[message.PropertyRealTopic]
	t, err := e.topic(topic)
	if err != nil {
		e.opts.Logger.Warn("scheduled message's topic is gone; dropping it", "topic", topic, "offset", en.Offset)
		return e.retireTimer(s, source)
	}
	qs := *t.queues.Load()
	qid, err := strconv.Atoi(m.Properties[message.PropertyRealQueueID])
	if err != nil || qid < 0 || qid >= len(qs) {
		qid = int(t.next.Add(1) % uint32(len(qs)))
	}
	for _, k := range [...]string{message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyDelayLevel,
		message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS, message.PropertyTimerOutMS} {
		delete(m.Properties, k)
	}
	m.Properties[propertyTimerSource] = source
	m.Topic = topic
	msgs := [1]*message.Message{m}
	return e.store(s, t, qs[qid], msgs[:], "", nil)
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
