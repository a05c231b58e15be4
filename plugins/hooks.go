package plugins

import (
	"context"
	"fmt"
	"sync"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/plugins/internal/pluginpb"
)

// Interface guards.
var (
	_ hook.BeforeStore   = (*storeHook)(nil)
	_ hook.BeforeDeliver = (*deliverHook)(nil)
	_ hook.Authenticator = (*authenticator)(nil)
	_ hook.Authorizer    = (*authorizer)(nil)
	_ hook.Waiting       = (*storeHook)(nil)
	_ hook.Waiting       = (*deliverHook)(nil)
	_ hook.Waiting       = (*authenticator)(nil)
	_ hook.Waiting       = (*authorizer)(nil)
)

// MayWait says that a plugin's hooks wait on its process: front-ends run
// the requests that call them off their connections' reading goroutines.
func (*authenticator) MayWait() bool { return true }

// MayWait implements hook.Waiting.
func (*authorizer) MayWait() bool { return true }

// MayWait implements hook.Waiting.
func (*storeHook) MayWait() bool { return true }

// MayWait implements hook.Waiting.
func (*deliverHook) MayWait() bool { return true }

// authenticator stands in for a plugin's hook.Authenticator.
type authenticator struct{ p *Plugin }

// authorizer stands in for a plugin's hook.Authorizer.
type authorizer struct{ p *Plugin }

// Authenticate asks the plugin; a failed call refuses (fail closed).
func (h *authenticator) Authenticate(ctx context.Context, c *hook.Credentials) (hook.Principal, error) {
	p := h.p
	req := &pluginpb.AuthenticateRequest{
		Protocol: c.Protocol, AccessKey: c.AccessKey, Algorithm: c.Algorithm, Signature: c.Signature,
		Content: c.Content, SecurityToken: c.SecurityToken, Fields: c.Fields,
		Username: c.Username, Password: c.Password, ClientId: c.ClientID,
	}
	if c.Addr.IsValid() {
		req.Addr = c.Addr.String()
	}
	if cert := c.Certificate; cert != nil {
		req.Certificate, req.CertificateSubject = cert.Raw, cert.Subject.String()
	}
	var resp *pluginpb.AuthenticateResponse
	err := p.call(ctx, p.opts.CallTimeout, func(ctx context.Context, rpc pluginpb.PluginClient) (err error) {
		resp, err = rpc.Authenticate(ctx, req)
		return err
	})
	if err != nil {
		return hook.Principal{}, fmt.Errorf("%w: %w", hook.Unauthenticated("authentication plugin "+p.spec.Name+" failed"), err)
	}
	if r := resp.GetRefuse(); r != "" {
		p.rejects.Add(1)
		return hook.Principal{}, hook.Unauthenticated(r)
	}
	pr := resp.GetPrincipal()
	return hook.Principal{Name: pr.GetName(), Attributes: pr.GetAttributes()}, nil
}

