package server

import (
	"context"
	"errors"
	"net/netip"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/hook/rmqauth"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// Authentication and authorization.
//
// When the engine has an Authenticator or an Authorizer (engine.Hooks),
// every call is authenticated from its headers (authorization,
// x-mq-date-time, x-mq-session-token: the signature covers the
// date-time, so each call is verified on its own for the cost of one
// HMAC of a short string) and each request is authorized for what it
// does: SendMessage, RecallMessage and EndTransaction Pub on their
// topics; ReceiveMessage, PullMessage, AckMessage,
// ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue,
// QueryAssignment, the offset calls and SyncLiteSubscription Sub on
// their topic and group; Heartbeat Sub on its group (when it names one);
// the settings a client declares on Telemetry Pub on its topics
// (publishers) or Sub on its group and topics (consumers); QueryRoute and
// NotifyClientTermination only authentication. A refused call is answered
// with its response's status, UNAUTHORIZED or FORBIDDEN with the reason;
// a refused stream ends after that status.
//
// When the engine has any hook, the call's context carries a hook.Client
// (client id, address, group, principal) for the engine's hooks. With no
// hook installed the interceptors pay one boolean check.

// Request headers of RocketMQ's credentials.
const (
	headerAuthorization = "authorization"
	headerDateTime      = "x-mq-date-time"
	headerSessionToken  = "x-mq-session-token"
)

// errRefused ends a stream whose request was refused after its status was
// sent.
var errRefused = errors.New("refused")

// access is one action a call takes on one resource.
type access struct {
	action hook.Action
	res    hook.Resource
}

// accessOf returns what req does and the group it acts for.
func accessOf(req any) ([]access, string) {
	topicGroup := func(a hook.Action, t, g *rmqpb.Resource) ([]access, string) {
		var acc []access
		group := ""
		if t != nil {
			acc = append(acc, access{a, hook.Topic(convert.ResourceName(t))})
		}
		if g != nil {
			group = convert.ResourceName(g)
			acc = append(acc, access{a, hook.Group(group)})
		}
		return acc, group
	}
	switch r := req.(type) {
	case *rmqpb.SendMessageRequest:
		var acc []access
		for _, m := range r.GetMessages() {
			res := hook.Topic(convert.ResourceName(m.GetTopic()))
			if len(acc) == 0 || acc[len(acc)-1].res != res {
				acc = append(acc, access{hook.ActionPub, res})
			}
		}
		return acc, ""
	case *rmqpb.RecallMessageRequest:
		return topicGroup(hook.ActionPub, r.GetTopic(), nil)
	case *rmqpb.EndTransactionRequest:
		return topicGroup(hook.ActionPub, r.GetTopic(), nil)
	case *rmqpb.ReceiveMessageRequest:
		return topicGroup(hook.ActionSub, r.GetMessageQueue().GetTopic(), r.GetGroup())
	case *rmqpb.PullMessageRequest:
		return topicGroup(hook.ActionSub, r.GetMessageQueue().GetTopic(), r.GetGroup())
	case *rmqpb.AckMessageRequest:
		return topicGroup(hook.ActionSub, r.GetTopic(), r.GetGroup())
	case *rmqpb.ChangeInvisibleDurationRequest:
		return topicGroup(hook.ActionSub, r.GetTopic(), r.GetGroup())
	case *rmqpb.ForwardMessageToDeadLetterQueueRequest:
		return topicGroup(hook.ActionSub, r.GetTopic(), r.GetGroup())
	case *rmqpb.QueryAssignmentRequest:
		return topicGroup(hook.ActionSub, r.GetTopic(), r.GetGroup())
	case *rmqpb.UpdateOffsetRequest:
		return topicGroup(hook.ActionSub, r.GetMessageQueue().GetTopic(), r.GetGroup())
	case *rmqpb.GetOffsetRequest:
		return topicGroup(hook.ActionSub, r.GetMessageQueue().GetTopic(), r.GetGroup())
	case *rmqpb.QueryOffsetRequest:
		return topicGroup(hook.ActionSub, r.GetMessageQueue().GetTopic(), nil)
	case *rmqpb.SyncLiteSubscriptionRequest:
		return topicGroup(hook.ActionSub, r.GetTopic(), r.GetGroup())
	case *rmqpb.HeartbeatRequest:
		return topicGroup(hook.ActionSub, nil, r.GetGroup())
	case *rmqpb.TelemetryCommand:
		st := r.GetSettings()
		if st == nil {
			return nil, ""
		}
		if p := st.GetPublishing(); p != nil {
			var acc []access
			for _, t := range p.GetTopics() {
				acc = append(acc, access{hook.ActionPub, hook.Topic(convert.ResourceName(t))})
			}
			return acc, ""
		}
		if s := st.GetSubscription(); s != nil {
			acc, group := topicGroup(hook.ActionSub, nil, s.GetGroup())
			for _, e := range s.GetSubscriptions() {
				acc = append(acc, access{hook.ActionSub, hook.Topic(convert.ResourceName(e.GetTopic()))})
			}
			return acc, group
		}
	}
	// QueryRoute, NotifyClientTermination: authentication only.
	return nil, ""
}

// refusal returns the response of req's call carrying the status of err.
func refusal(req any, err error) any {
	st := statusOf(err)
	switch req.(type) {
	case *rmqpb.SendMessageRequest:
		return &rmqpb.SendMessageResponse{Status: st}
	case *rmqpb.QueryRouteRequest:
		return &rmqpb.QueryRouteResponse{Status: st}
	case *rmqpb.HeartbeatRequest:
		return &rmqpb.HeartbeatResponse{Status: st}
	case *rmqpb.AckMessageRequest:
		return &rmqpb.AckMessageResponse{Status: st}
	case *rmqpb.ChangeInvisibleDurationRequest:
		return &rmqpb.ChangeInvisibleDurationResponse{Status: st}
	case *rmqpb.ForwardMessageToDeadLetterQueueRequest:
		return &rmqpb.ForwardMessageToDeadLetterQueueResponse{Status: st}
	case *rmqpb.EndTransactionRequest:
		return &rmqpb.EndTransactionResponse{Status: st}
	case *rmqpb.NotifyClientTerminationRequest:
		return &rmqpb.NotifyClientTerminationResponse{Status: st}
	case *rmqpb.QueryAssignmentRequest:
		return &rmqpb.QueryAssignmentResponse{Status: st}
	case *rmqpb.UpdateOffsetRequest:
		return &rmqpb.UpdateOffsetResponse{Status: st}
	case *rmqpb.GetOffsetRequest:
		return &rmqpb.GetOffsetResponse{Status: st}
	case *rmqpb.QueryOffsetRequest:
		return &rmqpb.QueryOffsetResponse{Status: st}
	case *rmqpb.RecallMessageRequest:
		return &rmqpb.RecallMessageResponse{Status: st}
	case *rmqpb.SyncLiteSubscriptionRequest:
		return &rmqpb.SyncLiteSubscriptionResponse{Status: st}
	case *rmqpb.ReceiveMessageRequest:
		return &rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{Status: st}}
	case *rmqpb.PullMessageRequest:
		return &rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_Status{Status: st}}
	case *rmqpb.TelemetryCommand:
		return &rmqpb.TelemetryCommand{Status: st}
	}
	return nil
}

