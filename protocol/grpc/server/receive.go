package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// ReceiveMessage pops messages of a topic for a consumer group (RocketMQ's
// POP consumption, see engine.Pop).
//
// The queue the request names is ignored: the server pops from every
// readable queue of the topic, as RocketMQ's proxy does (clients only
// ever name queue 0 or -1). The answer is a stream that ends after the
// last message:
//
//	messages found     {status OK}, then one {message} each
//	none in time       {status MESSAGE_NOT_FOUND}
//	bad request, error {status <code>}
//
// Without auto_renew the messages stay invisible for invisible_duration,
// which must be at least ConsumeOptions.MinInvisible. With auto_renew they
// get a lease of AutoRenewInvisible that the server renews while the
// client lives (see renew.go). While nothing is visible the call is held
// for up to long_polling_timeout (capped by MaxLongPolling; absent means
// the cap), and always answered LongPollingReserve before the call's
// deadline. Messages that pass the group's max attempts go to its
// dead-letter topic instead of being delivered; the max attempts are
// those of the retry policy in the client's settings, else the group's.
// Each message's body digest is the cheapest the client's language
// checks (see convert.DigestFor).
func (s *Server) ReceiveMessage(req *rmqpb.ReceiveMessageRequest, stream grpc.ServerStreamingServer[rmqpb.ReceiveMessageResponse]) error {
	ctx := stream.Context()
	r, err := s.receiveRequest(ctx, req)
	if err != nil {
		return stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{Status: statusOf(err)}})
	}

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, ok := hook.FromContext(pctx); !ok {
		// The consumer the engine's delivery history names (with hooks,
		// the guarded stream's client is there already).
		cl, _ := s.callClient(pctx)
		cl.Group = r.pop.Group
		pctx = hook.NewContext(pctx, cl)
	}
	stop := context.AfterFunc(s.ctx, cancel) // answer at once when the server closes
	defer stop()
	// The records are read into a pooled buffer, which deliver is done
	// with when it returns: every message is encoded by then.
	buf := recordBuffers.Get().(*[]byte)
	defer putRecordBuffer(buf)
	r.pop.Buffer = buf
	popped, err := s.eng.Pop(pctx, r.pop)
	if err != nil && len(popped) == 0 {
		if ctx.Err() != nil {
			return ctx.Err() // the client is gone
		}
		if errors.Is(err, context.Canceled) && s.ctx.Err() != nil {
			err = nil // the server is closing: nothing found
		} else {
			return stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{Status: statusOf(err)}})
		}
	}
	if len(popped) == 0 {
		return stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{
			Status: &rmqpb.Status{Code: rmqpb.Code_MESSAGE_NOT_FOUND, Message: "no message visible"},
		}})
	}
	return s.deliver(ctx, stream, r, popped)
}

// recordBuffers recycles the buffers receives read records into.
var recordBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledRecords is the largest record buffer kept for reuse.
const maxPooledRecords = 4 << 20

func putRecordBuffer(b *[]byte) {
	if cap(*b) <= maxPooledRecords {
		*b = (*b)[:0]
		recordBuffers.Put(b)
	}
}

// receive is a checked ReceiveMessage request.
type receive struct {
	pop       engine.PopOptions
	namespace string
	owner     *session.Session // set with auto_renew
	digest    convert.Digest   // the one the client's language checks
}

// receiveRequest checks req and turns it into a pop.
func (s *Server) receiveRequest(ctx context.Context, req *rmqpb.ReceiveMessageRequest) (*receive, error) {
	o := &s.opts.Consume
	group, err := consumerGroup(req.GetGroup())
	if err != nil {
		return nil, err
	}
	if req.GetMessageQueue() == nil {
		return nil, badRequest("the message queue is required")
	}
	topic, err := consumedTopic(req.GetMessageQueue().GetTopic())
	if err != nil {
		return nil, err
	}
	if n := req.GetBatchSize(); n <= 0 || n > engine.MaxPullMessages {
		return nil, badRequest("batch_size %d outside 1..%d", n, engine.MaxPullMessages)
	}
	r := &receive{namespace: req.GetMessageQueue().GetTopic().GetResourceNamespace()}
	r.pop = engine.PopOptions{Group: group, Topic: topic, Max: int(req.GetBatchSize()), AttemptID: req.GetAttemptId()}
	if r.pop.Filter, err = s.filterOf(group, topic, req.GetFilterExpression()); err != nil {
		return nil, err
	}

	sess := sessionOf(ctx)
	if req.GetAutoRenew() {
		if sess == nil {
			return nil, fmt.Errorf("%w: auto_renew keeps messages invisible for a client, which must name itself", errClientIDRequired)
		}
		r.owner = sess
		r.pop.Invisible = o.AutoRenewInvisible
	} else {
		if req.InvisibleDuration == nil {
			return nil, fmt.Errorf("%w: invisible_duration is required without auto_renew", errIllegalInvisible)
		}
		d, err := durationOf(req.InvisibleDuration, "invisible_duration", errIllegalInvisible)
		if err != nil {
			return nil, err
		}
		if d < o.MinInvisible || d > maxInvisible {
			return nil, fmt.Errorf("%w: invisible_duration %s outside %s..%s", errIllegalInvisible, d, o.MinInvisible, maxInvisible)
		}
		r.pop.Invisible = d
	}

	wait := o.MaxLongPolling
	if req.LongPollingTimeout != nil {
		d, err := durationOf(req.LongPollingTimeout, "long_polling_timeout", errIllegalPolling)
		if err != nil {
			return nil, err
		}
		wait = min(d, wait)
	}
	if dl, ok := ctx.Deadline(); ok {
		wait = max(min(wait, time.Until(dl)-o.LongPollingReserve), 0)
	}
	r.pop.Wait = wait

	if g, err := s.eng.Group(group); err == nil && g.ConsumeDisabled {
		return nil, fmt.Errorf("%w: consumer group %s is disabled", engine.ErrNoPermission, group)
	}
	if sess != nil {
		r.pop.MaxAttempts = sess.MaxAttempts()
	}
	r.digest = digestOf(ctx)
	return r, nil
}

