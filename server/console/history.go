package console

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/server/console/tracedata"
)

// Event is one step of a message's history.
type Event struct {
	// At is when it happened (ms since the epoch); 0 when the engine
	// keeps no time for it (a committed offset).
	At int64 `json:"at"`
	// Kind is sent, stored (or resent: the copy a dead-letter resend
	// stored), consumed, pending, trace, or a delivery or its outcome:
	// pull, pop, commit, ack, invisible, retry, dead-letter.
	Kind   string `json:"kind"`
	Group  string `json:"group,omitempty"`
	Topic  string `json:"topic"`
	Detail string `json:"detail"`
	// Client is the consumer of a delivery (protocol, id and address,
	// as far as known); Attempt its delivery attempt, when known.
	Client  string `json:"client,omitempty"`
	Attempt int32  `json:"attempt,omitempty"`
	// Trace is a trace event's record, decoded (package tracedata); nil
	// when its body is not in the trace format (Detail holds it then).
	Trace *tracedata.Record `json:"trace,omitempty"`
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
// topic. Each delivery to a group and its outcome come from the engine's
// delivery history (Engine.Deliveries), which holds the latest records of
// each group and survives a restart (a crash loses its last 30 seconds);
// the retry and dead-letter copies stand for them when it holds none.
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
		recorded := map[engine.DeliveryKind]bool{}
		for _, d := range r.eng.Deliveries(g, m) {
			recorded[d.Kind] = true
			h.Events = append(h.Events, deliveryEvent(g, d))
		}
		// The stored copies say as much when the delivery history lost
		// them (older than its records, or after a crash).
		if rm, err := r.eng.MessageByIDInTopic(uniq, message.RetryTopic(g)); err == nil && !recorded[engine.DeliveryRetry] {
			h.Events = append(h.Events, Event{At: rm.StoreTimestamp, Kind: "retry", Group: g, Topic: rm.Topic,
				Detail: "failed " + itoa(int64(rm.ReconsumeTimes)) + " time(s); redelivery " + itoa(int64(rm.ReconsumeTimes)+1) + " scheduled"})
		}
		if dm, err := r.eng.MessageByIDInTopic(uniq, message.DLQTopic(g)); err == nil {
			if !recorded[engine.DeliveryDeadLetter] {
				h.Events = append(h.Events, Event{At: dm.StoreTimestamp, Kind: "dead-letter", Group: g, Topic: dm.Topic,
					Detail: "after " + itoa(int64(dm.ReconsumeTimes)) + " redelivery(ies)"})
			}
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
		offsetID := message.OffsetID(m.StoreHost, m.CommitLogOffset)
		for _, t := range traces {
			recs, err := tracedata.Decode(string(t.Body))
			requests := map[string]string{} // SubBefore's request id → its group
			for _, rec := range recs {
				if rec.Type == tracedata.SubBefore {
					requests[rec.RequestID] = rec.Group
				}
			}
			found := false
			for _, rec := range recs {
				if rec.MsgID != uniq && (rec.OffsetMsgID == "" || rec.OffsetMsgID != offsetID) {
					continue
				}
				found = true
				h.Events = append(h.Events, traceEvent(t, rec, requests))
			}
			if !found && (err != nil || len(recs) == 0) {
				// Not in the trace format: shown as sent.
				h.Events = append(h.Events, Event{At: t.StoreTimestamp, Kind: "trace", Topic: t.Topic, Detail: messageOf(t).Body})
			}
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

// deliveryEvent is the event of a record of group's delivery history.
func deliveryEvent(group string, d engine.Delivery) Event {
	ev := Event{At: d.At, Kind: d.Kind.String(), Group: group, Topic: d.Topic, Attempt: d.Attempt}
	client := d.Protocol
	if d.Client != "" {
		client += " " + d.Client
	}
	if d.Addr.IsValid() {
		client += " at " + d.Addr.String()
	}
	switch d.Kind {
	case engine.DeliveryPull, engine.DeliveryPop, engine.DeliveryAck, engine.DeliveryInvisible:
		ev.Client = strings.TrimSpace(client)
	}
	where := "queue " + itoa(int64(d.Queue)) + ", offset " + itoa(d.From)
	switch d.Kind {
	case engine.DeliveryPull:
		ev.Detail = "pulled with offsets " + itoa(d.From) + ".." + itoa(d.To) + " of queue " + itoa(int64(d.Queue))
	case engine.DeliveryPop:
		ev.Detail = "popped (" + where + "), delivery attempt " + itoa(int64(d.Attempt))
	case engine.DeliveryCommit:
		ev.Detail = "the group committed offset " + itoa(d.To) + " of queue " + itoa(int64(d.Queue)) + ", past it"
	case engine.DeliveryAck:
		ev.Detail = "acknowledged (" + where + ")"
	case engine.DeliveryInvisible:
		ev.Detail = "to be delivered again in " + d.Delay.String() + " unless acknowledged"
	case engine.DeliveryRetry:
		// The topic is where the copy goes.
		ev.Topic = message.RetryTopic(group)
		ev.Detail = "sent back by the consumer from " + d.Topic + " (" + where + "); redelivery " + itoa(int64(d.Attempt)) + " in " + d.Delay.String()
	case engine.DeliveryDeadLetter:
		ev.Topic = message.DLQTopic(group)
		ev.Detail = "from " + d.Topic + " (" + where + ") after " + itoa(int64(d.Attempt)) + " delivery(ies)"
	}
	if ev.Client != "" {
		ev.Detail += " by " + ev.Client
	}
	return ev
}

// traceEvent is the event of trace record rec, found in the trace message
// t; requests names the consumer group of each SubBefore's request id, for
// the SubAfter that does not say its own.
func traceEvent(t *message.Message, rec tracedata.Record, requests map[string]string) Event {
	ev := Event{At: rec.Time, Kind: "trace", Group: rec.Group, Topic: t.Topic, Trace: &rec}
	if ev.At <= 0 {
		ev.At = t.StoreTimestamp
	}
	outcome := "failed"
	if rec.Success {
		outcome = "succeeded"
	}
	switch rec.Type {
	case tracedata.Pub:
		ev.Detail = "Pub: sent by producer group " + orDash(rec.Group) + " from " + orDash(rec.ClientHost) + " to " + orDash(rec.StoreHost) +
			" in " + itoa(int64(rec.CostMillis)) + " ms, " + outcome
	case tracedata.SubBefore:
		ev.Detail = "SubBefore: received by consumer group " + orDash(rec.Group) + ", reconsume times " + itoa(int64(rec.RetryTimes))
	case tracedata.SubAfter:
		if ev.Group == "" {
			ev.Group = requests[rec.RequestID]
		}
		ev.Detail = "SubAfter: consumed in " + itoa(int64(rec.CostMillis)) + " ms, " + outcome
	case tracedata.EndTransaction:
		ev.Detail = "EndTransaction: producer group " + orDash(rec.Group) + " ended it with " + rec.TransactionState
		if rec.FromCheck {
			ev.Detail += ", answering a check"
		}
	}
	return ev
}
