package admin

import (
	"context"
	"slices"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// How ResetOffset moved a broker's offsets (OffsetReset.Via).
const (
	// ViaBroker: the broker reset the offsets itself
	// (INVOKE_BROKER_TO_RESET_OFFSET) and told the online consumers.
	ViaBroker = "INVOKE_BROKER_TO_RESET_OFFSET"
	// ViaCommit: the client looked the offsets up and committed them
	// (SEARCH_OFFSET_BY_TIMESTAMP, UPDATE_CONSUMER_OFFSET), because the
	// broker does not reset offsets or, like Java brokers, only does so
	// while a consumer is online. Online consumers would overwrite such
	// offsets with their own.
	ViaCommit = "UPDATE_CONSUMER_OFFSET"
)

// OffsetReset reports the offsets a reset moved a group to.
type OffsetReset struct {
	Group     string        `json:"group"`
	Topic     string        `json:"topic"`
	Timestamp int64         `json:"timestamp"` // ms since the epoch
	Offsets   []QueueOffset `json:"offsets"`
}

// QueueOffset is a group's new offset in one queue.
type QueueOffset struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Offset     int64  `json:"offset"`
	Via        string `json:"via"` // ViaBroker or ViaCommit
}

// ResetOffset moves a group's offsets in every queue of topic to the
// first message stored at or after timestamp (ms since the epoch). With
// force unset, offsets only move back: a queue where the group is already
// behind that message keeps its offset.
func (c *Client) ResetOffset(ctx context.Context, group, topic string, timestamp int64, force bool) (*OffsetReset, error) {
	if group == "" || topic == "" {
		return nil, invalidf("offset reset needs a group and a topic")
	}
	route, err := c.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	masters, qd := routeMasters(route)
	if len(masters) == 0 {
		return nil, errorf(ErrNoBroker, "topic %s: its route names no broker master", topic)
	}
	out := &OffsetReset{Group: group, Topic: topic, Timestamp: timestamp, Offsets: []QueueOffset{}}
	for _, b := range masters {
		offs, err := c.resetOnBroker(ctx, b, group, topic, timestamp, force, qd[b.Name].ReadQueueNums)
		if err != nil {
			return nil, err
		}
		out.Offsets = append(out.Offsets, offs...)
	}
	slices.SortFunc(out.Offsets, func(a, b QueueOffset) int {
		return compareQueues(wire.MessageQueue{BrokerName: a.BrokerName, QueueID: a.QueueID}, wire.MessageQueue{BrokerName: b.BrokerName, QueueID: b.QueueID})
	})
	return out, nil
}

func (c *Client) resetOnBroker(ctx context.Context, b Broker, group, topic string, timestamp int64, force bool, queues int32) ([]QueueOffset, error) {
	t := brokerTarget(b)
	h := &wire.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: timestamp, IsForce: force}
	resp, err := c.invoke(ctx, t, request(wire.InvokeBrokerToResetOffset, h, nil))
	switch {
	case err == nil:
		var body struct {
			OffsetTable queueTable[int64] `json:"offsetTable"`
		}
		if len(resp.Body) > 0 {
			if err := decodeBody(t, wire.InvokeBrokerToResetOffset, resp.Body, &body); err != nil {
				return nil, err
			}
		}
		out := []QueueOffset{}
		for _, q := range sortedQueues(body.OffsetTable) {
			if q.Topic != "" && q.Topic != topic {
				continue
			}
			out = append(out, QueueOffset{BrokerName: b.Name, QueueID: q.QueueID, Offset: body.OffsetTable[q], Via: ViaBroker})
		}
		return out, nil
	case !HasCode(err, wire.RequestCodeNotSupported, wire.ConsumerNotOnline):
		return nil, err
	}

	out := []QueueOffset{}
	for id := range queues {
		to, err := c.queueOffset(ctx, t, wire.SearchOffsetByTimestamp, &wire.SearchOffsetRequestHeader{Topic: topic, QueueID: id, Timestamp: timestamp, BrokerName: b.Name})
		if err != nil {
			return nil, err
		}
		if !force {
			cur, err := c.queueOffset(ctx, t, wire.QueryConsumerOffset, &wire.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: id, BrokerName: b.Name})
			switch {
			case err == nil:
				if cur <= to {
					out = append(out, QueueOffset{BrokerName: b.Name, QueueID: id, Offset: cur, Via: ViaCommit})
					continue
				}
			case !HasCode(err, wire.QueryNotFound):
				return nil, err
			}
		}
		uh := &wire.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: id, CommitOffset: to, BrokerName: b.Name}
		if _, err := c.invoke(ctx, t, request(wire.UpdateConsumerOffset, uh, nil)); err != nil {
			return nil, err
		}
		out = append(out, QueueOffset{BrokerName: b.Name, QueueID: id, Offset: to, Via: ViaCommit})
	}
	return out, nil
}
