package shared

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/plugins/internal/pluginpb"
)

// GRPCPlugin is the go-plugin glue of the plugin map: in a plugin
// process it serves Impl; in the broker it yields a client of the Plugin
// service (a pluginpb.PluginClient, for package plugins).
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the plugin's implementation (plugin side only).
	Impl any
}

// PluginMap is the plugin map of the given implementation (nil on the
// broker's side).
func PluginMap(impl any) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}

// GRPCServer registers the Plugin service.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("shared: no plugin implementation to serve")
	}
	pluginpb.RegisterPluginServer(s, &server{impl: p.Impl})
	return nil
}

// GRPCClient returns a client of the Plugin service.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginpb.NewPluginClient(c), nil
}

// Serve serves impl as a Karman plugin: the plugin's main calls it and
// it returns when the broker is done with the plugin. impl implements
// one or more of StoreInterceptor, DeliverInterceptor, Sink, Source,
// hook.Authenticator and hook.Authorizer, and optionally Configurer.
func Serve(impl any) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			ProtocolVersion: PluginMap(impl),
		},
		GRPCServer: plugin.DefaultGRPCServer,
	})
}

// server adapts an implementation to the generated service.
type server struct {
	pluginpb.UnimplementedPluginServer
	impl any
}

func (s *server) Configure(ctx context.Context, req *pluginpb.ConfigureRequest) (*pluginpb.ConfigureResponse, error) {
	var st Settings
	if c, ok := s.impl.(Configurer); ok {
		var err error
		if st, err = c.Configure(ctx, req.GetName(), req.GetConfig()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "configure: %v", err)
		}
	}
	resp := &pluginpb.ConfigureResponse{Bodies: st.Bodies, SinkTopics: st.SinkTopics}
	if _, ok := s.impl.(StoreInterceptor); ok {
		resp.Kinds = append(resp.Kinds, pluginpb.Kind_KIND_BEFORE_STORE)
	}
	if _, ok := s.impl.(DeliverInterceptor); ok {
		resp.Kinds = append(resp.Kinds, pluginpb.Kind_KIND_BEFORE_DELIVER)
	}
	if _, ok := s.impl.(Sink); ok {
		resp.Kinds = append(resp.Kinds, pluginpb.Kind_KIND_SINK)
	}
	if _, ok := s.impl.(Source); ok {
		resp.Kinds = append(resp.Kinds, pluginpb.Kind_KIND_SOURCE)
	}
	if _, ok := s.impl.(hook.Authenticator); ok {
		resp.Kinds = append(resp.Kinds, pluginpb.Kind_KIND_AUTHENTICATOR)
	}
	if _, ok := s.impl.(hook.Authorizer); ok {
		resp.Kinds = append(resp.Kinds, pluginpb.Kind_KIND_AUTHORIZER)
	}
	if len(resp.Kinds) == 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "plugin %T implements no plugin kind", s.impl)
	}
	return resp, nil
}

func (s *server) BeforeStore(ctx context.Context, req *pluginpb.StoreRequest) (*pluginpb.StoreResponse, error) {
	h, ok := s.impl.(StoreInterceptor)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "not a store interceptor")
	}
	b := &StoreBatch{Client: clientFromPB(req.GetClient()), Topic: req.GetTopic(), Queue: req.GetQueue()}
	b.Messages = MessagesFromPB(req.GetMessages(), nil)
	for i := range b.Messages {
		if b.Messages[i].Properties == nil {
			b.Messages[i].Properties = map[string]string{}
		}
	}
	resp := &pluginpb.StoreResponse{}
	if err := h.BeforeStore(ctx, b); err != nil {
		return rejectOr(resp, err, func(r string) { resp.Reject = r })
	}
	// What differs from what came goes back.
	var buf []byte
	for i, w := range req.GetMessages() {
		p := b.Messages[i].Properties
		if sameProperties(p, w.GetProperties()) {
			continue
		}
		start := len(buf)
		buf = message.AppendProperties(buf, p)
		resp.Changes = append(resp.Changes, &pluginpb.PropertyChange{Index: uint32(i), Properties: buf[start:len(buf):len(buf)]})
	}
	return resp, nil
}

