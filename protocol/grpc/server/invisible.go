package server

import (
	"context"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// ChangeInvisibleDuration makes a received message visible again after
// invisible_duration from now and answers with the receipt handle that
// names it from then on; the old handle stops working. When the message
// becomes visible it is delivered again with its delivery attempt raised
// by one.
//
// Push consumers use it to nack, with durations of a few milliseconds or
// none, so any duration from 0 up is accepted and durations below
// ConsumeOptions.MinChangeInvisible are raised to it; a push consumer's
// nack also to the group's back-off for the message's delivery attempt
// (backoff.go). A handle the server
// renewed (auto_renew) acts on its current lease, whose renewal stops. A
// handle whose message was acknowledged, redelivered or whose lease was
// changed since is INVALID_RECEIPT_HANDLE, on which clients give up.
func (s *Server) ChangeInvisibleDuration(ctx context.Context, req *rmqpb.ChangeInvisibleDurationRequest) (*rmqpb.ChangeInvisibleDurationResponse, error) {
	handle, err := s.changeInvisible(ctx, req)
	if err != nil {
		return &rmqpb.ChangeInvisibleDurationResponse{Status: statusOf(err)}, nil
	}
	return &rmqpb.ChangeInvisibleDurationResponse{Status: okStatus(), ReceiptHandle: handle}, nil
}

func (s *Server) changeInvisible(ctx context.Context, req *rmqpb.ChangeInvisibleDurationRequest) (string, error) {
	group, err := consumerGroup(req.GetGroup())
	if err != nil {
		return "", err
	}
	if _, err := consumedTopic(req.GetTopic()); err != nil {
		return "", err
	}
	if req.GetReceiptHandle() == "" {
		return "", fmt.Errorf("%w: the receipt handle is empty", engine.ErrInvalidHandle)
	}
	d, err := durationOf(req.GetInvisibleDuration(), "invisible_duration", errIllegalInvisible)
	if err != nil {
		return "", err
	}
	if d > maxInvisible {
		return "", fmt.Errorf("%w: invisible_duration %s above %s", errIllegalInvisible, d, maxInvisible)
	}
	d = max(d, s.opts.Consume.MinChangeInvisible)
	sess := sessionOf(ctx)
	nack := isPushConsumer(sess)
	var handle string
	err = s.withLease(sess, group, req.GetReceiptHandle(), func(h string) error {
		d := d
		if nack {
			wait, err := s.nackDelay(group, h)
			if err != nil {
				return err
			}
			d = max(d, wait)
		}
		var err error
		handle, err = s.eng.ChangeInvisible(ctx, group, h, d)
		return err
	})
	return handle, err
}
