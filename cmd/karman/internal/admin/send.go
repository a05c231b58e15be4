package admin

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Outgoing is a message SendMessage sends.
type Outgoing struct {
	Topic string
	Tag   string
	Keys  []string
	// Properties are user properties; they may not name the properties
	// the client sets itself (TAGS, KEYS, UNIQ_KEY, WAIT).
	Properties map[string]string
	Body       []byte
	// Queue is the queue to send to; -1 picks one by the message id.
	Queue int32
}

// Sent reports where SendMessage stored a message.
type Sent struct {
	Topic       string `json:"topic"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
}

// reservedProperties are set by SendMessage from Outgoing's fields.
var reservedProperties = []string{message.PropertyTags, message.PropertyKeys, message.PropertyUniqKey, message.PropertyWait}

// SendMessage sends one message with SEND_MESSAGE to a master that has
// the topic writable, as a producer of the group KARMAN_ADMIN would, with
// a fresh client message id. The topic must exist.
func (c *Client) SendMessage(ctx context.Context, o Outgoing) (*Sent, error) {
	if err := message.ValidateTopic(o.Topic); err != nil {
		return nil, invalidName(err)
	}
	for k := range o.Properties {
		for _, r := range reservedProperties {
			if k == r {
				return nil, invalidf("property %s is set by the command itself; use --tag or --keys", k)
			}
		}
		if k == "" || strings.ContainsAny(k, "\x01\x02") || strings.ContainsAny(o.Properties[k], "\x01\x02") {
			return nil, invalidf("property %q: names must be non-empty and neither name nor value may hold the bytes 0x01 or 0x02", k)
		}
	}
	route, err := c.Route(ctx, o.Topic)
	if err != nil {
		return nil, err
	}
	masters, qd := routeMasters(route)
	var to *Broker
	for i, b := range masters {
		if q := qd[b.Name]; q.WriteQueueNums > 0 && q.Perm&wire.PermWrite != 0 {
			to = &masters[i]
			break
		}
	}
	if to == nil {
		return nil, errorf(ErrNoBroker, "topic %s has no writable queue", o.Topic)
	}
	n := qd[to.Name].WriteQueueNums
	props := maps.Clone(o.Properties)
	if props == nil {
		props = map[string]string{}
	}
	id := message.NewGenerator(netip.AddrFrom4([4]byte{127, 0, 0, 1})).Next()
	props[message.PropertyUniqKey] = id
	props[message.PropertyWait] = "true"
	if o.Tag != "" {
		props[message.PropertyTags] = o.Tag
	}
	if len(o.Keys) > 0 {
		props[message.PropertyKeys] = strings.Join(o.Keys, message.KeySeparator)
	}
	queue := o.Queue
	switch {
	case queue < 0:
		queue = pickQueue(props, n)
	case queue >= n:
		return nil, invalidf("queue %d: topic %s has %d write queues on broker %s", queue, o.Topic, n, to.Name)
	}
	h := &wire.SendMessageRequestHeader{
		ProducerGroup:         adminProducerGroup,
		Topic:                 o.Topic,
		DefaultTopic:          message.TopicAutoCreate,
		DefaultTopicQueueNums: 4,
		QueueID:               queue,
		BornTimestamp:         time.Now().UnixMilli(),
		Properties:            string(message.AppendProperties(nil, props)),
		BrokerName:            to.Name,
	}
	t := brokerTarget(*to)
	resp, err := c.invoke(ctx, t, request(wire.SendMessage, h, o.Body))
	if err != nil {
		return nil, err
	}
	var sh wire.SendMessageResponseHeader
	if err := resp.DecodeHeader(&sh); err != nil {
		return nil, fmt.Errorf("%s answered %s without a valid header: %w", t, wire.SendMessage, err)
	}
	return &Sent{Topic: o.Topic, MsgID: id, OffsetMsgID: sh.MsgID, BrokerName: to.Name, QueueID: sh.QueueID, QueueOffset: sh.QueueOffset}, nil
}

// DefaultBrowseCount is how many messages Browse returns when not told.
const DefaultBrowseCount = 32

// Browsed is a page of a queue read from an offset.
type Browsed struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	// MinOffset and MaxOffset bound the queue's stored messages.
	MinOffset int64      `json:"minOffset"`
	MaxOffset int64      `json:"maxOffset"`
	Messages  []*Message `json:"messages"`
	// NextOffset is the offset to browse from for the following page.
	NextOffset int64 `json:"nextOffset"`
}

// BrowseQuery chooses the messages Browse reads.
type BrowseQuery struct {
	Topic string
	// Broker names the broker when the topic is on several; "" takes the
	// first master of the route.
	Broker string
	Queue  int32
	From   int64
	// Count is the most messages returned; 0 means DefaultBrowseCount.
	Count int
}

// Browse reads messages of one queue from an offset with PULL_MESSAGE as
// the tools group (message.GroupTools), committing nothing: what a
// consumer of the queue would get, without a filter.
func (c *Client) Browse(ctx context.Context, q BrowseQuery) (*Browsed, error) {
	if err := message.ValidateTopic(q.Topic); err != nil {
		return nil, invalidName(err)
	}
	switch {
	case q.Queue < 0:
		return nil, invalidf("queue %d: must be 0 or more", q.Queue)
	case q.From < 0:
		return nil, invalidf("offset %d: must be 0 or more", q.From)
	case q.Count < 0:
		return nil, invalidf("count %d: must be positive", q.Count)
	case q.Count == 0:
		q.Count = DefaultBrowseCount
	}
	route, err := c.Route(ctx, q.Topic)
	if err != nil {
		return nil, err
	}
	masters, qd := routeMasters(route)
	var b *Broker
	for i := range masters {
		if q.Broker == "" || masters[i].Name == q.Broker {
			b = &masters[i]
			break
		}
	}
	if b == nil {
		return nil, errorf(ErrNoBroker, "topic %s is not on broker %s", q.Topic, q.Broker)
	}
	if n := qd[b.Name].ReadQueueNums; q.Queue >= n {
		return nil, invalidf("queue %d: topic %s has %d read queues on broker %s", q.Queue, q.Topic, n, b.Name)
	}
	t := brokerTarget(*b)
	out := &Browsed{Topic: q.Topic, BrokerName: b.Name, QueueID: q.Queue, Messages: []*Message{}}
	if out.MinOffset, err = c.queueOffset(ctx, t, wire.GetMinOffset,
		&wire.GetMinOffsetRequestHeader{Topic: q.Topic, QueueID: q.Queue, BrokerName: b.Name}); err != nil {
		return nil, err
	}
	if out.MaxOffset, err = c.queueOffset(ctx, t, wire.GetMaxOffset,
		&wire.GetMaxOffsetRequestHeader{Topic: q.Topic, QueueID: q.Queue, Committed: true, BrokerName: b.Name}); err != nil {
		return nil, err
	}
	r := queueRead{c: c, b: *b, topic: q.Topic, queue: q.Queue}
	off := max(q.From, out.MinOffset)
	for off < out.MaxOffset && len(out.Messages) < q.Count {
		msgs, next, err := r.pull(ctx, t, off)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if len(out.Messages) == q.Count {
				break
			}
			out.Messages = append(out.Messages, messageOf(m, b.Name))
			off = m.QueueOffset + 1
		}
		if len(msgs) == 0 {
			if next <= off {
				break
			}
			off = next
		}
	}
	out.NextOffset = off
	return out, nil
}
