package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// QueryRoute answers the route of a topic: this server (Options.BrokerName,
// id 0, reached at Options.Endpoint, or at the address the client
// dialled when no endpoint is configured) holds queues 0..n-1 of the
// topic; with Options.Groups, the other broker groups serving it follow,
// each with its own queues and its master's endpoint, as RocketMQ's proxy
// answers in cluster mode. Every queue carries the message types the
// topic accepts here.
//
// Clients send and simple-consume through queue 0 only, and the server
// chooses the real queue itself (SendMessage, ReceiveMessage), so queue 0
// must be readable and writable whenever the topic is.
//
// An unknown topic is TOPIC_NOT_FOUND, unless Options.AutoCreateTopics is
// set: then it is created with Options.DefaultQueues queues, as its first
// send would create it, so that a producer started with the topic works
// before it sends anything.
//
// A client still starting gets the answer to its settings again shortly
// after (startup.go).
func (s *Server) QueryRoute(ctx context.Context, req *rmqpb.QueryRouteRequest) (*rmqpb.QueryRouteResponse, error) {
	defer s.startups.routeQueried(sessionOf(ctx))
	name := convert.ResourceName(req.GetTopic())
	if name == "" {
		return &rmqpb.QueryRouteResponse{Status: statusOf(fmt.Errorf("%w: QueryRoute names no topic", errIllegalTopic))}, nil
	}
	if err := message.ValidateTopic(name); err != nil {
		return &rmqpb.QueryRouteResponse{Status: statusOf(fmt.Errorf("%w: %w", errIllegalTopic, err))}, nil
	}
	ep := s.endpoint
	if len(ep.GetAddresses()) == 0 {
		ep = dialled(req.GetEndpoints())
	}
	groups, err := s.routedGroups(ctx, name, ep, true)
	if err != nil {
		return &rmqpb.QueryRouteResponse{Status: statusOf(err)}, nil
	}
	var mqs []*rmqpb.MessageQueue
	for _, g := range groups {
		mqs = append(mqs, routeQueues(g.cfg, req.GetTopic(), g.broker)...)
	}
	return &rmqpb.QueryRouteResponse{Status: okStatus(), MessageQueues: mqs}, nil
}

// routeTopic returns the configuration of topic name, creating the topic
// when Options.AutoCreateTopics allows.
func (s *Server) routeTopic(name string) (meta.Topic, error) {
	cfg, err := s.eng.Topic(name)
	if err == nil || !errors.Is(err, engine.ErrTopicNotFound) || !s.opts.AutoCreateTopics {
		return cfg, err
	}
	if message.ValidateUserTopic(name) != nil {
		return cfg, err // system, retry and dead-letter topics are not created for clients
	}
	n := s.opts.DefaultQueues
	cfg, created, cerr := s.eng.EnsureTopic(meta.Topic{Name: name, ReadQueues: n, WriteQueues: n, Perm: meta.PermRW})
	if cerr != nil {
		return cfg, fmt.Errorf("creating topic %s: %w", name, cerr)
	}
	if created {
		s.log.Info("topic created for a route query", "topic", name, "queues", n)
	}
	return cfg, nil
}

// dialled returns the first address of the endpoints a client dialled, as
// the route's broker endpoint of a server configured without one.
func dialled(ep *rmqpb.Endpoints) *rmqpb.Endpoints {
	if len(ep.GetAddresses()) == 0 {
		return &rmqpb.Endpoints{Scheme: rmqpb.AddressScheme_IPv4}
	}
	a := ep.GetAddresses()[0]
	return &rmqpb.Endpoints{Scheme: ep.GetScheme(), Addresses: []*rmqpb.Address{{Host: a.GetHost(), Port: a.GetPort()}}}
}

// routeQueues returns the queues of a topic as one broker holds them,
// naming the topic as the client did (topic).
func routeQueues(cfg meta.Topic, topic *rmqpb.Resource, broker *rmqpb.Broker) []*rmqpb.MessageQueue {
	res := clientResource(topic)
	types := acceptedTypes(cfg.MessageType)
	n := cfg.Queues()
	out := make([]*rmqpb.MessageQueue, n)
	for id := range n {
		out[id] = &rmqpb.MessageQueue{
			Topic:              res,
			Id:                 id,
			Permission:         queuePermission(cfg, id),
			Broker:             broker,
			AcceptMessageTypes: types,
		}
	}
	return out
}

// queuePermission is what clients may do with queue id of a topic: read
// it when it is one of the read queues of a readable topic, write it when
// it is one of the write queues of a writable topic.
func queuePermission(cfg meta.Topic, id int32) rmqpb.Permission {
	r := id < cfg.ReadQueues && cfg.Perm.Readable()
	w := id < cfg.WriteQueues && cfg.Perm.Writable()
	switch {
	case r && w:
		return rmqpb.Permission_READ_WRITE
	case r:
		return rmqpb.Permission_READ
	case w:
		return rmqpb.Permission_WRITE
	}
	return rmqpb.Permission_NONE
}

// acceptedTypes lists the message types a topic of type t takes, as
// RocketMQ's proxy does: one type, or all four for a MIXED or untyped
// topic. Producers refuse to send a message whose type is not listed.
func acceptedTypes(t meta.MessageType) []rmqpb.MessageType {
	switch t {
	case meta.MessageTypeNormal:
		return []rmqpb.MessageType{rmqpb.MessageType_NORMAL}
	case meta.MessageTypeFIFO:
		return []rmqpb.MessageType{rmqpb.MessageType_FIFO}
	case meta.MessageTypeDelay:
		return []rmqpb.MessageType{rmqpb.MessageType_DELAY}
	case meta.MessageTypeTransaction:
		return []rmqpb.MessageType{rmqpb.MessageType_TRANSACTION}
	}
	return []rmqpb.MessageType{rmqpb.MessageType_NORMAL, rmqpb.MessageType_FIFO, rmqpb.MessageType_DELAY, rmqpb.MessageType_TRANSACTION}
}
