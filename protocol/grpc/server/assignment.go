package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// QueryAssignment tells a push consumer which queues of a topic to
// receive from, as RocketMQ's proxy does. A FIFO group gets one
// assignment per readable queue; any other group one per broker (this
// server), with queue id -1, since receives pop from every queue and the
// group's consumers share them message by message. Assignments name this
// server's endpoint (Options.Endpoint, else the endpoint the client
// dialled); with Options.Groups, the other broker groups serving the
// topic get theirs too, naming their masters' endpoints. A topic with no
// readable queue is FORBIDDEN.
func (s *Server) QueryAssignment(ctx context.Context, req *rmqpb.QueryAssignmentRequest) (*rmqpb.QueryAssignmentResponse, error) {
	as, err := s.assignments(ctx, req)
	if err != nil {
		return &rmqpb.QueryAssignmentResponse{Status: statusOf(err)}, nil
	}
	return &rmqpb.QueryAssignmentResponse{Status: okStatus(), Assignments: as}, nil
}

func (s *Server) assignments(ctx context.Context, req *rmqpb.QueryAssignmentRequest) ([]*rmqpb.Assignment, error) {
	group, err := consumerGroup(req.GetGroup())
	if err != nil {
		return nil, err
	}
	topic, err := consumedTopic(req.GetTopic())
	if err != nil {
		return nil, err
	}
	ep := s.endpoint
	if len(ep.GetAddresses()) == 0 {
		ep = dialled(req.GetEndpoints())
	}
	groups, err := s.routedGroups(ctx, topic, ep, false)
	if err != nil {
		return nil, err
	}
	readable := groups[:0:0]
	for _, g := range groups {
		if g.cfg.Perm.Readable() && g.cfg.ReadQueues > 0 {
			readable = append(readable, g)
		}
	}
	if len(readable) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no readable queue", engine.ErrNoPermission, topic)
	}
	fifo := false
	switch g, err := s.eng.Group(group); {
	case err == nil:
		fifo = g.FIFO
	case !errors.Is(err, engine.ErrGroupNotFound):
		return nil, err
	}
	// An unknown group is not FIFO; a receive creates it, or reports it
	// missing.

	res := clientResource(req.GetTopic())
	var out []*rmqpb.Assignment
	for _, g := range readable {
		types := acceptedTypes(g.cfg.MessageType)
		mq := func(id int32, perm rmqpb.Permission) *rmqpb.Assignment {
			return &rmqpb.Assignment{MessageQueue: &rmqpb.MessageQueue{
				Topic: res, Id: id, Permission: perm, Broker: g.broker, AcceptMessageTypes: types,
			}}
		}
		if !fifo {
			out = append(out, mq(-1, rmqpb.Permission_READ_WRITE))
			continue
		}
		for id := range g.cfg.ReadQueues {
			out = append(out, mq(id, queuePermission(g.cfg, id)))
		}
	}
	return out, nil
}
