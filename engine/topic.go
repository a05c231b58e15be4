package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// MaxQueues is the most queues a topic may have.
const MaxQueues = 1024

// LightQueuePrefix starts the name of every light message queue (LMQ). A
// light queue has a single queue, id 0, exists as soon as a message names it
// in its INNER_MULTI_DISPATCH property, and needs no topic configuration.
const LightQueuePrefix = "%LMQ%"

// IsLightQueue reports whether name is a light message queue.
func IsLightQueue(name string) bool { return strings.HasPrefix(name, LightQueuePrefix) }

// topicState is the in-memory state of one topic: its configuration, its
// queues and its counters.
type topicState struct {
	cfg    atomic.Pointer[meta.Topic]
	queues atomic.Pointer[[]*queueState]
	next   atomic.Uint32 // round-robin queue choice

	pops popWaiters // pops waiting for something to pop

	msgsIn, bytesIn, msgsOut, bytesOut atomic.Int64
	// out counts deliveries per consumer group: group name → *groupOut.
	out sync.Map
}

// groupOut counts what a topic delivered to one consumer group.
type groupOut struct{ msgs, bytes atomic.Int64 }

// countOut counts n messages of size bytes delivered to group ("" when
// the consumer named none).
func (t *topicState) countOut(group string, n, size int) {
	t.msgsOut.Add(int64(n))
	t.bytesOut.Add(int64(size))
	v, ok := t.out.Load(group)
	if !ok {
		v, _ = t.out.LoadOrStore(group, &groupOut{})
	}
	g := v.(*groupOut)
	g.msgs.Add(int64(n))
	g.bytes.Add(int64(size))
}

// queueState is the in-memory state of one queue.
type queueState struct {
	topic string
	id    int32

	// next is the offset the next message appended to the queue gets. It is
	// written only under the commit log's append lock (in Stamp), or by the
	// dispatcher for light queues.
	next int64
	// end is one past the last dispatched (pullable) offset.
	end atomic.Int64
	// min caches the first offset still stored; minGen is the log
	// generation it was computed for.
	min    atomic.Int64
	minGen atomic.Int64

	// tail keeps the newest entries, for pulls at the tail.
	tail entryTail

	arrivals  notifier    // broadcast when end advances
	topicPops *popWaiters // woken too (nil for light queues)
}

// advance publishes newEnd as the queue's dispatched end and wakes waiters.
func (q *queueState) advance(newEnd int64) {
	if newEnd <= q.end.Load() {
		return
	}
	q.end.Store(newEnd)
	q.arrivals.Broadcast()
	if q.topicPops != nil {
		q.topicPops.wakeEach()
	}
}

