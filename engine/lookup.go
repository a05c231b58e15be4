package engine

import (
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine/commitlog"
	"github.com/karmanmq/karman/engine/message"
)

// MessageAt returns the message whose record starts at commitLogOffset.
func (e *Engine) MessageAt(commitLogOffset int64) (*message.Message, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	rec, err := e.log.Read(commitLogOffset, nil)
	if err != nil {
		if errors.Is(err, commitlog.ErrCorrupt) {
			e.corrupt.Add(1)
		}
		return nil, fmt.Errorf("%w: no message at commit-log offset %d: %w", ErrMessageNotFound, commitLogOffset, err)
	}
	m, _, err := message.DecodeStored(rec)
	if err != nil {
		return nil, fmt.Errorf("%w: record at %d: %w", ErrMessageNotFound, commitLogOffset, err)
	}
	return m, nil
}

// MessageByID returns a message by its client message id (UNIQ_KEY) or by
// its offset message id.
func (e *Engine) MessageByID(id string) (*message.Message, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	off, ok, err := e.keys.ByID(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		_, off, err = message.ParseOffsetID(id)
		if err != nil {
			return nil, fmt.Errorf("%w: id %s", ErrMessageNotFound, id)
		}
	}
	return e.MessageAt(off)
}

// MessageByIDInTopic returns the last message stored in topic with
// client message id id (a message retried or dead-lettered since is still
// found in its own topic), or, when id is an offset message id, the
// message it names if that is in topic.
func (e *Engine) MessageByIDInTopic(id, topic string) (*message.Message, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	off, ok, err := e.keys.ByIDInTopic(id, topic)
	if err != nil {
		return nil, err
	}
	if !ok {
		if _, off, err = message.ParseOffsetID(id); err != nil {
			return nil, fmt.Errorf("%w: id %s in topic %s", ErrMessageNotFound, id, topic)
		}
	}
	m, err := e.MessageAt(off)
	if err != nil {
		return nil, err
	}
	if m.Topic != topic {
		return nil, fmt.Errorf("%w: id %s in topic %s", ErrMessageNotFound, id, topic)
	}
	return m, nil
}

// MessagesByKey returns up to limit messages of topic whose KEYS include key
// and that were stored within [begin, end] (ms since the epoch), oldest
// first.
func (e *Engine) MessagesByKey(topic, key string, begin, end int64, limit int) ([]*message.Message, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%w: limit %d", ErrInvalidArgument, limit)
	}
	offs, err := e.keys.ByKey(topic, key, begin, end, limit)
	if err != nil {
		return nil, err
	}
	out := make([]*message.Message, 0, len(offs))
	for _, off := range offs {
		m, err := e.MessageAt(off)
		if err != nil {
			continue // deleted by retention or corrupt: not served
		}
		out = append(out, m)
	}
	return out, nil
}

// CommitOffset records that group will next consume offset in (topic,
// queueID).
func (e *Engine) CommitOffset(group, topic string, queueID int32, offset int64) error {
	if err := message.ValidateGroup(group); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidGroup, err)
	}
	q, err := e.readQueue(topic, queueID)
	if err != nil {
		return err
	}
	if offset < 0 || offset > q.end.Load() {
		return &OffsetRangeError{Topic: topic, Queue: queueID, Offset: offset, Min: 0, Max: q.end.Load()}
	}
	if err := e.meta.CommitOffset(group, topic, queueID, offset); err != nil {
		return err
	}
	e.history.add(group, Delivery{Kind: DeliveryCommit, Topic: topic, Queue: queueID, To: offset})
	return nil
}

// SeekOffset commits offset as CommitOffset does and moves the group's
// message-granularity consumption (Pop) of the queue there too,
// forgetting its deliveries: a consumer that sets its offset explicitly
// is next given messages from it, whichever way it consumes.
func (e *Engine) SeekOffset(group, topic string, queueID int32, offset int64) error {
	if err := e.CommitOffset(group, topic, queueID, offset); err != nil {
		return err
	}
	q, err := e.readQueue(topic, queueID)
	if err != nil {
		return err
	}
	pq, err := e.seekPop(group, q, offset)
	if err != nil || pq == nil {
		return err
	}
	if err := e.savePops([]*popQueue{pq}, true); err != nil {
		return err
	}
	e.wakeGroupPops(topic, group)
	return nil
}

// seekPop moves group's pop state of q to offset, forgetting its
// deliveries, and returns it to be saved; nil when the group never
// popped q (nor did before a restart), which needs no state made.
func (e *Engine) seekPop(group string, q *queueState, offset int64) (*popQueue, error) {
	key := popKey{group, q.topic, q.id}
	if _, ok := e.pops.Load(key); !ok {
		if _, ok, err := e.meta.PopState(group, q.topic, q.id); err != nil || !ok {
			return nil, err
		}
	}
	pq, err := e.popQueue(key, q)
	if err != nil {
		return nil, err
	}
	pq.mu.Lock()
	pq.st.Reset(offset)
	pq.ahead = nil
	pq.markDirty()
	pq.mu.Unlock()
	return pq, nil
}

// ConsumerOffset returns group's committed offset in (topic, queueID), or
// an error matching ErrNoOffset.
func (e *Engine) ConsumerOffset(group, topic string, queueID int32) (int64, error) {
	if err := e.checkOpen(); err != nil {
		return 0, err
	}
	return e.meta.Offset(group, topic, queueID)
}

// ConsumerOffsets returns group's committed offsets in topic, by queue id.
func (e *Engine) ConsumerOffsets(group, topic string) (map[int32]int64, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	return e.meta.Offsets(group, topic)
}

// TopicsConsumedBy returns, sorted, the topics in which group has
// committed offsets.
func (e *Engine) TopicsConsumedBy(group string) ([]string, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	return e.meta.OffsetTopics(group)
}

// GroupsConsuming returns, sorted, the groups that have committed offsets
// in topic. It reads every committed offset: it is for administration.
func (e *Engine) GroupsConsuming(topic string) ([]string, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	return e.meta.OffsetGroups(topic)
}
