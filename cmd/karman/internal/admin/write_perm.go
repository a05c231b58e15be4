package admin

import (
	"context"
	"slices"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// WritePermChange is what each name server did to a broker group's write
// permission.
type WritePermChange struct {
	Broker string `json:"broker"`
	// Writable is the permission asked for: false after a wipe.
	Writable    bool                `json:"writable"`
	NameServers []NameServerChanged `json:"nameServers"`
}

// NameServerChanged is one name server's answer: how many topics of the
// broker it changed.
type NameServerChanged struct {
	Addr   string `json:"addr"`
	Topics int32  `json:"topics"`
}

// SetBrokerWritable takes the write permission of broker group broker away
// in every topic, on every name server (WIPE_WRITE_PERM_OF_BROKER), or
// gives it back (ADD_WRITE_PERM_OF_BROKER). Producers stop sending to a
// broker without it once they refresh their routes (within 30 s for
// RocketMQ clients), while consumers go on reading it: the way to drain a
// broker before maintenance. A broker no name server knows is
// ErrNoBroker.
func (c *Client) SetBrokerWritable(ctx context.Context, broker string, writable bool) (*WritePermChange, error) {
	brokers, err := c.Brokers(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(brokers, func(b Broker) bool { return b.Name == broker }) {
		return nil, errorf(ErrNoBroker, "no name server knows broker %s", broker)
	}
	code := wire.WipeWritePermOfBroker
	if writable {
		code = wire.AddWritePermOfBroker
	}
	out := &WritePermChange{Broker: broker, Writable: writable, NameServers: []NameServerChanged{}}
	for _, addr := range c.opts.NameServers {
		resp, err := c.invoke(ctx, nameServer(addr), request(code, &wire.BrokerNameRequestHeader{BrokerName: broker}, nil))
		if err != nil {
			return nil, err
		}
		n, err := changedTopics(resp, writable)
		if err != nil {
			return nil, badBody(nameServer(addr), code, err)
		}
		out.NameServers = append(out.NameServers, NameServerChanged{Addr: addr, Topics: n})
	}
	return out, nil
}

// changedTopics reads the topic count of a WIPE_ or ADD_WRITE_PERM answer.
func changedTopics(resp *wire.Command, added bool) (int32, error) {
	if added {
		var h wire.AddWritePermResponseHeader
		err := resp.DecodeHeader(&h)
		return h.AddTopicCount, err
	}
	var h wire.WipeWritePermResponseHeader
	err := resp.DecodeHeader(&h)
	return h.WipeTopicCount, err
}
