package server

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Request metadata RocketMQ 5 clients send on every call.
const (
	headerClientID  = "x-mq-client-id"
	headerNamespace = "x-mq-namespace"
	headerLanguage  = "x-mq-language"
	headerVersion   = "x-mq-client-version"
)

type sessionKey struct{}

// sessionOf returns the session of the call's client, or nil when the call
// named none (the interceptors attach it).
func sessionOf(ctx context.Context) *session.Session {
	s, _ := ctx.Value(sessionKey{}).(*session.Session)
	return s
}

// digestOf returns the body digest for the messages of the call's client:
// the cheapest its language checks, MD5 when it has not declared one.
func digestOf(ctx context.Context) convert.Digest {
	if sess := sessionOf(ctx); sess != nil {
		return convert.DigestFor(sess.Language())
	}
	return convert.DigestMD5
}

// incomingHeader returns the first value of request header key, "" when
// there is none.
func incomingHeader(ctx context.Context, key string) string {
	if v, ok := transport.IncomingHeader(ctx, key); ok {
		return v
	}
	// Not metadata.FromIncomingContext, which copies every header.
	if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// attach looks up the client the call names and puts its session into ctx.
func (s *Server) attach(ctx context.Context) context.Context {
	id := incomingHeader(ctx, headerClientID)
	if id == "" {
		return ctx
	}
	var remote net.Addr
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr
	}
	return context.WithValue(ctx, sessionKey{}, s.sessions.TouchAddr(id, remote))
}

func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if s.opts.Latency == nil || info == nil {
		return s.unary(ctx, req, h)
	}
	start := time.Now()
	resp, err := s.unary(ctx, req, h)
	code := "OK"
	if st, ok := resp.(interface{ GetStatus() *rmqpb.Status }); ok && st.GetStatus() != nil {
		code = st.GetStatus().GetCode().String()
	} else if err != nil {
		code = status.Code(err).String()
	}
	method := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
	s.opts.Latency(method, code, time.Since(start))
	return resp, err
}

// unary serves one unary call.
func (s *Server) unary(ctx context.Context, req any, h grpc.UnaryHandler) (any, error) {
	fillNamespace(req, callNamespace(ctx))
	if s.hooked {
		var refused any
		if ctx, refused = s.guardUnary(ctx, req); refused != nil {
			return refused, nil
		}
	}
	return h(s.attach(ctx), req)
}

// sessionStream is a stream with the client's session in its context,
// whose requests get the call's namespace.
type sessionStream struct {
	grpc.ServerStream
	ctx context.Context
	ns  string
}

func (w sessionStream) Context() context.Context { return w.ctx }

func (w sessionStream) RecvMsg(m any) error {
	err := w.ServerStream.RecvMsg(m)
	if err == nil {
		fillNamespace(m, w.ns)
	}
	return err
}

// streamInterceptor serves a streaming call; with Options.Latency, a call
// whose client sends one request (ReceiveMessage, PullMessage) is
// observed like a unary one: from its start until its last response, with
// the code of the first status it sends. Telemetry, a session rather than
// an exchange, is not.
func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if s.opts.Latency == nil || info == nil || info.IsClientStream {
		return s.stream(srv, ss, h)
	}
	start := time.Now()
	ls := &latencyStream{ServerStream: ss}
	err := s.stream(srv, ls, h)
	code := ls.code
	if code == "" {
		st, ok := status.FromError(err)
		if !ok {
			st = status.FromContextError(err)
		}
		code = st.Code().String()
	}
	s.opts.Latency(info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:], code, time.Since(start))
	return err
}

// latencyStream keeps the code of the first status a streaming call
// sends.
type latencyStream struct {
	grpc.ServerStream
	code string
}

func (l *latencyStream) SendMsg(m any) error {
	if l.code == "" {
		if st, ok := m.(interface{ GetStatus() *rmqpb.Status }); ok && st.GetStatus() != nil {
			l.code = st.GetStatus().GetCode().String()
		}
	}
	return l.ServerStream.SendMsg(m)
}

// stream serves one streaming call.
func (s *Server) stream(srv any, ss grpc.ServerStream, h grpc.StreamHandler) error {
	ctx := ss.Context()
	if !s.hooked {
		return h(srv, sessionStream{ss, s.attach(ctx), callNamespace(ctx)})
	}
	// A refused authentication is answered once the first request says
	// which response carries the status.
	cl, authErr := s.callClient(ctx)
	g := &guardedStream{ServerStream: ss, ctx: hook.NewContext(ctx, cl), s: s, cl: cl, authErr: authErr}
	err := h(srv, sessionStream{g, s.attach(g.ctx), callNamespace(ctx)})
	if errors.Is(err, errRefused) {
		return nil
	}
	return err
}
