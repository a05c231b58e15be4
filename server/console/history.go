package console

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
)

// Event is one step of a message's history.
type Event struct {
	// At is when it happened (ms since the epoch); 0 when the engine
	// keeps no time for it (a committed offset).
	At int64 `json:"at"`
	// Kind is sent, stored (or resent: the copy a dead-letter resend
	// stored), consumed, pending, retry, dead-letter or trace.
	Kind   string `json:"kind"`
	Group  string `json:"group,omitempty"`
	Topic  string `json:"topic"`
	Detail string `json:"detail"`
}

// History is a message and what became of it.
type History struct {
	Message Message `json:"message"`
	Events  []Event `json:"events"`
}

// maxTraceRecords bounds the trace records a history shows.
const maxTraceRecords = 32

// history answers GET /messages/{id}/history[?topic=]: the message as
// stored in its own topic, then per consumer group whether its committed
// offset has passed it, its latest retry and its dead letter, from the
// engine's records (the retry and dead-letter topics keep the message's
// id), and the RocketMQ trace records clients sent for it to the trace
// topic. Deliveries themselves are not recorded one by one: a retry
// stands for the failed deliveries before it (its attempt count).
func (a *API) history(r *request) (any, error) {
	m, err := lookupByID(r)
	if err != nil {
		return nil, err
	}
	m.LoadProperties()
	// A retry or dead-letter copy: start from the original.
	if message.IsRetryTopic(m.Topic) || message.IsDLQTopic(m.Topic) {
		if origin := m.DeadLetterOrigin(); origin != "" {
			if o, err := r.eng.MessageByIDInTopic(m.ID(), origin); err == nil {
				m = o
				m.LoadProperties()
			}
		}
	}
	if err := mayRead(r, m); err != nil {
		return nil, err
	}
	h := History{Message: messageOf(m), Events: []Event{
		{At: m.BornTimestamp, Kind: "sent", Topic: m.Topic, Detail: "by the producer at " + orDash(host(m.BornHost))},
		{At: m.StoreTimestamp, Kind: "stored", Topic: m.Topic, Detail: "queue " + itoa(int64(m.QueueID)) + ", offset " + itoa(m.QueueOffset)},
	}}
	const stored = 1 // the index of the stored event
	uniq := m.ID()

	groups := map[string]bool{}
	consuming, err := r.eng.GroupsConsuming(m.Topic)
	if err != nil {
		return nil, err
	}
	for _, g := range consuming {
		groups[g] = true
	}
	for _, g := range r.eng.Groups() {
		if _, err := r.eng.Topic(message.RetryTopic(g.Name)); err == nil {
			groups[g.Name] = true
		} else if _, err := r.eng.Topic(message.DLQTopic(g.Name)); err == nil {
			groups[g.Name] = true
		}
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		if !r.may(hook.Group(g)) {
			continue
		}
		if offs, err := r.eng.ConsumerOffsets(g, m.Topic); err == nil {
			if off, ok := offs[m.QueueID]; ok {
				if off > m.QueueOffset {
					h.Events = append(h.Events, Event{Kind: "consumed", Group: g, Topic: m.Topic, Detail: "the group's committed offset " + itoa(off) + " is past it"})
				} else {
					h.Events = append(h.Events, Event{Kind: "pending", Group: g, Topic: m.Topic, Detail: "the group's committed offset " + itoa(off) + " has not reached it"})
				}
			}
		} else if !errors.Is(err, engine.ErrNoOffset) {
			return nil, err
		}
		if rm, err := r.eng.MessageByIDInTopic(uniq, message.RetryTopic(g)); err == nil {
			h.Events = append(h.Events, Event{At: rm.StoreTimestamp, Kind: "retry", Group: g, Topic: rm.Topic,
				Detail: "failed " + itoa(int64(rm.ReconsumeTimes)) + " time(s); redelivery " + itoa(int64(rm.ReconsumeTimes)+1) + " scheduled"})
		}
		if dm, err := r.eng.MessageByIDInTopic(uniq, message.DLQTopic(g)); err == nil {
			h.Events = append(h.Events, Event{At: dm.StoreTimestamp, Kind: "dead-letter", Group: g, Topic: dm.Topic,
				Detail: "after " + itoa(int64(dm.ReconsumeTimes)) + " redelivery(ies)"})
			if e := &h.Events[stored]; dm.StoreTimestamp <= e.At {
				// The copy found is the one a resend stored; the
				// index keeps the last copy of an id.
				e.Kind, e.Detail = "resent", "stored again by a dead-letter resend: "+e.Detail
			}
		}
	}
	if _, err := r.eng.Topic(message.TopicTrace); err == nil {
		traces, err := r.eng.MessagesByKey(message.TopicTrace, uniq, 0, time.Now().UnixMilli(), maxTraceRecords)
		if err != nil {
			return nil, err
		}
		for _, t := range traces {
			body := messageOf(t)
			h.Events = append(h.Events, Event{At: t.StoreTimestamp, Kind: "trace", Topic: t.Topic, Detail: body.Body})
		}
	}
	slices.SortStableFunc(h.Events, func(x, y Event) int {
		// Events without a time (committed offsets) go last.
		switch {
		case x.At == 0 && y.At != 0:
			return 1
		case y.At == 0 && x.At != 0:
			return -1
		}
		return cmp.Compare(x.At, y.At)
	})
	return h, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
