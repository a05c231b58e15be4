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
// dialled). A topic with no readable queue is FORBIDDEN.
func (s *Server) QueryAssignment(ctx context.Context, req *rmqpb.QueryAssignmentRequest) (*rmqpb.QueryAssignmentResponse, error) {
	as, err := s.assignments(req)
	if err != nil {
		return &rmqpb.QueryAssignmentResponse{Status: statusOf(err)}, nil
	}
	return &rmqpb.QueryAssignmentResponse{Status: okStatus(), Assignments: as}, nil
}

func (s *Server) assignments(req *rmqpb.QueryAssignmentRequest) ([]*rmqpb.Assignment, error) {
	group, err := consumerGroup(req.GetGroup())
	if err != nil {
		return nil, err
	}
	topic, err := consumedTopic(req.GetTopic())
	if err != nil {
		return nil, err
	}
	t, err := s.eng.Topic(topic)
	if err != nil {
		return nil, err
	}
	if !t.Perm.Readable() || t.ReadQueues <= 0 {
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

	ep := s.endpoint
	if len(ep.GetAddresses()) == 0 {
		ep = dialled(req.GetEndpoints())
	}
	broker := &rmqpb.Broker{Name: s.opts.BrokerName, Id: 0, Endpoints: ep}
	res := clientResource(req.GetTopic())
	types := acceptedTypes(t.MessageType)
	mq := func(id int32, perm rmqpb.Permission) *rmqpb.Assignment {
		return &rmqpb.Assignment{MessageQueue: &rmqpb.MessageQueue{
			Topic: res, Id: id, Permission: perm, Broker: broker, AcceptMessageTypes: types,
		}}
	}
	if !fifo {
		return []*rmqpb.Assignment{mq(-1, rmqpb.Permission_READ_WRITE)}, nil
	}
	out := make([]*rmqpb.Assignment, t.ReadQueues)
	for id := range t.ReadQueues {
		out[id] = mq(id, queuePermission(t, id))
	}
	return out, nil
}
