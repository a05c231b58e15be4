package broker

import (
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/namesrv"
)

// Name-server registration. The broker does not talk to name servers
// itself: whoever registers it (a namesrv.Registrar) reads TopicConfigs
// for the topics to announce and registers again when TopicsChanged fires.

// TopicConfigs returns every topic of the engine as the name servers
// should route it, sorted by name: user topics, the retry and dead-letter
// topics of consumer groups, and, when Options.AutoCreateTopics is on,
// the auto-create template TBW102 (with its INHERIT permission, so
// producers of unknown topics fall back to it).
func (b *Broker) TopicConfigs() []namesrv.TopicConfig {
	topics := b.eng.Topics()
	out := make([]namesrv.TopicConfig, 0, len(topics))
	for _, t := range topics {
		if t.Name == message.TopicAutoCreate && !b.opts.AutoCreateTopics {
			continue
		}
		out = append(out, topicConfigOf(t))
	}
	return out
}

// TopicsChanged returns a channel that receives a value after topics were
// created or deleted: through this broker, another front-end or the
// engine itself (topics created on a first send, retry and dead-letter
// topics of consumer groups), as the engine's events report them. Changes
// made meanwhile are coalesced into one value. Re-register periodically
// as well: the engine drops events for a subscriber that falls behind.
func (b *Broker) TopicsChanged() <-chan struct{} { return b.topicsChanged }

// noteTopic records that topic exists and signals TopicsChanged when it
// was not known yet. It is cheap enough to call after every send.
func (b *Broker) noteTopic(topic string) {
	if _, known := b.known.Load(topic); known {
		return // without LoadOrStore's copy of the key
	}
	if _, loaded := b.known.LoadOrStore(topic, struct{}{}); !loaded {
		b.signalTopics()
	}
}

// noteExisting calls noteTopic when the engine has the topic (one it may
// have created by itself).
func (b *Broker) noteExisting(topic string) {
	if _, known := b.known.Load(topic); known {
		return
	}
	if _, err := b.eng.Topic(topic); err == nil {
		b.noteTopic(topic)
	}
}

// forgetTopic records that topic was deleted.
func (b *Broker) forgetTopic(topic string) {
	b.known.Delete(topic)
	b.signalTopics()
}

func (b *Broker) signalTopics() {
	select {
	case b.topicsChanged <- struct{}{}:
	default:
	}
}

// topicConfigOf turns an engine topic into its RocketMQ configuration.
func topicConfigOf(t meta.Topic) namesrv.TopicConfig {
	c := namesrv.TopicConfig{
		TopicName:       t.Name,
		ReadQueueNums:   t.ReadQueues,
		WriteQueueNums:  t.WriteQueues,
		Perm:            int32(t.Perm),
		TopicFilterType: namesrv.FilterSingleTag,
		Order:           t.MessageType == meta.MessageTypeFIFO,
		Attributes:      map[string]string{},
	}
	for k, v := range t.Attributes {
		c.Attributes[k] = v
	}
	if t.MessageType != meta.MessageTypeUnspecified {
		c.Attributes[attrMessageType] = t.MessageType.String()
	}
	return c
}
