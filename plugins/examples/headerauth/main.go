// Command headerauth is a Karman plugin that admits clients by a token
// they send in a header (a field of the request) and, optionally, only
// messages that carry an allowed value in a property:
//
//   - as a hook.Authenticator, the principal of a request is the value
//     of its field (remoting extField or gRPC header) named by field,
//     when that value is allowed; other requests are refused;
//   - as a hook.Authorizer, only allowed principals may send (Pub) to
//     the topics (every topic by default); other actions are allowed;
//   - as a store interceptor, when header is set, a send batch whose
//     messages do not all carry the property header with an allowed
//     value is rejected.
//
// Configuration:
//
//	allow    allowed tokens, separated by '+' (required)
//	field    the request field that holds the token (default token)
//	topics   topics guarded, separated by '+' (default: every topic)
//	header   the message property to check (default: none)
//
//	karman serve --plugin auth=/path/to/headerauth,allow=s3cret,header=token
package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/plugins/shared"
)

type headerAuth struct {
	allow  []string
	field  string
	topics []string
	header string
}

func (h *headerAuth) Configure(_ context.Context, _ string, cfg map[string]string) (shared.Settings, error) {
	if cfg["allow"] == "" {
		return shared.Settings{}, errors.New("headerauth: allow is required")
	}
	h.allow = strings.Split(cfg["allow"], "+")
	h.field = cfg["field"]
	if h.field == "" {
		h.field = "token"
	}
	h.topics = nil
	if t := cfg["topics"]; t != "" {
		h.topics = strings.Split(t, "+")
	}
	h.header = cfg["header"]
	return shared.Settings{}, nil
}

func (h *headerAuth) guarded(topic string) bool {
	return len(h.topics) == 0 || slices.Contains(h.topics, topic)
}

func (h *headerAuth) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	v, ok := c.Fields[h.field]
	if !ok {
		return hook.Principal{}, hook.Unauthenticated("no " + h.field)
	}
	if !slices.Contains(h.allow, v) {
		return hook.Principal{}, hook.Unauthenticated(h.field + " not allowed")
	}
	return hook.Principal{Name: v}, nil
}

func (h *headerAuth) Authorize(_ context.Context, p hook.Principal, a hook.Action, r hook.Resource) error {
	if a != hook.ActionPub || r.Type != hook.ResourceTopic || !h.guarded(r.Name) {
		return nil
	}
	if !slices.Contains(h.allow, p.Name) {
		return hook.Deny("may not send to " + r.Name)
	}
	return nil
}

func (h *headerAuth) BeforeStore(_ context.Context, b *shared.StoreBatch) error {
	if h.header == "" || !h.guarded(b.Topic) {
		return nil
	}
	for i, m := range b.Messages {
		v, ok := m.Properties[h.header]
		if !ok {
			return shared.Reject(fmt.Sprintf("message %d has no %s", i, h.header))
		}
		if !slices.Contains(h.allow, v) {
			return shared.Reject(fmt.Sprintf("message %d: %s not allowed to send to %s", i, h.header, b.Topic))
		}
	}
	return nil
}

func main() { shared.Serve(&headerAuth{}) }
