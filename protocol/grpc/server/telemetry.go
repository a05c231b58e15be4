package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Settings the server gives its clients.
const (
	// Producers: how often and how fast to retry a failed send. RocketMQ's
	// proxy values; clients round the durations down to whole seconds, so
	// they retry at once.
	producerMaxAttempts = 3
	producerBackoff     = 10 * time.Millisecond
	producerBackoffMax  = time.Second

	// Consumers: messages per receive, and how long a receive waits for
	// messages.
	receiveBatchSize   = 32
	longPollingTimeout = 20 * time.Second

	producerBackoffMultiplier = 2
)

// DefaultTerminationGrace is the default of Options.TerminationGrace.
const DefaultTerminationGrace = 30 * time.Second

// Telemetry serves a client's telemetry stream. The client writes its
// settings first, again every 5 minutes and after every reconnect; each
// time the server registers the client (see heartbeat.go) and answers with
// the settings the client is to use, {status OK, settings}: the client's
// own, completed with the body limit and retry policy of a producer, or
// the FIFO flag, batch size, long-polling time and retry policy of a
// consumer's group. Clients do not finish starting before that answer, so
// every settings message gets one, an error status when the settings are
// refused; a client that is still starting gets it again after its route
// queries (startup.go).
//
// The server writes commands for the client to the stream, such as
// transaction checks (transaction_check.go), queued on the client's
// session. The stream ends when the client ends it, when the client
// expires, or when the server closes. A client that said it terminates
// (NotifyClientTermination) gets nothing more on it, and what it sends
// is ignored, but the stream stays open for the client to end, for up
// to Options.TerminationGrace: a client whose stream the server ends
// opens a new one (the Node.js client a second later, even while it
// shuts down), which would register it again.
//
// A client normally keeps one stream per server; when it opens another,
// commands go to the newest.
func (s *Server) Telemetry(stream rmqpb.MessagingService_TelemetryServer) error {
	ctx := stream.Context()
	sess := sessionOf(ctx)
	if sess == nil {
		return stream.Send(&rmqpb.TelemetryCommand{Status: statusOf(errClientIDRequired)})
	}
	st := sess.Attach()
	defer sess.Detach(st)

	// Commands from the client arrive through in; every write to the
	// stream happens on this goroutine.
	in := make(chan *rmqpb.TelemetryCommand)
	var recvErr error
	go func() {
		defer close(in)
		for {
			cmd, err := stream.Recv()
			if err != nil {
				recvErr = err
				return
			}
			select {
			case in <- cmd:
			case <-ctx.Done():
				return
			}
		}
	}()

	out := st.Out()
	replaced := st.Done()
	gone := sess.Gone()
	var grace <-chan time.Time // set once the client terminated
	for {
		select {
		case cmd, ok := <-in:
			if !ok {
				if recvErr == io.EOF || status.Code(recvErr) == codes.Canceled {
					return nil
				}
				return recvErr
			}
			if grace != nil {
				continue
			}
			sess.Seen()
			if reply := s.telemetryReply(sess, cmd); reply != nil {
				if err := stream.Send(reply); err != nil {
					return err
				}
			}
		case cmd := <-out:
			if err := stream.Send(cmd); err != nil {
				return err
			}
		case <-replaced:
			out, replaced = nil, nil // a newer stream gets the commands
		case <-gone:
			if !sess.Terminated() {
				return nil
			}
			gone, out, replaced = nil, nil, nil
			t := time.NewTimer(s.opts.TerminationGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			return nil
		case <-s.ctx.Done():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// telemetryReply handles one command from a client and returns the answer
// to write back, if any.
func (s *Server) telemetryReply(sess *session.Session, cmd *rmqpb.TelemetryCommand) *rmqpb.TelemetryCommand {
	switch c := cmd.GetCommand().(type) {
	case *rmqpb.TelemetryCommand_Settings:
		answer := s.settingsAnswer(sess, c.Settings)
		s.startups.answered(sess, c.Settings, answer)
		return answer
	case *rmqpb.TelemetryCommand_PrintThreadStackTraceCommand:
		// The server has no stack to show a client; it answers so that the
		// asker does not wait.
		return &rmqpb.TelemetryCommand{
			Status:  okStatus(),
			Command: &rmqpb.TelemetryCommand_ThreadStackTrace{ThreadStackTrace: &rmqpb.ThreadStackTrace{Nonce: c.PrintThreadStackTraceCommand.GetNonce()}},
		}
	}
	// Answers to the server's own commands (thread stack traces, message
	// verifications), bare statuses and commands of later protocol
	// versions need no answer.
	return nil
}

// settingsAnswer is the answer to settings a client declared: the
// settings it is to use, or the error status that refuses them.
func (s *Server) settingsAnswer(sess *session.Session, st *rmqpb.Settings) *rmqpb.TelemetryCommand {
	settings, err := s.applySettings(sess, st)
	if err != nil {
		s.log.Warn("client settings refused", "client", sess.ID(), "err", err)
		return &rmqpb.TelemetryCommand{Status: statusOf(err)}
	}
	return &rmqpb.TelemetryCommand{Status: okStatus(), Command: &rmqpb.TelemetryCommand_Settings{Settings: settings}}
}

// applySettings checks the settings a client declared, registers the
// client with them and returns the settings the client is to use.
func (s *Server) applySettings(sess *session.Session, st *rmqpb.Settings) (*rmqpb.Settings, error) {
	if st == nil {
		return nil, badRequest("empty settings")
	}
	if st.ClientType == nil {
		return nil, fmt.Errorf("%w: the settings name no client type", errClientType)
	}
	var (
		reply *rmqpb.Settings
		err   error
	)
	switch t := st.GetClientType(); t {
	case rmqpb.ClientType_PRODUCER:
		reply = producerSettings(st, s.opts.MaxBodySize)
	case rmqpb.ClientType_PUSH_CONSUMER, rmqpb.ClientType_SIMPLE_CONSUMER, rmqpb.ClientType_PULL_CONSUMER:
		reply, err = s.consumerSettings(st)
	case rmqpb.ClientType_LITE_PUSH_CONSUMER, rmqpb.ClientType_LITE_SIMPLE_CONSUMER:
		err = fmt.Errorf("%w: lite consumers (%s)", errUnsupported, t)
	default:
		err = fmt.Errorf("%w: %s", errClientType, t)
	}
	if err != nil {
		return nil, err
	}
	sess.SetSettings(reply)
	s.eng.Clients().Heartbeat(membership(context.Background(), sess, reply))
	return reply, nil
}

// producerSettings completes a producer's settings: the body limit,
// message-type validation (checked against the route's accepted types),
// and the retry policy.
func producerSettings(st *rmqpb.Settings, maxBody int) *rmqpb.Settings {
	reply := proto.Clone(st).(*rmqpb.Settings)
	pub := &rmqpb.Publishing{
		Topics:              reply.GetPublishing().GetTopics(),
		MaxBodySize:         int32(min(maxBody, 1<<31-1)),
		ValidateMessageType: true,
	}
	reply.PubSub = &rmqpb.Settings_Publishing{Publishing: pub}
	reply.BackoffPolicy = exponentialBackoff(producerMaxAttempts, producerBackoff, producerBackoffMax, producerBackoffMultiplier)
	return reply
}

// consumerSettings checks a consumer's group and subscriptions and
// completes its settings from the group's configuration: FIFO, and the
// retry policy: the delivery attempts before a message goes to the
// dead-letter topic and the back-off between them (backoff.go).
func (s *Server) consumerSettings(st *rmqpb.Settings) (*rmqpb.Settings, error) {
	sub := st.GetSubscription()
	if sub == nil {
		return nil, badRequest("%s settings without a subscription", st.GetClientType())
	}
	group, err := consumerGroup(sub.GetGroup())
	if err != nil {
		return nil, err
	}
	for _, e := range sub.GetSubscriptions() {
		topic, err := consumedTopic(e.GetTopic())
		if err != nil {
			return nil, err
		}
		if _, err := s.filterOf(group, topic, e.GetExpression()); err != nil {
			return nil, fmt.Errorf("subscription of %s to %s: %w", group, topic, err)
		}
	}
	g, err := s.consumerGroupConfig(group)
	if err != nil {
		return nil, err
	}
	reply := proto.Clone(st).(*rmqpb.Settings)
	rs := reply.GetSubscription()
	rs.Fifo = proto.Bool(g.FIFO)
	rs.ReceiveBatchSize = proto.Int32(receiveBatchSize)
	rs.LongPollingTimeout = durationpb.New(longPollingTimeout)
	reply.BackoffPolicy = groupBackoff(g).policy(g.Attempts())
	return reply, nil
}

// consumerGroupConfig returns a consumer group's configuration, creating
// the group when Options.AutoCreateGroups allows.
func (s *Server) consumerGroupConfig(name string) (meta.Group, error) {
	g, err := s.eng.Group(name)
	if err == nil || !errors.Is(err, engine.ErrGroupNotFound) || !s.opts.AutoCreateGroups {
		return g, err
	}
	g, _, err = s.eng.EnsureGroup(meta.Group{Name: name})
	if err != nil {
		return meta.Group{}, fmt.Errorf("creating consumer group %s: %w", name, err)
	}
	return g, nil
}

// exponentialBackoff is a retry policy of attempts tries, waiting initial
// after the first failure, then multiplier times longer each time, up to
// ceiling.
func exponentialBackoff(attempts int32, initial, ceiling time.Duration, multiplier float32) *rmqpb.RetryPolicy {
	return &rmqpb.RetryPolicy{
		MaxAttempts: attempts,
		Strategy: &rmqpb.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &rmqpb.ExponentialBackoff{
			Initial:    durationpb.New(initial),
			Max:        durationpb.New(ceiling),
			Multiplier: multiplier,
		}},
	}
}
