package engine

import (
	"context"
	"sync"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventOffsetReset: a group's offsets in a topic were reset; Offsets
	// holds the new ones by queue id.
	EventOffsetReset EventKind = iota + 1
	// EventTopicCreated: Topic was created, by any front-end or by the
	// engine itself (auto-creation, retry and dead-letter topics).
	EventTopicCreated
	// EventTopicDeleted: Topic was deleted.
	EventTopicDeleted
)

// Event is a change front-ends may need to pass on to connected clients.
type Event struct {
	Kind    EventKind
	Group   string
	Topic   string
	Offsets map[int32]int64
}

// eventBus fans events out to subscribers without ever blocking the
// engine: a subscriber that falls eventBuffer events behind misses the
// excess.
type eventBus struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

const eventBuffer = 256

// Subscribe returns a channel of engine events, closed when ctx ends or
// the engine closes.
func (e *Engine) Subscribe(ctx context.Context) <-chan Event {
	ch := make(chan Event, eventBuffer)
	e.events.mu.Lock()
	if e.events.subs == nil {
		e.events.subs = map[chan Event]struct{}{}
	}
	e.events.subs[ch] = struct{}{}
	e.events.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-e.closing:
		}
		e.events.mu.Lock()
		delete(e.events.subs, ch)
		close(ch)
		e.events.mu.Unlock()
	}()
	return ch
}

// topicCreated tells subscribers that topic was created.
func (e *Engine) topicCreated(topic string) {
	e.publish(Event{Kind: EventTopicCreated, Topic: topic})
}

func (e *Engine) publish(ev Event) {
	e.events.mu.Lock()
	defer e.events.mu.Unlock()
	for ch := range e.events.subs {
		select {
		case ch <- ev:
		default:
			e.opts.Logger.Warn("event subscriber is behind; dropping an event", "kind", ev.Kind, "group", ev.Group)
		}
	}
}
