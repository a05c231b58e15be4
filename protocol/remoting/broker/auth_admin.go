package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// ACL administration: RocketMQ 5.3's AUTH_* requests (wire/header_auth.go)
// on the engine's access-control list, the *acl.ACL among its
// Authorizers. The requests pass the guard like every other: create,
// update and delete are Update on the cluster, get and list are Get on
// it (as RocketMQ's ACL has them), which super users may do and normal
// users only with a policy on Cluster:<cluster>. Without an ACL they
// are answered REQUEST_CODE_NOT_SUPPORTED, saying so.
//
// Users are answered without their secrets.

// errAuthOff: the engine has no ACL.
var errAuthOff = fmt.Errorf("%w: authentication is off (start the server with --auth)", errNotSupported)

// findACL returns the ACL among the Authorizers of b's engine, or nil.
func (b *Broker) findACL() *acl.ACL {
	for _, z := range b.eng.Hooks().Authorizers {
		if a, ok := z.(*acl.ACL); ok {
			return a
		}
	}
	return nil
}

// authAdmin wraps an AUTH_* handler: it decodes the header and finds the
// ACL.
func (b *Broker) authAdmin(f func(a *acl.ACL, h *wire.AuthHeader, req *wire.Command) (any, error)) server.HandlerFunc {
	return func(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
		a := b.findACL()
		if a == nil {
			return errorResponse(req, errAuthOff)
		}
		var h wire.AuthHeader
		if err := decodeHeader(req, &h); err != nil {
			return errorResponse(req, err)
		}
		v, err := f(a, &h, req)
		if err != nil {
			return errorResponse(req, fmt.Errorf("broker: %s: %w", req.RequestCode(), err))
		}
		resp := success(req)
		if v != nil {
			if resp.Body, err = wire.EncodeJSONBody(v); err != nil {
				return errorResponse(req, err)
			}
		}
		return resp
	}
}

func (b *Broker) registerAuthAdmin(mux *server.Mux) {
	for code, f := range map[wire.RequestCode]func(*acl.ACL, *wire.AuthHeader, *wire.Command) (any, error){
		wire.AuthCreateUser: authCreateUser,
		wire.AuthUpdateUser: authUpdateUser,
		wire.AuthDeleteUser: authDeleteUser,
		wire.AuthGetUser:    authGetUser,
		wire.AuthListUser:   authListUser,
		wire.AuthCreateACL:  authPutACL,
		wire.AuthUpdateACL:  authPutACL,
		wire.AuthDeleteACL:  authDeleteACL,
		wire.AuthGetACL:     authGetACL,
		wire.AuthListACL:    authListACL,
	} {
		b.handle(mux, code, server.KindDefault, false, b.authAdmin(f))
	}
}

// userName returns the user a request names: the header's username, else
// the body's.
func userName(h *wire.AuthHeader, body *wire.UserInfo) (string, error) {
	name := h.Username
	if name == "" && body != nil {
		name = body.Username
	}
	if name == "" {
		return "", fmt.Errorf("%w: no username", errInvalidRequest)
	}
	return name, nil
}

func authCreateUser(a *acl.ACL, h *wire.AuthHeader, req *wire.Command) (any, error) {
	var u wire.UserInfo
	if err := wire.DecodeJSONBody(req.Body, &u); err != nil {
		return nil, err
	}
	name, err := userName(h, &u)
	if err != nil {
		return nil, err
	}
	return nil, a.CreateUser(acl.User{Name: name, Secret: u.Password, Type: acl.UserType(u.UserType), Status: acl.UserStatus(u.UserStatus)})
}

func authUpdateUser(a *acl.ACL, h *wire.AuthHeader, req *wire.Command) (any, error) {
	var u wire.UserInfo
	if err := wire.DecodeJSONBody(req.Body, &u); err != nil {
		return nil, err
	}
	name, err := userName(h, &u)
	if err != nil {
		return nil, err
	}
	ch := acl.UserChange{Secret: u.Password}
	if u.UserType != "" {
		if ch.Type, err = acl.ParseUserType(u.UserType); err != nil {
			return nil, err
		}
	}
	if u.UserStatus != "" {
		if ch.Status, err = acl.ParseUserStatus(u.UserStatus); err != nil {
			return nil, err
		}
	}
	return nil, a.UpdateUser(name, ch)
}