// wait returns once end > offset or ctx is done.
func (q *queueState) wait(ctx context.Context, offset int64) error {
	for {
		ch := q.arrivals.Wait()
		if q.end.Load() > offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (e *Engine) newQueueState(topic string, id int32) (*queueState, error) {
	first, end, err := e.queues.Bounds(topic, id)
	if err != nil {
		return nil, err
	}
	q := &queueState{topic: topic, id: id, next: end}
	q.end.Store(end)
	q.min.Store(first)
	q.minGen.Store(-1)
	return q, nil
}

// topic returns the state of a configured topic, loading it on first use.
func (e *Engine) topic(name string) (*topicState, error) {
	if v, ok := e.topics.Load(name); ok {
		return v.(*topicState), nil
	}
	cfg, err := e.meta.Topic(name)
	if err != nil {
		return nil, err
	}
	return e.loadTopic(cfg)
}

func (e *Engine) loadTopic(cfg meta.Topic) (*topicState, error) {
	t := &topicState{}
	t.cfg.Store(&cfg)
	qs, err := e.queueStates(t, cfg.Name, nil, cfg.Queues())
	if err != nil {
		return nil, err
	}
	t.queues.Store(&qs)
	v, _ := e.topics.LoadOrStore(cfg.Name, t)
	return v.(*topicState), nil
}

// queueStates extends have to n queues of topic t.
func (e *Engine) queueStates(t *topicState, topic string, have []*queueState, n int32) ([]*queueState, error) {
	out := make([]*queueState, n)
	copy(out, have)
	for i := int32(len(have)); i < n; i++ {
		q, err := e.newQueueState(topic, i)
		if err != nil {
			return nil, err
		}
		q.topicPops = &t.pops
		out[i] = q
	}
	return out, nil
}

// lightQueue returns the state of a light message queue, creating it on
// first use.
func (e *Engine) lightQueue(name string) (*queueState, error) {
	return e.lightQueueState(name, true)
}

// lightQueueState returns the state of a light message queue. A queue
// that never held a message gets a state of its own only when keep is
// set (the dispatcher storing into it, a reader waiting on it): lookups
// of names nobody writes to, which clients choose, leave nothing behind.
func (e *Engine) lightQueueState(name string, keep bool) (*queueState, error) {
	if v, ok := e.lmqs.Load(name); ok {
		return v.(*queueState), nil
	}
	q, err := e.newQueueState(name, 0)
	if err != nil {
		return nil, err
	}
	if !keep && q.end.Load() == 0 && q.min.Load() == 0 {
		return q, nil
	}
	v, _ := e.lmqs.LoadOrStore(name, q)
	return v.(*queueState), nil
}

// readQueue resolves (topic, queue) for reading: a configured, readable
// topic's queue or a light queue.
func (e *Engine) readQueue(topic string, queueID int32) (*queueState, error) {
	return e.resolveReadQueue(topic, queueID, false)
}

// waitQueue is readQueue for a reader that waits for the queue's
// arrivals, which needs the state the dispatcher signals.
func (e *Engine) waitQueue(topic string, queueID int32) (*queueState, error) {
	return e.resolveReadQueue(topic, queueID, true)
}

func (e *Engine) resolveReadQueue(topic string, queueID int32, keep bool) (*queueState, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	if IsLightQueue(topic) {
		if queueID != 0 {
			return nil, fmt.Errorf("%w: light queue %s has only queue 0, not %d", ErrInvalidQueue, topic, queueID)
		}
		return e.lightQueueState(topic, keep)
	}
	t, err := e.topic(topic)
	if err != nil {
		return nil, err
	}
	qs := *t.queues.Load()
	if queueID < 0 || int(queueID) >= len(qs) {
		return nil, fmt.Errorf("%w: topic %s has %d queues, not %d", ErrInvalidQueue, topic, len(qs), queueID)
	}
	return qs[queueID], nil
}

func validateTopicConfig(t *meta.Topic) error {
	if err := message.ValidateTopic(t.Name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidTopic, err)
	}
	if IsLightQueue(t.Name) {
		return fmt.Errorf("%w: %s is a light queue name; light queues need no topic", ErrReservedName, t.Name)
	}
	if !t.System && message.IsSystemTopic(t.Name) {
		return fmt.Errorf("%w: %s is a system topic", ErrReservedName, t.Name)
	}
	if t.ReadQueues == 0 && t.WriteQueues == 0 {
		t.ReadQueues, t.WriteQueues = DefaultQueueCount, DefaultQueueCount
	}
	if t.ReadQueues == 0 {
		t.ReadQueues = t.WriteQueues
	}
	if t.WriteQueues == 0 {
		t.WriteQueues = t.ReadQueues
	}
	if t.ReadQueues < 1 || t.WriteQueues < 1 || t.Queues() > MaxQueues {
		return fmt.Errorf("%w: topic %s: queue counts %d/%d outside 1..%d", ErrInvalidArgument, t.Name, t.ReadQueues, t.WriteQueues, MaxQueues)
	}
	if t.Perm == 0 {
		t.Perm = meta.PermRW
	}
	if t.MessageType < meta.MessageTypeUnspecified || t.MessageType > meta.MessageTypeMixed {
		return fmt.Errorf("%w: topic %s: unknown message type %d", ErrInvalidArgument, t.Name, t.MessageType)
	}
	return nil
}

// CreateTopic creates a topic, or updates it when it already exists. Zero
// queue counts default to 8 queues and a zero Perm to read-write.
func (e *Engine) CreateTopic(t meta.Topic) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if err := validateTopicConfig(&t); err != nil {
		return err
	}
	_, err := e.meta.Topic(t.Name)
	existed := err == nil
	if err := e.putTopic(t); err != nil {
		return err
	}
	if !existed {
		e.topicCreated(t.Name)
	}
	return nil
}

// EnsureTopic creates t unless a topic of its name exists, and returns the
// topic as stored and whether this call created it. Unlike CreateTopic it
// never changes an existing topic, and of concurrent callers exactly one
// creates it: front-ends that create topics on a client's first use call
// it, so that defaults never overwrite an administrator's configuration.
func (e *Engine) EnsureTopic(t meta.Topic) (meta.Topic, bool, error) {
	if err := e.checkOpen(); err != nil {
		return meta.Topic{}, false, err
	}
	if err := validateTopicConfig(&t); err != nil {
		return meta.Topic{}, false, err
	}
	stored, created, err := e.meta.CreateTopic(t)
	if err != nil {
		return meta.Topic{}, false, err
	}
	if _, loaded := e.topics.Load(stored.Name); !loaded {
		if _, err := e.loadTopic(stored); err != nil {
			return meta.Topic{}, false, err
		}
	}
	if created {
		e.topicCreated(stored.Name)
	}
	return stored, created, nil
}

// UpdateTopic changes an existing topic. Queue counts may grow; shrinking
// hides the higher queues from producers and consumers but keeps their
// messages.
func (e *Engine) UpdateTopic(t meta.Topic) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if _, err := e.meta.Topic(t.Name); err != nil {
		return err
	}
	if err := validateTopicConfig(&t); err != nil {
		return err
	}
	return e.putTopic(t)
}