// sameProperties reports whether p holds exactly the pairs of the encoded
// properties enc, without decoding them. An encoding that names a
// property twice is taken as different (its map is sent back whole,
// which is right either way).
func sameProperties(p map[string]string, enc []byte) bool {
	n := 0
	for rest := enc; len(rest) > 0; {
		k, v, r, ok := message.NextProperty(rest)
		rest = r
		if !ok {
			continue
		}
		if got, found := p[string(k)]; !found || got != string(v) {
			return false
		}
		n++
	}
	return n == len(p)
}

func (s *server) BeforeStoreMany(ctx context.Context, req *pluginpb.StoreManyRequest) (*pluginpb.StoreManyResponse, error) {
	resp := &pluginpb.StoreManyResponse{Batches: make([]*pluginpb.StoreResponse, len(req.GetBatches()))}
	for i, b := range req.GetBatches() {
		r, err := s.BeforeStore(ctx, b)
		if err != nil {
			if st, ok := status.FromError(err); ok && st.Code() == codes.Unimplemented {
				return nil, err
			}
			r = &pluginpb.StoreResponse{Error: status.Convert(err).Message()}
		}
		resp.Batches[i] = r
	}
	return resp, nil
}

func (s *server) BeforeDeliver(ctx context.Context, req *pluginpb.DeliverRequest) (*pluginpb.DeliverResponse, error) {
	h, ok := s.impl.(DeliverInterceptor)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "not a delivery interceptor")
	}
	b := &DeliverBatch{Client: clientFromPB(req.GetClient()), Topic: req.GetTopic(), Queue: req.GetQueue(), Group: req.GetGroup()}
	b.Messages = MessagesFromPB(req.GetMessages(), nil)
	resp := &pluginpb.DeliverResponse{}
	if err := h.BeforeDeliver(ctx, b); err != nil {
		return rejectOr(resp, err, func(r string) { resp.Reject = r })
	}
	for _, i := range b.dropped {
		if int(i) >= len(b.Messages) {
			return nil, status.Errorf(codes.OutOfRange, "dropped index %d of a batch of %d", i, len(b.Messages))
		}
	}
	resp.Drop = b.dropped
	return resp, nil
}

func (s *server) Write(ctx context.Context, req *pluginpb.WriteRequest) (*pluginpb.WriteResponse, error) {
	h, ok := s.impl.(Sink)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "not a sink")
	}
	if err := h.Write(ctx, MessagesFromPB(req.GetMessages(), nil)); err != nil {
		return nil, status.Errorf(codes.Unavailable, "write: %v", err)
	}
	return &pluginpb.WriteResponse{}, nil
}

func (s *server) Read(ctx context.Context, req *pluginpb.ReadRequest) (*pluginpb.ReadResponse, error) {
	h, ok := s.impl.(Source)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "not a source")
	}
	if w := req.GetWaitMs(); w > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(w)*time.Millisecond)
		defer cancel()
	}
	msgs, err := h.Read(ctx, int(req.GetMax()))
	if err != nil && !(ctx.Err() != nil && len(msgs) == 0) {
		return nil, status.Errorf(codes.Unavailable, "read: %v", err)
	}
	for i := range msgs {
		if msgs[i].Topic == "" {
			return nil, status.Errorf(codes.InvalidArgument, "read: message %d has no topic", i)
		}
	}
	return &pluginpb.ReadResponse{Messages: MessagesToPB(msgs)}, nil
}

func (s *server) Ack(ctx context.Context, _ *pluginpb.AckRequest) (*pluginpb.AckResponse, error) {
	h, ok := s.impl.(Source)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "not a source")
	}
	if err := h.Ack(ctx); err != nil {
		return nil, status.Errorf(codes.Unavailable, "ack: %v", err)
	}
	return &pluginpb.AckResponse{}, nil
}

