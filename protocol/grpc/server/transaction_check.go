package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
)

// errNoProducer reports a transaction check with no producer to ask.
var errNoProducer = errors.New("no producer of the topic has a telemetry stream")

// checkTransaction is the engine's TransactionChecker for producers
// connected over gRPC. It asks the producer to resolve half with a
// RecoverOrphanedTransactionCommand on its telemetry stream: the half
// message as a consumer would receive it (message id, topic, body digest)
// and its transaction id. The producer answers with EndTransaction.
//
// The engine picks the producer among those of the half message's group
// (its topic); when that one has no telemetry stream open (it is
// reconnecting, say), another producer of the group that has one is asked.
func (s *Server) checkTransaction(ctx context.Context, producer registry.ClientInfo, half engine.HalfMessage) error {
	sess := s.checkTarget(producer, half.ProducerGroup)
	if sess == nil {
		return fmt.Errorf("grpc server: transaction check of %s: %w", half.Topic, errNoProducer)
	}
	msg, err := convert.Deliver(half.Record, convert.Delivery{Topic: half.Topic, Namespace: publishingNamespace(sess, half.Topic), Attempt: 1})
	if err != nil {
		return fmt.Errorf("grpc server: transaction check of %s: %w", half.Topic, err)
	}
	h, err := message.PeekStored(half.Record)
	if err != nil {
		return fmt.Errorf("grpc server: transaction check of %s: %w", half.Topic, err)
	}
	cmd := &rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &rmqpb.RecoverOrphanedTransactionCommand{
			Message:       msg,
			TransactionId: transactionID(h.StoreHost, half.CommitLogOffset),
		},
	}}
	if err := sess.Send(cmd); err != nil {
		return fmt.Errorf("grpc server: transaction check of %s by %s: %w", half.Topic, sess.ID(), err)
	}
	return nil
}

// checkTarget returns the session of producer when it has a telemetry
// stream open, else that of another gRPC producer of group that has one.
func (s *Server) checkTarget(producer registry.ClientInfo, group string) *session.Session {
	if sess, ok := producer.Conn.(*session.Session); ok && sess.HasStream() {
		return sess
	}
	for _, p := range s.eng.Clients().Producers(group) {
		if sess, ok := p.Conn.(*session.Session); ok && sess.HasStream() {
			return sess
		}
	}
	return nil
}

// publishingNamespace returns the namespace in which the client of sess
// publishes the stored topic, "" when it declared none.
func publishingNamespace(sess *session.Session, topic string) string {
	for _, t := range sess.Settings().GetPublishing().GetTopics() {
		if t.GetResourceNamespace() != "" && convert.ResourceName(t) == topic {
			return t.GetResourceNamespace()
		}
	}
	return ""
}
