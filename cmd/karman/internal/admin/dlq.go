package admin

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// How ResendDeadLetter put the message back (Resend.Via).
const (
	// ViaResend: the broker did it (KARMAN_RESEND_DEAD_LETTER).
	ViaResend = "KARMAN_RESEND_DEAD_LETTER"
	// ViaSend: the broker lacks that request, so the client read the dead
	// letter and sent it again (SEND_MESSAGE).
	ViaSend = "SEND_MESSAGE"
)

// adminProducerGroup is the producer group of the messages the client
// sends itself.
const adminProducerGroup = "KARMAN_ADMIN"

// Resend reports a dead letter put back on its topic.
type Resend struct {
	Group        string `json:"group"`
	DeadLetterID string `json:"deadLetterId"` // the id asked for
	Topic        string `json:"topic"`        // where the message went
	MsgID        string `json:"msgId"`
	OffsetMsgID  string `json:"offsetMsgId"`
	BrokerName   string `json:"brokerName"`
	QueueID      int32  `json:"queueId"`
	QueueOffset  int64  `json:"queueOffset"`
	Via          string `json:"via"` // ViaResend or ViaSend
}

// ResendDeadLetter puts the dead letter msgID of group back on the topic
// it came from. It asks each broker that may hold the group's dead
// letters with KARMAN_RESEND_DEAD_LETTER; a broker without that request
// has the dead letter read (QUERY_MESSAGE or VIEW_MESSAGE_BY_ID on
// %DLQ%<group>) and sent again with SEND_MESSAGE, keeping its client
// message id, keys and properties.
func (c *Client) ResendDeadLetter(ctx context.Context, group, msgID string) (*Resend, error) {
	if err := message.ValidateGroup(group); err != nil {
		return nil, invalidName(err)
	}
	if msgID == "" {
		return nil, invalidf("empty message id")
	}
	dlq := message.DLQTopic(group)
	brokers, err := c.brokersFor(ctx, dlq)
	if errors.Is(err, ErrTopicNotFound) {
		brokers, err = c.masters(ctx, "")
	}
	if err != nil {
		return nil, err
	}
	for _, b := range brokers {
		t := brokerTarget(b)
		resp, err := c.invoke(ctx, t, request(wire.KarmanResendDeadLetter, &wire.ResendDeadLetterRequestHeader{Group: group, MsgID: msgID}, nil))
		switch {
		case err == nil:
			var h wire.ResendDeadLetterResponseHeader
			if err := resp.DecodeHeader(&h); err != nil {
				return nil, fmt.Errorf("%s answered %s without a valid header: %w", t, wire.KarmanResendDeadLetter, err)
			}
			return &Resend{Group: group, DeadLetterID: msgID, Topic: h.Topic, MsgID: h.MsgID, OffsetMsgID: h.OffsetMsgID,
				BrokerName: b.Name, QueueID: h.QueueID, QueueOffset: h.QueueOffset, Via: ViaResend}, nil
		case HasCode(err, wire.QueryNotFound):
			continue
		case !HasCode(err, wire.RequestCodeNotSupported):
			return nil, err
		}
		dead, err := c.findDeadLetter(ctx, b, dlq, msgID)
		if err != nil {
			return nil, err
		}
		if dead == nil {
			continue
		}
		r, err := c.resendBySend(ctx, b, dead)
		if err != nil {
			return nil, err
		}
		r.Group, r.DeadLetterID = group, msgID
		return r, nil
	}
	return nil, errorf(ErrMessageNotFound, "consumer group %s has no dead letter %s", group, msgID)
}

// findDeadLetter reads a dead letter from broker b; nil when it has none
// with that id.
func (c *Client) findDeadLetter(ctx context.Context, b Broker, dlq, id string) (*Message, error) {
	if _, offset, err := message.ParseOffsetID(id); err == nil {
		m, err := c.viewMessage(ctx, b, offset, dlq)
		if err != nil {
			return nil, err
		}
		if m != nil && m.Topic == dlq && strings.EqualFold(m.OffsetMsgID, id) {
			return m, nil
		}
	}
	h := &wire.QueryMessageRequestHeader{Topic: dlq, Key: id, MaxNum: DefaultQueryMax, EndTimestamp: maxTimestamp, UniqueKeyQuery: true}
	msgs, err := c.queryMessages(ctx, b, h)
	if err != nil {
		return nil, err
	}
	var found *Message
	for _, m := range msgs {
		if m.Topic == dlq && m.stored.UniqKey() == id && (found == nil || m.StoreTimestamp > found.StoreTimestamp) {
			found = m
		}
	}
	return found, nil
}

