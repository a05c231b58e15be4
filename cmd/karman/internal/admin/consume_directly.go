package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// DirectConsumption is how a consumer's listener took a message it was
// handed out of turn (CONSUME_MESSAGE_DIRECTLY).
type DirectConsumption struct {
	MsgID    string `json:"msgId"`
	Topic    string `json:"topic"`
	Group    string `json:"group"`
	ClientID string `json:"clientId"`
	Broker   string `json:"broker"`
	// Result is Java's name of the listener's answer: CR_SUCCESS,
	// CR_LATER, CR_ROLLBACK, CR_COMMIT, CR_THROW_EXCEPTION or
	// CR_RETURN_NULL.
	Result      string `json:"result"`
	Remark      string `json:"remark"`
	SpentMillis int64  `json:"spentMillis"`
}

// directResults are the results in the order of Java's CMResult, which
// the Go client sends as numbers.
var directResults = []string{"CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL"}

// ConsumeDirectly hands the message id names (as GetMessage finds it,
// optionally in topic) to a consumer of group, clientID or else the first
// of the group's consumers connected to the message's broker, and returns
// how its listener took it. The broker passes the message on to the
// consumer; its committed offsets do not change.
func (c *Client) ConsumeDirectly(ctx context.Context, id, topic, group, clientID string) (*DirectConsumption, error) {
	m, err := c.GetMessage(ctx, id, topic)
	if err != nil {
		return nil, err
	}
	masters, err := c.masters(ctx, "")
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(masters, func(b Broker) bool { return b.Name == m.BrokerName })
	if i < 0 {
		return nil, errorf(ErrNoBroker, "no master of broker %s, which stores message %s", m.BrokerName, id)
	}
	b := masters[i]
	if clientID == "" {
		members, err := c.membersOn(ctx, b, group)
		if err != nil {
			return nil, err
		}
		if len(members) == 0 {
			return nil, errorf(ErrConsumerOffline, "no consumer of group %s is connected to broker %s", group, b.Name)
		}
		clientID = slices.Sorted(maps.Keys(members))[0]
	}
	t := brokerTarget(b)
	h := &wire.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: group, ClientID: clientID, MsgID: m.OffsetMsgID, BrokerName: b.Name, Topic: m.Topic}
	resp, err := c.invoke(ctx, t, request(wire.ConsumeMessageDirectly, h, nil))
	if err != nil {
		return nil, err
	}
	var body struct {
		ConsumeResult  json.RawMessage `json:"consumeResult"`
		Remark         string          `json:"remark"`
		SpentTimeMills int64           `json:"spentTimeMills"`
	}
	if err := decodeBody(t, wire.ConsumeMessageDirectly, resp.Body, &body); err != nil {
		return nil, err
	}
	result, err := directResult(body.ConsumeResult)
	if err != nil {
		return nil, badBody(t, wire.ConsumeMessageDirectly, err)
	}
	return &DirectConsumption{MsgID: id, Topic: m.Topic, Group: group, ClientID: clientID, Broker: b.Name,
		Result: result, Remark: body.Remark, SpentMillis: body.SpentTimeMills}, nil
}

// directResult reads a consume result given as Java's name or as its
// ordinal.
func directResult(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n >= len(directResults) {
		return "", fmt.Errorf("consumeResult %s is neither a name nor one of %d ordinals", raw, len(directResults))
	}
	return directResults[n], nil
}