// deliver streams popped messages: the status, then each message, each
// encoded straight from its stored record (see codec.go). With auto_renew
// their leases start before anything is sent; when the stream breaks
// they end, so the messages come back when their lease runs out.
func (s *Server) deliver(ctx context.Context, stream grpc.ServerStreamingServer[rmqpb.ReceiveMessageResponse], r *receive, popped []engine.PoppedMessage) error {
	pool := mem.DefaultBufferPool()
	frames := make([]mem.Buffer, 0, len(popped))
	defer func() {
		for _, f := range frames {
			if f != nil {
				f.Free()
			}
		}
	}()
	var leases []*lease
	if r.owner != nil {
		leases = make([]*lease, 0, len(popped))
	}
	now := time.Now()
	d := convert.Delivery{Topic: r.pop.Topic, Namespace: r.namespace, Invisible: r.pop.Invisible, Digest: r.digest}
	for i := range popped {
		p := &popped[i]
		d.Handle, d.Attempt = p.Handle, p.Attempt
		f, err := encodeDelivery(pool, p.Record, d)
		if err != nil {
			// The engine only hands out records that decode; one that does
			// not could never be consumed, so it is acknowledged.
			s.log.Error("dropping a message that does not decode", "topic", r.pop.Topic, "queue", p.Queue, "offset", p.Offset, "err", err)
			if err := s.eng.Ack(ctx, r.pop.Group, p.Handle); err != nil {
				s.log.Error("acknowledging an undecodable message", "err", err)
			}
			continue
		}
		frames = append(frames, f)
		if r.owner != nil {
			leases = append(leases, s.leases.add(r.owner, r.pop.Group, p.Handle, p.Deadline, now.Add(s.opts.Consume.MaxRenew)))
		}
	}
	if len(frames) == 0 {
		return stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{
			Status: &rmqpb.Status{Code: rmqpb.Code_MESSAGE_NOT_FOUND, Message: "no message visible"},
		}})
	}
	transport.Cork(ctx) // the status and the messages leave in one write, with the trailers
	err := stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{Status: okStatus()}})
	var e encoded
	for i, f := range frames {
		if err != nil {
			break
		}
		e.buf, frames[i] = f, nil
		err = stream.SendMsg(&e)
		if e.buf != nil { // not taken by the codec
			e.buf.Free()
			e.buf = nil
		}
	}
	if err != nil && len(leases) > 0 {
		s.leases.remove(r.owner, leases...)
	}
	return err
}

// frameReserve is the room encodeDelivery leaves for the header of a
// ReceiveMessageResponse: its tag and a length of up to five bytes.
const frameReserve = 6

// encodeDelivery returns the wire form of a ReceiveMessageResponse
// carrying the message of rec, in a buffer of pool.
func encodeDelivery(pool mem.BufferPool, rec []byte, d convert.Delivery) (mem.Buffer, error) {
	bufp := pool.Get(frameReserve + len(rec) + len(d.Handle) + 256)
	b, err := convert.AppendMessage((*bufp)[:frameReserve], rec, d)
	if err != nil {
		pool.Put(bufp)
		return nil, err
	}
	// The header goes in front of the message, which moves down when its
	// length takes fewer bytes than reserved.
	n := len(b) - frameReserve
	hl := protowire.SizeTag(fieldResponseMessage) + protowire.SizeVarint(uint64(n))
	if shift := frameReserve - hl; shift > 0 {
		copy(b[hl:], b[frameReserve:])
		b = b[:len(b)-shift]
	}
	h := protowire.AppendTag(b[:0], fieldResponseMessage, protowire.BytesType)
	protowire.AppendVarint(h, uint64(n))
	if unsafe.SliceData(b) != unsafe.SliceData(*bufp) {
		// A body that inflated outgrew the pool's buffer.
		pool.Put(bufp)
		return mem.SliceBuffer(b), nil
	}
	*bufp = b
	return mem.NewBuffer(bufp, pool), nil
}

// fieldResponseMessage is the number of ReceiveMessageResponse.message.
const fieldResponseMessage protowire.Number = 2
