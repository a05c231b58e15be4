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
)

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
	}
	if c.Addr.IsValid() {
		req.Addr = c.Addr.String()
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

// storeHook stands in for a plugin's BeforeStore.
type storeHook struct{ p *Plugin }

// deliverHook stands in for a plugin's BeforeDeliver.
type deliverHook struct{ p *Plugin }

// scratch holds a call's wire messages, reused across calls: a request
// is marshalled before the call returns, so the structs (not the maps
// and bodies they point to, which are the batch's) can be pooled.
type scratch struct {
	msgs []pluginpb.Message
	ptrs []*pluginpb.Message
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// wire fills s with msgs in their wire form, bodies only when asked for.
func (s *scratch) wire(msgs []*message.Message, bodies bool) []*pluginpb.Message {
	n := len(msgs)
	if cap(s.msgs) < n {
		s.msgs = make([]pluginpb.Message, n)
		s.ptrs = make([]*pluginpb.Message, n)
	}
	s.msgs, s.ptrs = s.msgs[:n], s.ptrs[:n]
	for i, m := range msgs {
		w := &s.msgs[i]
		w.Reset()
		w.Topic, w.Flag, w.Properties = m.Topic, m.Flag, m.Properties
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
	defer s.release()
	req := &pluginpb.StoreRequest{Client: wireClient(b.Client), Topic: b.Topic, Queue: b.Queue, Messages: s.wire(b.Messages, p.bodies)}
	var resp *pluginpb.StoreResponse
	err := p.call(ctx, p.opts.CallTimeout, func(ctx context.Context, c pluginpb.PluginClient) (err error) {
		resp, err = c.BeforeStore(ctx, req)
		return err
	})
	if err != nil {
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
		props := ch.GetProperties()
		if props == nil {
			props = map[string]string{}
		}
		b.Messages[ch.GetIndex()].Properties = props
	}
	return nil
}

// BeforeDeliver sends the batch to the plugin and drops what it says.
func (h *deliverHook) BeforeDeliver(ctx context.Context, b *hook.DeliverBatch) error {
	p := h.p
	for _, m := range b.Messages {
		m.LoadProperties()
	}
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