// Authorize asks the plugin; a failed call denies (fail closed).
func (h *authorizer) Authorize(ctx context.Context, pr hook.Principal, a hook.Action, r hook.Resource) error {
	p := h.p
	req := &pluginpb.AuthorizeRequest{
		Principal: &pluginpb.Principal{Name: pr.Name, Attributes: pr.Attributes},
		Action:    uint32(a), ResourceType: uint32(r.Type), ResourceName: r.Name,
	}
	var resp *pluginpb.AuthorizeResponse
	err := p.call(ctx, p.opts.CallTimeout, func(ctx context.Context, rpc pluginpb.PluginClient) (err error) {
		resp, err = rpc.Authorize(ctx, req)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %w", hook.Deny("authorization plugin "+p.spec.Name+" failed"), err)
	}
	if d := resp.GetDeny(); d != "" {
		p.rejects.Add(1)
		return hook.Deny(d)
	}
	return nil
}

// storeHook stands in for a plugin's BeforeStore. The batches of
// concurrent sends reach the plugin together (gather).
type storeHook struct {
	p      *Plugin
	gather gather[*pluginpb.StoreRequest, *pluginpb.StoreResponse]
}

// Calls of a store hook's gathering: two in flight, so that one gathers
// while the other is out, each of at most 1 MiB unless one batch alone
// is larger (gRPC's default limit on a message received is 4 MiB).
const (
	storeCalls     = 2
	storeCallBytes = 1 << 20
)

func newStoreHook(p *Plugin) *storeHook {
	h := &storeHook{p: p}
	h.gather = gather[*pluginpb.StoreRequest, *pluginpb.StoreResponse]{send: h.send, maxCalls: storeCalls, maxBytes: storeCallBytes}
	return h
}

// send makes one call of the batches reqs: BeforeStore for one,
// BeforeStoreMany for several.
func (h *storeHook) send(reqs []*pluginpb.StoreRequest) ([]*pluginpb.StoreResponse, []error) {
	p := h.p
	resps, errs := make([]*pluginpb.StoreResponse, len(reqs)), make([]error, len(reqs))
	// The call is the gathered senders', not the first one's: it is not
	// cancelled when that one gives up.
	ctx := context.Background()
	if len(reqs) == 1 {
		errs[0] = p.call(ctx, p.opts.CallTimeout, func(ctx context.Context, c pluginpb.PluginClient) (err error) {
			resps[0], err = c.BeforeStore(ctx, reqs[0])
			return err
		})
		return resps, errs
	}
	var many *pluginpb.StoreManyResponse
	err := p.call(ctx, p.opts.CallTimeout, func(ctx context.Context, c pluginpb.PluginClient) (err error) {
		many, err = c.BeforeStoreMany(ctx, &pluginpb.StoreManyRequest{Batches: reqs})
		return err
	})
	if err == nil && len(many.GetBatches()) != len(reqs) {
		p.failures.Add(1)
		err = fmt.Errorf("%w: %s: %d answers to %d batches", ErrCallFailed, p.spec.Name, len(many.GetBatches()), len(reqs))
	}
	for i := range reqs {
		switch {
		case err != nil:
			errs[i] = err
		case many.GetBatches()[i].GetError() != "":
			p.failures.Add(1)
			errs[i] = fmt.Errorf("%w: %s: %s", ErrCallFailed, p.spec.Name, many.GetBatches()[i].GetError())
		default:
			resps[i] = many.GetBatches()[i]
		}
	}
	return resps, errs
}

// deliverHook stands in for a plugin's BeforeDeliver.
type deliverHook struct{ p *Plugin }

// scratch holds a call's wire messages, reused across calls: a request
// is marshalled before the call returns, so the structs and the encoded
// properties (not the bodies they point to, which are the batch's) can
// be pooled.
type scratch struct {
	msgs  []pluginpb.Message
	ptrs  []*pluginpb.Message
	props []byte // the properties of messages that held them decoded
	ends  []int  // ends[i]: where message i's encoded properties end in props
	size  int    // about the size of the messages on the wire
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// wire fills s with msgs in their wire form, bodies only when asked for.
// Properties travel encoded, as they are stored: those a message holds
// encoded go as they are.
func (s *scratch) wire(msgs []*message.Message, bodies bool) []*pluginpb.Message {
	n := len(msgs)
	if cap(s.msgs) < n {
		s.msgs = make([]pluginpb.Message, n)
		s.ptrs = make([]*pluginpb.Message, n)
	}
	s.msgs, s.ptrs = s.msgs[:n], s.ptrs[:n]
	s.props, s.ends = s.props[:0], s.ends[:0]
	s.size = 0
	for _, m := range msgs {
		if m.Properties != nil {
			s.props = message.AppendProperties(s.props, m.Properties)
		} else {
			s.size += len(m.EncodedProperties)
		}
		s.ends = append(s.ends, len(s.props))
		s.size += len(m.Topic) + 48 // the fixed fields and their tags, at most
		if bodies {
			s.size += len(m.Body)
		}
	}
	s.size += len(s.props)
	start := 0
	for i, m := range msgs {
		w := &s.msgs[i]
		w.Reset()
		w.Topic, w.Flag = m.Topic, m.Flag
		if m.Properties != nil {
			w.Properties = s.props[start:s.ends[i]]
		} else {
			w.Properties = m.EncodedProperties
		}
		start = s.ends[i]
		w.QueueId, w.QueueOffset, w.CommitLogOffset = m.QueueID, m.QueueOffset, m.CommitLogOffset
		w.StoreTimestamp, w.BornTimestamp = m.StoreTimestamp, m.BornTimestamp
		if bodies {
			w.Body = m.Body
		}
		s.ptrs[i] = w
	}
	return s.ptrs
}

func (s *scratch) release() {
	for i := range s.msgs {
		s.msgs[i].Reset() // drop references to the batch
		s.ptrs[i] = nil
	}
	if cap(s.props) > 1<<20 {
		s.props = nil // do not keep the properties of an outsized batch
	}
	scratchPool.Put(s)
}

func wireClient(c hook.Client) *pluginpb.Client {
	w := &pluginpb.Client{Protocol: c.Protocol, Id: c.ID, Group: c.Group}
	if c.Addr.IsValid() {
		w.Addr = c.Addr.String()
	}
	return w
}

// BeforeStore sends the batch to the plugin and applies its answer.
func (h *storeHook) BeforeStore(ctx context.Context, b *hook.StoreBatch) error {
	p := h.p
	s := scratchPool.Get().(*scratch)
	defer func() { s.release() }()
	req := &pluginpb.StoreRequest{Client: wireClient(b.Client), Topic: b.Topic, Queue: b.Queue, Messages: s.wire(b.Messages, p.bodies)}
	resp, err, held := h.gather.do(ctx, req, s.size)
	if held {
		// The sender gave up while its batch is out: the call may still
		// read the batch's wire form, so it is not reused.
		s = new(scratch)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return p.policy(err)
	}
	if r := resp.GetReject(); r != "" {
		p.rejects.Add(1)
		return hook.Reject(r)
	}
	for _, ch := range resp.GetChanges() {
		if int(ch.GetIndex()) >= len(b.Messages) {
			p.failures.Add(1)
			return p.policy(fmt.Errorf("%w: %s: changed message %d of a batch of %d", ErrCallFailed, p.spec.Name, ch.GetIndex(), len(b.Messages)))
		}
	}
	for _, ch := range resp.GetChanges() {
		props, _ := message.DecodeProperties(ch.GetProperties())
		if props == nil {
			props = map[string]string{}
		}
		m := b.Messages[ch.GetIndex()]
		m.Properties, m.EncodedProperties = props, nil
	}
	return nil
}

// BeforeDeliver sends the batch to the plugin and drops what it says.
func (h *deliverHook) BeforeDeliver(ctx context.Context, b *hook.DeliverBatch) error {
	p := h.p
	s := scratchPool.Get().(*scratch)
	defer s.release()
	req := &pluginpb.DeliverRequest{Client: wireClient(b.Client), Topic: b.Topic, Queue: b.Queue, Group: b.Group, Messages: s.wire(b.Messages, p.bodies)}
	var resp *pluginpb.DeliverResponse
	err := p.call(ctx, p.opts.CallTimeout, func(ctx context.Context, c pluginpb.PluginClient) (err error) {
		resp, err = c.BeforeDeliver(ctx, req)
		return err
	})
	if err != nil {
		return p.policy(err)
	}
	if r := resp.GetReject(); r != "" {
		p.rejects.Add(1)
		return hook.Reject(r)
	}
	for _, i := range resp.GetDrop() {
		if int(i) >= len(b.Messages) {
			p.failures.Add(1)
			return p.policy(fmt.Errorf("%w: %s: dropped message %d of a batch of %d", ErrCallFailed, p.spec.Name, i, len(b.Messages)))
		}
	}
	for _, i := range resp.GetDrop() {
		b.Drop(int(i))
	}
	return nil
}

// policy applies the interceptor failure policy to a failed call.
func (p *Plugin) policy(err error) error {
	if p.opts.Policy == PolicySkip {
		return nil
	}
	return err
}
