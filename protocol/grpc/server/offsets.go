package server

import (
	"context"
	"errors"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/grpc"
)

// Offset-based consumption: PullMessage reads a queue from an offset, and
// the consumer keeps its position with UpdateOffset and GetOffset, as
// remoting consumers do. No RocketMQ 5 client consumes this way yet; the
// RPCs map straight onto the engine's pulls and committed offsets.

// PullMessage streams the messages of one queue from offset that pass the
// filter:
//
//	messages found          {status OK}, one {message} each, {next_offset}
//	none (after polling)    {status MESSAGE_NOT_FOUND}, {next_offset}
//	offset outside [min, max] {status ILLEGAL_OFFSET}, {next_offset}: the nearest bound
//	bad request, error      {status <code>}
//
// next_offset is where the next pull starts: past every message examined.
// While the queue has nothing past offset the call is held for up to
// long_polling_timeout, with the limits of ReceiveMessage. Messages carry
// no receipt handle; their delivery attempt is their reconsume times + 1;
// their digest is ReceiveMessage's.
func (s *Server) PullMessage(req *rmqpb.PullMessageRequest, stream grpc.ServerStreamingServer[rmqpb.PullMessageResponse]) error {
	ctx := stream.Context()
	status := func(st *rmqpb.Status) *rmqpb.PullMessageResponse {
		return &rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_Status{Status: st}}
	}
	next := func(off int64) *rmqpb.PullMessageResponse {
		return &rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_NextOffset{NextOffset: off}}
	}
	p, err := s.pullRequest(ctx, req)
	if err != nil {
		return stream.Send(status(statusOf(err)))
	}

	offset := req.GetOffset()
	deadline := time.Now().Add(p.wait)
	for {
		res, err := s.eng.Pull(ctx, p.topic, p.queue, offset, p.batch, p.filter)
		var re *engine.OffsetRangeError
		if errors.As(err, &re) {
			nearest := re.Max
			if re.Offset < re.Min {
				nearest = re.Min
			}
			if err := stream.Send(status(statusOf(err))); err != nil {
				return err
			}
			return stream.Send(next(nearest))
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return stream.Send(status(statusOf(err)))
		}
		if len(res.Records) > 0 {
			msgs := make([]*rmqpb.Message, 0, len(res.Records))
			d := convert.Delivery{Topic: p.topic, Namespace: p.namespace, Digest: digestOf(ctx)}
			for _, rec := range res.Records {
				m, err := convert.Deliver(rec, d)
				if err != nil {
					s.log.Error("skipping a message that does not decode", "topic", p.topic, "queue", p.queue, "err", err)
					continue
				}
				msgs = append(msgs, m)
			}
			err := stream.Send(status(okStatus()))
			for _, m := range msgs {
				if err != nil {
					break
				}
				err = stream.Send(&rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_Message{Message: m}})
			}
			if err == nil {
				err = stream.Send(next(res.NextOffset))
			}
			// The messages' bodies alias the pull's buffer until now.
			res.Release()
			return err
		}
		offset = res.NextOffset
		res.Release()
		if !time.Now().Before(deadline) || !s.waitForArrival(ctx, deadline, p.topic, p.queue, offset) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := stream.Send(status(&rmqpb.Status{Code: rmqpb.Code_MESSAGE_NOT_FOUND, Message: "no new message"})); err != nil {
				return err
			}
			return stream.Send(next(offset))
		}
	}
}

// pull is a checked PullMessage request.
type pull struct {
	topic, namespace string
	queue            int32
	batch            int
	filter           engine.Filter
	wait             time.Duration
}

