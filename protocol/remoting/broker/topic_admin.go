package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Topic administration: UPDATE_AND_CREATE_TOPIC (17),
// DELETE_TOPIC_IN_BROKER (215), GET_ALL_TOPIC_CONFIG (21) and
// GET_TOPIC_CONFIG (351). Changes fire TopicsChanged so the name servers
// learn them.

// attrMessageType is the topic attribute holding the message type
// (RocketMQ 5's "message.type": NORMAL, FIFO, DELAY, TRANSACTION, MIXED).
const attrMessageType = "message.type"

// updateAndCreateTopic creates a topic or updates an existing one: queue
// counts, permission, and attributes given as changes
// ("+message.type=FIFO,-key"). The message.type attribute sets the
// topic's message type.
func (b *Broker) updateAndCreateTopic(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.CreateTopicRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	t := meta.Topic{Name: h.Topic, ReadQueues: h.ReadQueueNums, WriteQueues: h.WriteQueueNums, Perm: meta.Perm(h.Perm)}
	old, err := b.eng.Topic(h.Topic)
	switch {
	case err == nil:
		t.MessageType, t.System = old.MessageType, old.System
		t.Attributes = maps.Clone(old.Attributes)
	case !errors.Is(err, engine.ErrTopicNotFound):
		return errorResponse(req, err)
	}
	if t.Perm == 0 {
		// Java brokers keep perm 0 (no access); the engine reads 0 as its
		// default, so refuse rather than open the topic.
		return errorResponse(req, fmt.Errorf("%w: perm 0 would deny all access to %s", errInvalidRequest, h.Topic))
	}
	for _, a := range h.Attributes {
		if a.Key == attrMessageType {
			mt := meta.MessageTypeUnspecified
			if !a.Delete {
				if mt, err = meta.ParseMessageType(a.Value); err != nil {
					return errorResponse(req, fmt.Errorf("%w: %w", errInvalidRequest, err))
				}
			}
			t.MessageType = mt
			continue
		}
		if t.Attributes == nil {
			t.Attributes = map[string]string{}
		}
		if a.Delete {
			delete(t.Attributes, a.Key)
		} else {
			t.Attributes[a.Key] = a.Value
		}
	}
	if err := b.eng.CreateTopic(t); err != nil {
		return errorResponse(req, err)
	}
	b.known.Store(t.Name, struct{}{})
	b.signalTopics()
	return success(req)
}

// deleteTopicInBroker deletes a topic, its queues and the offsets kept
// for it.
func (b *Broker) deleteTopicInBroker(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.DeleteTopicRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	if err := b.eng.DeleteTopic(h.Topic); err != nil {
		return errorResponse(req, err)
	}
	b.forgetTopic(h.Topic)
	return success(req)
}

// getAllTopicConfig answers every topic's configuration.
func (b *Broker) getAllTopicConfig(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	w := TopicConfigWrapper{TopicConfigTable: map[string]namesrv.TopicConfig{}, DataVersion: nowVersion()}
	for _, t := range b.TopicConfigs() {
		w.TopicConfigTable[t.TopicName] = t
	}
	return jsonResponse(req, w)
}

// getTopicConfig answers one topic's configuration (Java's
// TopicConfigAndQueueMapping without a mapping: Karman has no static
// topics), or TOPIC_NOT_EXIST. RocketMQ's dashboard and mqadmin read a
// topic's settings this way.
func (b *Broker) getTopicConfig(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.TopicRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	t, err := b.eng.Topic(h.Topic)
	if err == nil && t.Name == message.TopicAutoCreate && !b.opts.AutoCreateTopics {
		err = fmt.Errorf("%w: %s (auto-creation is off)", engine.ErrTopicNotFound, h.Topic)
	}
	if err != nil {
		return errorResponse(req, err)
	}
	return jsonResponse(req, topicConfigOf(t))
}

// jsonResponse answers SUCCESS with v as the JSON body.
func jsonResponse(req *wire.Command, v any) *wire.Command {
	body, err := wire.EncodeJSONBody(v)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.Body = body
	return resp
}
