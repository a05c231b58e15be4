package server

import (
	"context"
	"time"

	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
)

// Client lifecycle. A client becomes known when it declares its settings
// on its telemetry stream (telemetry.go): the server registers it in the
// engine's client registry then, as a producer of the topics it publishes
// to or a consumer of its group, with the client's session as its
// connection. Heartbeats, sent every 10 s, renew that registration from
// the settings the client was last given; NotifyClientTermination ends
// it. A client that sends nothing for Options.ClientExpiry is forgotten
// (background.go), as the registry forgets it.

// Heartbeat renews the registration of the calling client. A client that
// has not declared its settings yet gets OK all the same (RocketMQ's proxy
// answers UNRECOGNIZED_CLIENT_TYPE, which clients only log): its
// registration comes with its settings.
func (s *Server) Heartbeat(ctx context.Context, req *rmqpb.HeartbeatRequest) (*rmqpb.HeartbeatResponse, error) {
	sess := sessionOf(ctx)
	if sess == nil {
		return &rmqpb.HeartbeatResponse{Status: statusOf(errClientIDRequired)}, nil
	}
	if st := sess.Settings(); st != nil {
		s.eng.Clients().Heartbeat(membership(ctx, sess, st))
	}
	return &rmqpb.HeartbeatResponse{Status: okStatus()}, nil
}

// NotifyClientTermination forgets the calling client: its registration,
// its session, and with them the receipts renewed on its behalf (their
// messages become visible when their current invisibility ends). Its
// telemetry stream is left for the client to end (see Telemetry).
func (s *Server) NotifyClientTermination(ctx context.Context, req *rmqpb.NotifyClientTerminationRequest) (*rmqpb.NotifyClientTerminationResponse, error) {
	sess := sessionOf(ctx)
	if sess == nil {
		return &rmqpb.NotifyClientTerminationResponse{Status: statusOf(errClientIDRequired)}, nil
	}
	s.sessions.Terminate(sess.ID())
	s.eng.Clients().Disconnect(sess)
	return &rmqpb.NotifyClientTerminationResponse{Status: okStatus()}, nil
}

// membership is the registry heartbeat of a client given settings st (as
// the server answered them): a producer belongs to the producer group of
// each topic it publishes to, since RocketMQ 5 clients use the topic as
// the producer group of their transactions; a consumer belongs to its
// group, with its subscriptions.
//
// The client's language and version are those of its settings' user
// agent, else its x-mq-language and x-mq-client-version headers (ctx
// may carry none).
func membership(ctx context.Context, sess *session.Session, st *rmqpb.Settings) registry.Heartbeat {
	hb := registry.Heartbeat{Client: registry.ClientID(sess.ID()), Protocol: Protocol, Conn: sess}
	if ua := st.GetUserAgent(); ua != nil {
		if ua.GetLanguage() != rmqpb.Language_LANGUAGE_UNSPECIFIED {
			hb.Language = ua.GetLanguage().String()
		}
		hb.Version = ua.GetVersion()
	}
	if hb.Language == "" {
		hb.Language = incomingHeader(ctx, headerLanguage)
	}
	if hb.Version == "" {
		hb.Version = incomingHeader(ctx, headerVersion)
	}
	if pub := st.GetPublishing(); pub != nil {
		for _, t := range pub.GetTopics() {
			if t.GetName() != "" {
				hb.Producers = append(hb.Producers, convert.ResourceName(t))
			}
		}
	}
	if sub := st.GetSubscription(); sub != nil && sub.GetGroup().GetName() != "" {
		c := registry.Consumer{Group: convert.ResourceName(sub.GetGroup()), FIFO: sub.GetFifo()}
		switch st.GetClientType() {
		case rmqpb.ClientType_SIMPLE_CONSUMER:
			c.Type = registry.ConsumeSimple
		case rmqpb.ClientType_PULL_CONSUMER:
			c.Type = registry.ConsumePull
		}
		for _, e := range sub.GetSubscriptions() {
			if e.GetTopic().GetName() == "" {
				continue
			}
			rs := registry.Subscription{Topic: convert.ResourceName(e.GetTopic()), ExprType: registry.ExprTag, Expression: e.GetExpression().GetExpression()}
			if e.GetExpression().GetType() == rmqpb.FilterType_SQL {
				rs.ExprType = registry.ExprSQL92
			}
			c.Subscriptions = append(c.Subscriptions, rs)
		}
		hb.Consumers = []registry.Consumer{c}
	}
	return hb
}

// expireLoop forgets, until ctx ends, the clients that sent nothing for
// Options.ClientExpiry: their sessions (with the telemetry streams and
// renewed receipts) and their registrations. The engine's registry expires
// silent clients by itself too; this also covers clients the registry
// still counts, with a telemetry stream open but no heartbeats.
func (s *Server) expireLoop(ctx context.Context) {
	t := time.NewTicker(min(max(s.opts.ClientExpiry/4, 10*time.Millisecond), 10*time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, sess := range s.sessions.Expire(now.Add(-s.opts.ClientExpiry)) {
				s.eng.Clients().Disconnect(sess)
				if sess.Settings() != nil {
					s.log.Info("client expired", "client", sess.ID(), "remote", sess.RemoteAddr())
				}
			}
		}
	}
}