// resendDropped are the properties a dead letter loses when it is sent
// again: where it was dead-lettered from, and scheduling and transaction
// state that no longer applies.
var resendDropped = []string{
	message.PropertyDLQOriginTopic, message.PropertyDLQOriginMessageID, message.PropertyRetryTopic,
	message.PropertyDelayLevel, message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec,
	message.PropertyTimerDelayMS, message.PropertyRealTopic, message.PropertyRealQueueID,
	message.PropertyTransactionPrepared, message.PropertyMinOffset, message.PropertyMaxOffset,
	"TIMER_SRC",
}

// resendBySend sends a copy of a dead letter read from broker from to its
// original topic.
func (c *Client) resendBySend(ctx context.Context, from Broker, dead *Message) (*Resend, error) {
	m := dead.stored
	origin := m.DeadLetterOrigin()
	if origin == "" {
		return nil, fmt.Errorf("dead letter %s does not say which topic it came from (no %s or %s property)",
			dead.MsgID, message.PropertyDLQOriginTopic, message.PropertyRetryTopic)
	}
	route, err := c.Route(ctx, origin)
	if err != nil {
		return nil, err
	}
	masters, qd := routeMasters(route)
	var to *Broker
	for i, b := range masters {
		q := qd[b.Name]
		if q.Perm&wire.PermWrite == 0 || q.WriteQueueNums <= 0 {
			continue
		}
		if to == nil || b.Name == from.Name {
			to = &masters[i]
		}
	}
	if to == nil {
		return nil, errorf(ErrNoBroker, "topic %s has no writable queue", origin)
	}
	props := maps.Clone(m.Properties)
	for _, k := range resendDropped {
		delete(props, k)
	}
	h := &wire.SendMessageRequestHeader{
		ProducerGroup:         adminProducerGroup,
		Topic:                 origin,
		DefaultTopic:          message.TopicAutoCreate,
		DefaultTopicQueueNums: 4,
		QueueID:               pickQueue(props, qd[to.Name].WriteQueueNums),
		SysFlag:               m.SysFlag & (message.SysFlagCompressed | message.SysFlagMultiTags | message.SysFlagCompressionMask),
		BornTimestamp:         m.BornTimestamp,
		Flag:                  m.Flag,
		Properties:            string(message.AppendProperties(nil, props)),
		BrokerName:            to.Name,
	}
	t := brokerTarget(*to)
	resp, err := c.invoke(ctx, t, request(wire.SendMessage, h, m.Body))
	if err != nil {
		return nil, err
	}
	var sh wire.SendMessageResponseHeader
	if err := resp.DecodeHeader(&sh); err != nil {
		return nil, fmt.Errorf("%s answered %s without a valid header: %w", t, wire.SendMessage, err)
	}
	msgID := props[message.PropertyUniqKey]
	if msgID == "" {
		msgID = sh.MsgID
	}
	return &Resend{Topic: origin, MsgID: msgID, OffsetMsgID: sh.MsgID, BrokerName: to.Name,
		QueueID: sh.QueueID, QueueOffset: sh.QueueOffset, Via: ViaSend}, nil
}

// pickQueue chooses the queue a resent message goes to: by its message
// group (sharding key) when it has one, so that FIFO order holds, else by
// its id.
func pickQueue(props map[string]string, n int32) int32 {
	if n <= 1 {
		return 0
	}
	key := props[message.PropertyShardingKey]
	if key == "" {
		key = props[message.PropertyGoShardingKey]
	}
	if key == "" {
		key = props[message.PropertyUniqKey]
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32() % uint32(n))
}

// ResendFailure is a dead letter that could not be put back.
type ResendFailure struct {
	DeadLetterID string `json:"deadLetterId"`
	Error        string `json:"error"`
}

// ResendReport is the outcome of putting back several dead letters.
type ResendReport struct {
	Group  string          `json:"group"`
	Resent []*Resend       `json:"resent"`
	Failed []ResendFailure `json:"failed"`
}

// ResendDeadLetters puts back each dead letter of group named in ids, one
// after another, as ResendDeadLetter does, and calls done (when not nil)
// after each. A dead letter that fails is reported in the result and the
// others go on; only an invalid group or the end of ctx stops it early,
// with the report so far and the error.
func (c *Client) ResendDeadLetters(ctx context.Context, group string, ids []string, done func()) (*ResendReport, error) {
	if err := message.ValidateGroup(group); err != nil {
		return nil, invalidName(err)
	}
	r := &ResendReport{Group: group, Resent: []*Resend{}, Failed: []ResendFailure{}}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		res, err := c.ResendDeadLetter(ctx, group, id)
		if err != nil {
			r.Failed = append(r.Failed, ResendFailure{DeadLetterID: id, Error: err.Error()})
		} else {
			r.Resent = append(r.Resent, res)
		}
		if done != nil {
			done()
		}
	}
	return r, nil
}
