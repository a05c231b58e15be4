package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc/peer"
)

// SendMessage stores the messages of a request, each on its own (clients
// send one per request), and answers one entry per message, in order:
// its status, its message id, its queue offset, for a transactional
// message the transaction id EndTransaction takes, and for a message
// scheduled in the future the recall handle RecallMessage takes.
//
// Each message is converted by convert.Publish and stored by the engine,
// which chooses the queue (by the hash of the message group for FIFO
// messages, else round-robin; the queue the client named is ignored),
// creates an unknown topic when the engine auto-creates topics, checks
// the message's type against the topic's, and stores transactional
// messages as half messages and scheduled ones in its timer.
//
// The response's status is the entry's for a single message; for several,
// the common status of the entries, or MULTIPLE_RESULTS when they differ.
func (s *Server) SendMessage(ctx context.Context, req *rmqpb.SendMessageRequest) (*rmqpb.SendMessageResponse, error) {
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return &rmqpb.SendMessageResponse{Status: statusOf(badRequest("SendMessage carries no messages"))}, nil
	}
	s.detachIfWaiting(ctx, msgs)
	born := peerAddrPort(ctx)
	entries := make([]*rmqpb.SendResultEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = s.sendOne(ctx, m, born)
	}
	return &rmqpb.SendMessageResponse{Status: overallStatus(entries), Entries: entries}, nil
}

// detachIfWaiting lets the connection's other calls go on (the call runs
// on its reader) when the send will wait: for the disk with FlushSync,
// or to create a topic that does not exist yet.
func (s *Server) detachIfWaiting(ctx context.Context, msgs []*rmqpb.Message) {
	if s.eng.FlushMode() == engine.FlushSync {
		transport.Detach(ctx)
		return
	}
	for _, m := range msgs {
		if _, err := s.eng.Topic(convert.ResourceName(m.GetTopic())); err != nil {
			transport.Detach(ctx)
			return
		}
	}
}

// sendOne stores one message.
func (s *Server) sendOne(ctx context.Context, pm *rmqpb.Message, born netip.AddrPort) *rmqpb.SendResultEntry {
	m, err := convert.Publish(pm, convert.PublishOptions{MaxBodySize: s.opts.MaxBodySize, BornHost: born})
	if err != nil {
		return &rmqpb.SendResultEntry{Status: statusOf(err), MessageId: pm.GetSystemProperties().GetMessageId()}
	}
	res, err := s.eng.Send(ctx, m)
	if err != nil {
		return &rmqpb.SendResultEntry{Status: statusOf(fmt.Errorf("send to %s: %w", m.Topic, err)), MessageId: m.UniqKey()}
	}
	e := &rmqpb.SendResultEntry{Status: okStatus(), MessageId: res.MsgID, Offset: res.QueueOffset}
	if m.IsTransactionPrepared() {
		e.TransactionId = transactionID(res.StoreHost, res.CommitLogOffset)
	}
	if isDue(m.Properties[message.PropertyTimerDeliverMS]) {
		e.RecallHandle = recallHandle(m.Topic, res.MsgID)
	}
	return e
}

// isDue reports whether deliverMS, a TIMER_DELIVER_MS value, is a time to
// come. Most messages have none, which is not parsed: a failed parse
// allocates its error.
func isDue(deliverMS string) bool {
	if deliverMS == "" {
		return false
	}
	due, err := strconv.ParseInt(deliverMS, 10, 64)
	return err == nil && due > time.Now().UnixMilli()
}

// overallStatus is the status of a response with entries.
func overallStatus(entries []*rmqpb.SendResultEntry) *rmqpb.Status {
	first := entries[0].GetStatus()
	for _, e := range entries[1:] {
		if e.GetStatus().GetCode() != first.GetCode() {
			return &rmqpb.Status{Code: rmqpb.Code_MULTIPLE_RESULTS, Message: "the messages have different results"}
		}
	}
	return first
}

// peerAddrPort returns the address of the client of a call, or the zero
// AddrPort when it is not an IP address.
func peerAddrPort(ctx context.Context) netip.AddrPort {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.AddrPort{}
	}
	if tcp, ok := p.Addr.(*net.TCPAddr); ok {
		ap := tcp.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, err := netip.ParseAddrPort(p.Addr.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
