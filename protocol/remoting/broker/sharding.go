package broker

import (
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// The Go remoting client keeps the sharding key of an orderly send
// (Message.WithShardingKey) in SHARDING_KEY; RocketMQ 5 clients and the
// engine know a FIFO message's group as __SHARDINGKEY. On a topic declared
// FIFO the sharding key is the message group: without it the engine would
// refuse the message as a normal one, and gRPC consumers would see no
// group to keep in order. On other topics the sharding key stays a plain
// property, as on a RocketMQ broker.

// withMessageGroup gives m, a message sent to a FIFO topic with the Go
// client's sharding key and no message group, that key as its group.
func (b *Broker) withMessageGroup(m *message.Message) {
	key, ok := message.LookupProperty(m.EncodedProperties, message.PropertyGoShardingKey)
	if !ok || len(key) == 0 {
		return
	}
	if _, ok := message.LookupProperty(m.EncodedProperties, message.PropertyShardingKey); ok {
		return
	}
	t, err := b.eng.Topic(m.Topic)
	if err != nil || t.MessageType != meta.MessageTypeFIFO {
		return
	}
	// key is a piece of the properties below their length: appending
	// leaves it as it is, even when it moves them.
	p := append(m.EncodedProperties, message.PropertyShardingKey...)
	p = append(p, 1)
	p = append(p, key...)
	m.EncodedProperties = append(p, 2)
}