func authDeleteUser(a *acl.ACL, h *wire.AuthHeader, _ *wire.Command) (any, error) {
	name, err := userName(h, nil)
	if err != nil {
		return nil, err
	}
	return nil, a.DeleteUser(name)
}

func userInfo(u acl.User) wire.UserInfo {
	return wire.UserInfo{Username: u.Name, UserType: string(u.Type), UserStatus: string(u.Status)}
}

func authGetUser(a *acl.ACL, h *wire.AuthHeader, _ *wire.Command) (any, error) {
	name, err := userName(h, nil)
	if err != nil {
		return nil, err
	}
	u, err := a.User(name)
	if err != nil {
		return nil, err
	}
	return userInfo(u), nil
}

func authListUser(a *acl.ACL, h *wire.AuthHeader, _ *wire.Command) (any, error) {
	out := []wire.UserInfo{}
	for _, u := range a.Users(h.Filter) {
		out = append(out, userInfo(u))
	}
	return out, nil
}

// subjectUser returns the user name of a subject, "User:NAME" (or NAME).
func subjectUser(subject string) (string, error) {
	name := subject
	if typ, n, ok := strings.Cut(subject, ":"); ok {
		if !strings.EqualFold(typ, "User") {
			return "", fmt.Errorf("%w: subject %q: want User:NAME", errInvalidRequest, subject)
		}
		name = n
	}
	if name == "" {
		return "", fmt.Errorf("%w: no subject (want User:NAME)", errInvalidRequest)
	}
	return name, nil
}

// authPutACL serves AUTH_CREATE_ACL and AUTH_UPDATE_ACL: the body's
// entries are added to the subject's policies, replacing those on the
// same resources.
func authPutACL(a *acl.ACL, h *wire.AuthHeader, req *wire.Command) (any, error) {
	var info wire.AclInfo
	if err := wire.DecodeJSONBody(req.Body, &info); err != nil {
		return nil, err
	}
	subject := h.Subject
	if subject == "" {
		subject = info.Subject
	}
	name, err := subjectUser(subject)
	if err != nil {
		return nil, err
	}
	var entries []acl.Entry
	for _, p := range info.Policies {
		for _, e := range p.Entries {
			entries = append(entries, acl.Entry{Resource: e.Resource, Actions: e.Actions, SourceIPs: e.SourceIPs, Decision: acl.Decision(e.Decision)})
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: no policy entry", errInvalidRequest)
	}
	return nil, a.AddPolicies(name, entries)
}

func authDeleteACL(a *acl.ACL, h *wire.AuthHeader, _ *wire.Command) (any, error) {
	name, err := subjectUser(h.Subject)
	if err != nil {
		return nil, err
	}
	return nil, a.DeletePolicies(name, h.Resource)
}

// aclInfo returns u's policies, those on resources containing
// resourceFilter.
func aclInfo(u acl.User, resourceFilter string) wire.AclInfo {
	entries := []wire.PolicyEntryInfo{}
	for _, e := range u.Policies {
		if !strings.Contains(e.Resource, resourceFilter) {
			continue
		}
		ips := e.SourceIPs
		if ips == nil {
			ips = []string{}
		}
		entries = append(entries, wire.PolicyEntryInfo{Resource: e.Resource, Actions: e.Actions, SourceIPs: ips, Decision: string(e.Decision)})
	}
	return wire.AclInfo{Subject: "User:" + u.Name, Policies: []wire.PolicyInfo{{PolicyType: "Custom", Entries: entries}}}
}

func authGetACL(a *acl.ACL, h *wire.AuthHeader, _ *wire.Command) (any, error) {
	name, err := subjectUser(h.Subject)
	if err != nil {
		return nil, err
	}
	u, err := a.User(name)
	if err != nil {
		return nil, err
	}
	return aclInfo(u, ""), nil
}

func authListACL(a *acl.ACL, h *wire.AuthHeader, _ *wire.Command) (any, error) {
	filter := h.SubjectFilter
	if _, n, ok := strings.Cut(filter, ":"); ok {
		filter = n
	}
	out := []wire.AclInfo{}
	for _, u := range a.Users(filter) {
		info := aclInfo(u, h.ResourceFilter)
		if len(info.Policies[0].Entries) > 0 {
			out = append(out, info)
		}
	}
	return out, nil
}