// callClient returns the hook.Client of a call, authenticated when the
// engine has Authenticators or Authorizers.
func (s *Server) callClient(ctx context.Context) (*hook.Client, error) {
	cl := &hook.Client{Protocol: Protocol, ID: incomingHeader(ctx, headerClientID)}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		if ap, err := netip.ParseAddrPort(p.Addr.String()); err == nil {
			cl.Addr = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	if !s.hooks.Guarded() {
		return cl, nil
	}
	cr, err := callCredentials(ctx, cl.Addr)
	if err == nil {
		cl.Principal, err = s.hooks.Authenticate(ctx, cr)
	}
	return cl, err
}

// callCredentials extracts the credentials of a call from its headers.
func callCredentials(ctx context.Context, addr netip.AddrPort) (*hook.Credentials, error) {
	cr := &hook.Credentials{Protocol: Protocol, Addr: addr, Fields: map[string]string{}}
	for _, k := range []string{headerAuthorization, headerDateTime, headerSessionToken, headerClientID, headerNamespace, headerLanguage, headerVersion} {
		if v := incomingHeader(ctx, k); v != "" {
			cr.Fields[k] = v
		}
	}
	cr.SecurityToken = cr.Fields[headerSessionToken]
	if v, ok := cr.Fields[headerAuthorization]; ok {
		a, err := rmqauth.ParseAuthorization(v)
		if err != nil {
			return nil, hook.Unauthenticated(err.Error())
		}
		cr.AccessKey, cr.Algorithm, cr.Signature = a.AccessKey, a.Algorithm, a.Signature
		cr.Content = []byte(cr.Fields[headerDateTime])
	}
	return cr, nil
}

// authorize asks the Authorizers about what req does, and names its
// group in cl.
func (s *Server) authorize(ctx context.Context, cl *hook.Client, req any) error {
	acc, group := accessOf(req)
	if group != "" {
		cl.Group = group
	}
	for _, a := range acc {
		if err := s.hooks.Authorize(ctx, cl.Principal, a.action, a.res); err != nil {
			return err
		}
	}
	return nil
}

// authorizeOrName authorizes req when the engine has Authenticators or
// Authorizers; otherwise it only names req's group in cl, for the
// message hooks.
func (s *Server) authorizeOrName(ctx context.Context, cl *hook.Client, req any) error {
	if s.hooks.Guarded() {
		return s.authorize(ctx, cl, req)
	}
	if _, group := accessOf(req); group != "" {
		cl.Group = group
	}
	return nil
}

// guardUnary authenticates and authorizes a unary call, returning the
// context to serve it with, or the response refusing it.
func (s *Server) guardUnary(ctx context.Context, req any) (context.Context, any) {
	cl, err := s.callClient(ctx)
	ctx = hook.NewContext(ctx, cl) // Authorizers read the client's address from it
	if err == nil {
		err = s.authorizeOrName(ctx, cl, req)
	}
	if err != nil {
		return ctx, refusal(req, err)
	}
	return ctx, nil
}

// guardedStream authorizes each request a stream receives; a refused one
// is answered with its status and ends the stream.
type guardedStream struct {
	grpc.ServerStream
	ctx     context.Context
	s       *Server
	cl      *hook.Client
	authErr error // the call's authentication failed
}

func (w *guardedStream) Context() context.Context { return w.ctx }

func (w *guardedStream) RecvMsg(m any) error {
	if err := w.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	err := w.authErr
	if err == nil {
		err = w.s.authorizeOrName(w.ctx, w.cl, m)
	}
	if err != nil {
		if resp := refusal(m, err); resp != nil {
			w.ServerStream.SendMsg(resp)
		}
		return errRefused
	}
	return nil
}