func (e *Engine) putTopic(t meta.Topic) error {
	if err := e.meta.PutTopic(t); err != nil {
		return err
	}
	v, ok := e.topics.Load(t.Name)
	if !ok {
		_, err := e.loadTopic(t)
		return err
	}
	ts := v.(*topicState)
	old := *ts.queues.Load()
	if n := t.Queues(); int(n) > len(old) {
		qs, err := e.queueStates(ts, t.Name, old, n)
		if err != nil {
			return err
		}
		ts.queues.Store(&qs)
	}
	ts.cfg.Store(&t)
	return nil
}

// ensureTopic returns the state of topic, creating it when auto-creation is
// on (or the topic is a system topic the engine manages).
func (e *Engine) ensureTopic(name string) (*topicState, error) {
	t, err := e.topic(name)
	if err == nil || !e.opts.AutoCreateTopics {
		return t, err
	}
	if err := message.ValidateTopic(name); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTopic, err)
	}
	if message.IsSystemTopic(name) || IsLightQueue(name) {
		return nil, fmt.Errorf("%w: %s is not auto-created", ErrReservedName, name)
	}
	cfg := meta.Topic{Name: name, ReadQueues: e.opts.DefaultQueues, WriteQueues: e.opts.DefaultQueues, Perm: meta.PermRW}
	stored, created, err := e.meta.CreateTopic(cfg)
	if err != nil {
		return nil, err
	}
	ts, err := e.loadTopic(stored)
	if err == nil && created {
		e.topicCreated(name)
	}
	return ts, err
}

// DeleteTopic removes a topic, its queue indexes and every consumer offset
// kept for it. Its messages stay in the commit log until retention deletes
// them, but can no longer be pulled.
func (e *Engine) DeleteTopic(name string) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	e.popSaveMu.Lock()
	if err := e.meta.DeleteTopic(name); err != nil {
		e.popSaveMu.Unlock()
		return err
	}
	e.dropPops(func(k popKey) bool { return k.topic == name })
	e.popSaveMu.Unlock()
	e.topics.Delete(name)
	e.topicsGen.Add(1)
	e.publish(Event{Kind: EventTopicDeleted, Topic: name})
	if err := e.queues.DeleteTopic(name); err != nil {
		return err
	}
	return e.keys.DeleteTopic(name)
}

// Topic returns a topic's configuration.
func (e *Engine) Topic(name string) (meta.Topic, error) { return e.meta.Topic(name) }

// Topics returns every topic's configuration, sorted by name.
func (e *Engine) Topics() []meta.Topic { return e.meta.Topics() }

// CreateGroup creates or replaces a consumer group.
func (e *Engine) CreateGroup(g meta.Group) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if err := validateGroupConfig(g); err != nil {
		return err
	}
	return e.meta.PutGroup(g)
}

// EnsureGroup creates g unless a group of its name exists, and returns the
// group as stored and whether this call created it. Like EnsureTopic, it
// never changes an existing group and of concurrent callers exactly one
// creates it.
func (e *Engine) EnsureGroup(g meta.Group) (meta.Group, bool, error) {
	if err := e.checkOpen(); err != nil {
		return meta.Group{}, false, err
	}
	if err := validateGroupConfig(g); err != nil {
		return meta.Group{}, false, err
	}
	return e.meta.CreateGroup(g)
}

// validateGroupConfig checks a group's name and settings.
func validateGroupConfig(g meta.Group) error {
	if err := message.ValidateGroup(g.Name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidGroup, err)
	}
	if g.MaxAttempts < 0 {
		return fmt.Errorf("%w: group %s: negative max attempts %d", ErrInvalidArgument, g.Name, g.MaxAttempts)
	}
	return nil
}

// DeleteGroup removes a consumer group and its offsets.
func (e *Engine) DeleteGroup(name string) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	e.popSaveMu.Lock()
	defer e.popSaveMu.Unlock()
	if err := e.meta.DeleteGroup(name); err != nil {
		return err
	}
	e.dropPops(func(k popKey) bool { return k.group == name })
	return nil
}

// dropPops forgets the in-memory pop state of every key that match
// selects.
func (e *Engine) dropPops(match func(popKey) bool) {
	e.pops.Range(func(k, v any) bool {
		if match(k.(popKey)) {
			pq := v.(*popQueue)
			pq.mu.Lock()
			pq.dropped = true
			pq.mu.Unlock()
			e.pops.Delete(k)
		}
		return true
	})
}

// Group returns a consumer group's configuration.
func (e *Engine) Group(name string) (meta.Group, error) { return e.meta.Group(name) }

// Groups returns every consumer group, sorted by name.
func (e *Engine) Groups() []meta.Group { return e.meta.Groups() }
