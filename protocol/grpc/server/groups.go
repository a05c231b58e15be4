package server

import (
	"context"
	"errors"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// GroupRoute is another broker group serving a topic, as the name servers
// route it: its queues and permission, and where its master's gRPC
// front-end is reached.
type GroupRoute struct {
	BrokerName              string
	ReadQueues, WriteQueues int32
	Perm                    meta.Perm
	// Endpoint is the "host:port" of the group master's gRPC endpoint.
	Endpoint string
}

// routedGroup is a broker group's part of a route: its topic
// configuration (its queues and permission, this server's message type)
// and its broker.
type routedGroup struct {
	cfg    meta.Topic
	broker *rmqpb.Broker
}

// otherGroups asks Options.Groups for the groups besides this server's
// that serve topic, keeping those whose endpoint parses. mt is the
// topic's message type here (untyped when this server does not hold it).
func (s *Server) otherGroups(ctx context.Context, topic string, mt meta.MessageType) []routedGroup {
	if s.opts.Groups == nil {
		return nil
	}
	var out []routedGroup
	for _, g := range s.opts.Groups(ctx, topic) {
		if g.BrokerName == s.opts.BrokerName || g.BrokerName == "" {
			continue // this server's own group is answered from its engine
		}
		ep, err := endpointOf(g.Endpoint)
		if err != nil || len(ep.GetAddresses()) == 0 {
			s.log.Warn("route: a broker group's gRPC endpoint is unusable", "topic", topic, "broker", g.BrokerName, "endpoint", g.Endpoint, "err", err)
			continue
		}
		out = append(out, routedGroup{
			cfg:    meta.Topic{Name: topic, ReadQueues: g.ReadQueues, WriteQueues: g.WriteQueues, Perm: g.Perm, MessageType: mt},
			broker: &rmqpb.Broker{Name: g.BrokerName, Id: 0, Endpoints: ep},
		})
	}
	return out
}

// routedGroups returns every broker group serving topic name: this
// server's (ep is its endpoint), unless it does not hold the topic, and
// the others Options.Groups knows. A topic no group holds is
// TOPIC_NOT_FOUND, or created here when Options.AutoCreateTopics allows
// (route.go).
func (s *Server) routedGroups(ctx context.Context, name string, ep *rmqpb.Endpoints, create bool) ([]routedGroup, error) {
	own, err := s.eng.Topic(name)
	if errors.Is(err, engine.ErrTopicNotFound) {
		if others := s.otherGroups(ctx, name, meta.MessageTypeUnspecified); len(others) > 0 {
			return others, nil
		}
		if create {
			own, err = s.routeTopic(name)
		}
	}
	if err != nil {
		return nil, err
	}
	return append([]routedGroup{{cfg: own, broker: &rmqpb.Broker{Name: s.opts.BrokerName, Id: 0, Endpoints: ep}}},
		s.otherGroups(ctx, name, own.MessageType)...), nil
}
