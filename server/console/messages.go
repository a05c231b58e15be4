package console

import (
	"cmp"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
)

// Message is a stored message as the API shows it.
type Message struct {
	// ID is the client message id (UNIQ_KEY), or OffsetID when it has none.
	ID              string            `json:"id"`
	OffsetID        string            `json:"offsetId"`
	Topic           string            `json:"topic"`
	Queue           int32             `json:"queue"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	Tags            string            `json:"tags"`
	Keys            []string          `json:"keys"`
	BornTimestamp   int64             `json:"bornTimestamp"`
	BornHost        string            `json:"bornHost"`
	StoreTimestamp  int64             `json:"storeTimestamp"`
	StoreHost       string            `json:"storeHost"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	Properties      map[string]string `json:"properties"`
	BodySize        int               `json:"bodySize"`
	// Body is the body as text when it is UTF-8 (BodyEncoding "utf-8"),
	// else in base64 ("base64"). Bodies over maxBodyShown are cut there
	// (BodyTruncated).
	Body          string `json:"body"`
	BodyEncoding  string `json:"bodyEncoding"`
	BodyTruncated bool   `json:"bodyTruncated"`
	// DeadLetterOrigin is the topic a dead letter was consumed from.
	DeadLetterOrigin string `json:"deadLetterOrigin,omitempty"`
}

// maxBodyShown is the most body bytes a message carries in answers.
const maxBodyShown = 256 << 10

func host(ap interface {
	IsValid() bool
	String() string
}) string {
	if !ap.IsValid() {
		return ""
	}
	return ap.String()
}