func (s *server) Authenticate(ctx context.Context, req *pluginpb.AuthenticateRequest) (*pluginpb.AuthenticateResponse, error) {
	h, ok := s.impl.(hook.Authenticator)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "not an authenticator")
	}
	c := &hook.Credentials{
		Protocol: req.GetProtocol(), AccessKey: req.GetAccessKey(), Algorithm: req.GetAlgorithm(),
		Signature: req.GetSignature(), Content: req.GetContent(), SecurityToken: req.GetSecurityToken(),
		Fields: req.GetFields(), Username: req.GetUsername(), Password: req.GetPassword(), ClientID: req.GetClientId(),
	}
	if a, err := netip.ParseAddrPort(req.GetAddr()); err == nil {
		c.Addr = a
	}
	if der := req.GetCertificate(); len(der) > 0 {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "client certificate: %v", err)
		}
		c.Certificate = cert
	}
	p, err := h.Authenticate(ctx, c)
	if err != nil {
		var ae *hook.AuthError
		if errors.As(err, &ae) || errors.Is(err, hook.ErrUnauthenticated) {
			return &pluginpb.AuthenticateResponse{Refuse: authReason(err)}, nil
		}
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &pluginpb.AuthenticateResponse{Principal: &pluginpb.Principal{Name: p.Name, Attributes: p.Attributes}}, nil
}

func (s *server) Authorize(ctx context.Context, req *pluginpb.AuthorizeRequest) (*pluginpb.AuthorizeResponse, error) {
	h, ok := s.impl.(hook.Authorizer)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "not an authorizer")
	}
	p := hook.Principal{Name: req.GetPrincipal().GetName(), Attributes: req.GetPrincipal().GetAttributes()}
	r := hook.Resource{Type: hook.ResourceType(req.GetResourceType()), Name: req.GetResourceName()}
	if err := h.Authorize(ctx, p, hook.Action(req.GetAction()), r); err != nil {
		var ae *hook.AuthError
		if errors.As(err, &ae) || errors.Is(err, hook.ErrDenied) {
			return &pluginpb.AuthorizeResponse{Deny: authReason(err)}, nil
		}
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &pluginpb.AuthorizeResponse{}, nil
}

// authReason returns the reason of a refusal.
func authReason(err error) string {
	var ae *hook.AuthError
	if errors.As(err, &ae) && ae.Reason != "" {
		return ae.Reason
	}
	return err.Error()
}

// rejectOr turns a Reject into a response that says so and any other
// error into a gRPC error.
func rejectOr[R any](resp R, err error, set func(string)) (R, error) {
	var rej *RejectError
	if errors.As(err, &rej) {
		reason := rej.Reason
		if reason == "" {
			reason = "rejected by plugin"
		}
		set(reason)
		return resp, nil
	}
	var zero R
	return zero, status.Error(codes.Unknown, fmt.Sprint(err))
}

func clientFromPB(c *pluginpb.Client) Client {
	return Client{Protocol: c.GetProtocol(), ID: c.GetId(), Addr: c.GetAddr(), Group: c.GetGroup()}
}

// MessagesFromPB converts wire messages, appending to dst.
func MessagesFromPB(ms []*pluginpb.Message, dst []Message) []Message {
	for _, m := range ms {
		props, _ := message.DecodeProperties(m.GetProperties())
		dst = append(dst, Message{
			Topic: m.GetTopic(), Body: m.GetBody(), Flag: m.GetFlag(), Properties: props,
			QueueID: m.GetQueueId(), QueueOffset: m.GetQueueOffset(), CommitLogOffset: m.GetCommitLogOffset(),
			StoreTimestamp: m.GetStoreTimestamp(), BornTimestamp: m.GetBornTimestamp(),
		})
	}
	return dst
}

// MessagesToPB converts messages to their wire form.
func MessagesToPB(ms []Message) []*pluginpb.Message {
	out := make([]*pluginpb.Message, len(ms))
	for i := range ms {
		m := &ms[i]
		out[i] = &pluginpb.Message{
			Topic: m.Topic, Body: m.Body, Flag: m.Flag, Properties: message.AppendProperties(nil, m.Properties),
			QueueId: m.QueueID, QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset,
			StoreTimestamp: m.StoreTimestamp, BornTimestamp: m.BornTimestamp,
		}
	}
	return out
}