func (s *Server) pullRequest(ctx context.Context, req *rmqpb.PullMessageRequest) (*pull, error) {
	group, err := consumerGroup(req.GetGroup())
	if err != nil {
		return nil, err
	}
	topic, queue, err := queueOf(req.GetMessageQueue())
	if err != nil {
		return nil, err
	}
	if n := req.GetBatchSize(); n <= 0 || n > engine.MaxPullMessages {
		return nil, badRequest("batch_size %d outside 1..%d", n, engine.MaxPullMessages)
	}
	if req.GetOffset() < 0 {
		return nil, badRequest("offset %d is negative", req.GetOffset())
	}
	p := &pull{topic: topic, queue: queue, batch: int(req.GetBatchSize()), namespace: req.GetMessageQueue().GetTopic().GetResourceNamespace()}
	if p.filter, err = s.filterOf(group, topic, req.GetFilterExpression()); err != nil {
		return nil, err
	}
	o := &s.opts.Consume
	wait, err := durationOf(req.GetLongPollingTimeout(), "long_polling_timeout", errIllegalPolling)
	if err != nil {
		return nil, err
	}
	wait = min(wait, o.MaxLongPolling)
	if dl, ok := ctx.Deadline(); ok {
		wait = max(min(wait, time.Until(dl)-o.LongPollingReserve), 0)
	}
	p.wait = wait
	return p, nil
}

// waitForArrival waits until (topic, queue) holds a message at offset and
// reports whether one arrived before deadline, ctx's end or the server's
// closing.
func (s *Server) waitForArrival(ctx context.Context, deadline time.Time, topic string, queue int32, offset int64) bool {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	return s.eng.WaitForArrival(wctx, topic, queue, offset) == nil
}

// UpdateOffset commits the group's consume offset of a queue; receives
// (ReceiveMessage) of the group continue from it too.
func (s *Server) UpdateOffset(ctx context.Context, req *rmqpb.UpdateOffsetRequest) (*rmqpb.UpdateOffsetResponse, error) {
	err := func() error {
		group, err := consumerGroup(req.GetGroup())
		if err != nil {
			return err
		}
		topic, queue, err := queueOf(req.GetMessageQueue())
		if err != nil {
			return err
		}
		return s.eng.SeekOffset(group, topic, queue, req.GetOffset())
	}()
	return &rmqpb.UpdateOffsetResponse{Status: statusOf(err)}, nil
}

// GetOffset returns the group's committed consume offset of a queue;
// OFFSET_NOT_FOUND when it has none.
func (s *Server) GetOffset(ctx context.Context, req *rmqpb.GetOffsetRequest) (*rmqpb.GetOffsetResponse, error) {
	off, err := func() (int64, error) {
		group, err := consumerGroup(req.GetGroup())
		if err != nil {
			return 0, err
		}
		topic, queue, err := queueOf(req.GetMessageQueue())
		if err != nil {
			return 0, err
		}
		if _, err := s.eng.MaxOffset(topic, queue); err != nil {
			return 0, err // an unknown topic or queue, rather than no offset
		}
		return s.eng.ConsumerOffset(group, topic, queue)
	}()
	if err != nil {
		return &rmqpb.GetOffsetResponse{Status: statusOf(err)}, nil
	}
	return &rmqpb.GetOffsetResponse{Status: okStatus(), Offset: off}, nil
}

// QueryOffset returns an offset of a queue: its first stored message
// (BEGINNING), one past its last (END), or its first message stored at
// or after timestamp (TIMESTAMP; END when there is none).
func (s *Server) QueryOffset(ctx context.Context, req *rmqpb.QueryOffsetRequest) (*rmqpb.QueryOffsetResponse, error) {
	off, err := func() (int64, error) {
		topic, queue, err := queueOf(req.GetMessageQueue())
		if err != nil {
			return 0, err
		}
		switch req.GetQueryOffsetPolicy() {
		case rmqpb.QueryOffsetPolicy_BEGINNING:
			return s.eng.MinOffset(topic, queue)
		case rmqpb.QueryOffsetPolicy_END:
			return s.eng.MaxOffset(topic, queue)
		case rmqpb.QueryOffsetPolicy_TIMESTAMP:
			ts := req.GetTimestamp()
			if ts == nil {
				return 0, badRequest("query_offset_policy TIMESTAMP needs a timestamp")
			}
			if err := ts.CheckValid(); err != nil {
				return 0, badRequest("timestamp: %v", err)
			}
			return s.eng.OffsetByTime(topic, queue, ts.AsTime().UnixMilli())
		}
		return 0, badRequest("unknown query_offset_policy %d", req.GetQueryOffsetPolicy())
	}()
	if err != nil {
		return &rmqpb.QueryOffsetResponse{Status: statusOf(err)}, nil
	}
	return &rmqpb.QueryOffsetResponse{Status: okStatus(), Offset: off}, nil
}