func messageOf(m *message.Message) Message {
	m.LoadProperties()
	out := Message{
		ID: m.ID(), OffsetID: message.OffsetID(m.StoreHost, m.CommitLogOffset),
		Topic: m.Topic, Queue: m.QueueID, QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset,
		Tags: m.Tags(), Keys: m.Keys(),
		BornTimestamp: m.BornTimestamp, BornHost: host(m.BornHost),
		StoreTimestamp: m.StoreTimestamp, StoreHost: host(m.StoreHost),
		ReconsumeTimes: m.ReconsumeTimes, Properties: m.Properties, BodySize: len(m.Body),
	}
	if message.IsDLQTopic(m.Topic) {
		out.DeadLetterOrigin = m.DeadLetterOrigin()
	}
	if out.Keys == nil {
		out.Keys = []string{}
	}
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	body := m.Body
	if len(body) > maxBodyShown {
		body, out.BodyTruncated = body[:maxBodyShown], true
	}
	if utf8.Valid(body) {
		out.Body, out.BodyEncoding = string(body), "utf-8"
	} else {
		out.Body, out.BodyEncoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return out
}

// Page is a run of messages of one queue.
type Page struct {
	Topic     string    `json:"topic"`
	Queue     int32     `json:"queue"`
	MinOffset int64     `json:"minOffset"`
	MaxOffset int64     `json:"maxOffset"`
	Messages  []Message `json:"messages"`
	// NextOffset is where the following page starts.
	NextOffset int64 `json:"nextOffset"`
}

const maxCount = 1000

// browse answers GET /topics/{topic}/queues/{queue}/messages?from=&count=:
// the queue's messages from an offset (its minimum when below), without
// a filter and without moving any group's offsets.
func (a *API) browse(r *request) (any, error) {
	topic := r.PathValue("topic")
	q64, err := strconv.ParseInt(r.PathValue("queue"), 10, 32)
	if err != nil || q64 < 0 {
		return nil, badRequest("queue %q: want a queue id, 0 or more", r.PathValue("queue"))
	}
	queue := int32(q64)
	from, err := r.intParam("from", 0, 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	count, err := r.intParam("count", 32, 1, maxCount)
	if err != nil {
		return nil, err
	}
	t, err := r.eng.Topic(topic)
	if err != nil {
		return nil, err
	}
	if queue >= t.Queues() {
		return nil, badRequest("queue %d: topic %s has queues 0 to %d", queue, topic, t.Queues()-1)
	}
	return readQueue(r, topic, queue, from, int(count), math.MaxInt64)
}

// readQueue reads up to count messages of a queue from offset from,
// stopping at the first stored after end (ms).
func readQueue(r *request, topic string, queue int32, from int64, count int, end int64) (*Page, error) {
	p := &Page{Topic: topic, Queue: queue, Messages: []Message{}}
	var err error
	if p.MinOffset, err = r.eng.MinOffset(topic, queue); err != nil {
		return nil, err
	}
	if p.MaxOffset, err = r.eng.MaxOffset(topic, queue); err != nil {
		return nil, err
	}
	off := min(max(from, p.MinOffset), p.MaxOffset)
	for off < p.MaxOffset && len(p.Messages) < count {
		res, err := r.eng.Pull(r.Context(), topic, queue, off, min(count-len(p.Messages), engine.MaxPullMessages), nil)
		var re *engine.OffsetRangeError
		if errors.As(err, &re) { // retention moved the start meanwhile
			off = re.Min
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, rec := range res.Records {
			m, _, err := message.DecodeStored(rec)
			if err != nil {
				return nil, err
			}
			if m.StoreTimestamp > end {
				p.NextOffset = m.QueueOffset
				res.Release()
				return p, nil
			}
			p.Messages = append(p.Messages, messageOf(m))
		}
		res.Release()
		if res.NextOffset <= off {
			break
		}
		off = res.NextOffset
	}
	p.NextOffset = off
	return p, nil
}

// messageByID answers GET /messages/{id}[?topic=]: by client or offset
// message id.
func (a *API) messageByID(r *request) (any, error) {
	m, err := lookupByID(r)
	if err != nil {
		return nil, err
	}
	if err := mayRead(r, m); err != nil {
		return nil, err
	}
	return messageOf(m), nil
}

// lookupByID finds the message of the path's id: in the query's topic,
// when one is given (which must exist), else by the id alone.
func lookupByID(r *request) (*message.Message, error) {
	id := r.PathValue("id")
	topic := r.URL.Query().Get("topic")
	if topic == "" {
		return r.eng.MessageByID(id)
	}
	if _, err := r.eng.Topic(topic); err != nil {
		return nil, err
	}
	return r.eng.MessageByIDInTopic(id, topic)
}

// mayRead refuses a message whose topic the caller may not read.
func mayRead(r *request, m *message.Message) error {
	if !r.may(hook.Topic(m.Topic)) {
		return &Error{Status: http.StatusForbidden, Code: "FORBIDDEN", Message: "denied: the message is in topic " + m.Topic + ", which you may not read"}
	}
	return nil
}

// MessageList is the answer of GET /messages.
type MessageList struct {
	Messages []Message `json:"messages"`
	// Truncated says the limit cut the list.
	Truncated bool `json:"truncated"`
}

// findMessages answers GET /messages?topic=&key=&begin=&end=&limit=: the
// topic's messages with a key, or without key all its messages stored in
// [begin, end], oldest first.
func (a *API) findMessages(r *request) (any, error) {
	q := r.URL.Query()
	topic, key := q.Get("topic"), q.Get("key")
	if topic == "" {
		return nil, badRequest("parameter topic is required")
	}
	now := time.Now().UnixMilli()
	begin, err := r.timeParam("begin", 0)
	if err != nil {
		return nil, err
	}
	end, err := r.timeParam("end", now)
	if err != nil {
		return nil, err
	}
	if begin > end {
		return nil, badRequest("begin %d is after end %d", begin, end)
	}
	limit, err := r.intParam("limit", 32, 1, maxCount)
	if err != nil {
		return nil, err
	}
	t, err := r.eng.Topic(topic)
	if err != nil {
		return nil, err
	}
	out := MessageList{Messages: []Message{}}
	if key != "" {
		ms, err := r.eng.MessagesByKey(topic, key, begin, end, int(limit)+1)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if len(out.Messages) == int(limit) {
				out.Truncated = true
				break
			}
			out.Messages = append(out.Messages, messageOf(m))
		}
		return out, nil
	}
	for q := range t.Queues() {
		from, err := r.eng.OffsetByTime(topic, q, begin)
		if err != nil {
			return nil, err
		}
		p, err := readQueue(r, topic, q, from, int(limit)+1, end)
		if err != nil {
			return nil, err
		}
		for _, m := range p.Messages {
			if m.StoreTimestamp >= begin {
				out.Messages = append(out.Messages, m)
			}
		}
	}
	slices.SortStableFunc(out.Messages, func(a, b Message) int {
		if c := cmp.Compare(a.StoreTimestamp, b.StoreTimestamp); c != 0 {
			return c
		}
		return cmp.Compare(a.CommitLogOffset, b.CommitLogOffset)
	})
	if len(out.Messages) > int(limit) {
		out.Messages, out.Truncated = out.Messages[:limit], true
	}
	return out, nil
}
