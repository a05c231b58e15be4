package admin

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// User is a user of a server's access-control list, as admin shows it
// (never with its secret).
type User struct {
	Name   string `json:"name"`
	Type   string `json:"type"`   // Super or Normal
	Status string `json:"status"` // enable or disable
}

// Policy is one policy entry of a user.
type Policy struct {
	Resource  string   `json:"resource"`
	Actions   []string `json:"actions"`
	SourceIPs []string `json:"sourceIps"`
	Decision  string   `json:"decision"`
}

// UserACL is a user's policies.
type UserACL struct {
	User     string   `json:"user"`
	Policies []Policy `json:"policies"`
}

// AuthChange says which brokers took a change of users or policies.
type AuthChange struct {
	Brokers []Broker `json:"brokers"`
}

// authWrite sends an AUTH_* change to every broker master.
func (c *Client) authWrite(ctx context.Context, code wire.RequestCode, h *wire.AuthHeader, body any) (*AuthChange, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, invalidf("encode: %v", err)
		}
	}
	masters, err := c.masters(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, m := range masters {
		if _, err := c.invoke(ctx, brokerTarget(m), request(code, h, b)); err != nil {
			return nil, err
		}
	}
	return &AuthChange{Brokers: masters}, nil
}

// authRead asks the first broker master an AUTH_* question.
func (c *Client) authRead(ctx context.Context, code wire.RequestCode, h *wire.AuthHeader, v any) error {
	masters, err := c.masters(ctx, "")
	if err != nil {
		return err
	}
	t := brokerTarget(masters[0])
	resp, err := c.invoke(ctx, t, request(code, h, nil))
	if err != nil {
		return err
	}
	return decodeBody(t, code, resp.Body, v)
}

// CreateUser creates a user (typ Super or Normal; "" Normal) on every
// broker master.
func (c *Client) CreateUser(ctx context.Context, name, secret, typ string) (*AuthChange, error) {
	if name == "" || secret == "" {
		return nil, invalidf("a user needs a name and a secret")
	}
	return c.authWrite(ctx, wire.AuthCreateUser, &wire.AuthHeader{Username: name}, wire.UserInfo{Username: name, Password: secret, UserType: typ})
}

// UpdateUser changes what is set of a user's secret, type and status.
func (c *Client) UpdateUser(ctx context.Context, name, secret, typ, status string) (*AuthChange, error) {
	if secret == "" && typ == "" && status == "" {
		return nil, invalidf("nothing to change: give a secret, a type or a status")
	}
	return c.authWrite(ctx, wire.AuthUpdateUser, &wire.AuthHeader{Username: name}, wire.UserInfo{Username: name, Password: secret, UserType: typ, UserStatus: status})
}

// DeleteUser deletes a user and its policies.
func (c *Client) DeleteUser(ctx context.Context, name string) (*AuthChange, error) {
	return c.authWrite(ctx, wire.AuthDeleteUser, &wire.AuthHeader{Username: name}, nil)
}

func userOf(u wire.UserInfo) User {
	return User{Name: u.Username, Type: u.UserType, Status: u.UserStatus}
}

// GetUser returns a user.
func (c *Client) GetUser(ctx context.Context, name string) (*User, error) {
	var u wire.UserInfo
	if err := c.authRead(ctx, wire.AuthGetUser, &wire.AuthHeader{Username: name}, &u); err != nil {
		return nil, err
	}
	out := userOf(u)
	return &out, nil
}

// ListUsers returns the users whose names contain filter.
func (c *Client) ListUsers(ctx context.Context, filter string) ([]User, error) {
	var us []wire.UserInfo
	if err := c.authRead(ctx, wire.AuthListUser, &wire.AuthHeader{Filter: filter}, &us); err != nil {
		return nil, err
	}
	out := []User{}
	for _, u := range us {
		out = append(out, userOf(u))
	}
	return out, nil
}

func aclBody(user string, p Policy) wire.AclInfo {
	return wire.AclInfo{Subject: "User:" + user, Policies: []wire.PolicyInfo{{PolicyType: "Custom", Entries: []wire.PolicyEntryInfo{{
		Resource: p.Resource, Actions: p.Actions, SourceIPs: p.SourceIPs, Decision: p.Decision,
	}}}}}
}

// CreateACL adds a policy entry to a user's (replacing the user's entry
// on the same resource, if any).
func (c *Client) CreateACL(ctx context.Context, user string, p Policy) (*AuthChange, error) {
	return c.authWrite(ctx, wire.AuthCreateACL, &wire.AuthHeader{Subject: "User:" + user}, aclBody(user, p))
}

// UpdateACL replaces a user's policy entry on p's resource (or adds it).
func (c *Client) UpdateACL(ctx context.Context, user string, p Policy) (*AuthChange, error) {
	return c.authWrite(ctx, wire.AuthUpdateACL, &wire.AuthHeader{Subject: "User:" + user}, aclBody(user, p))
}

// DeleteACL deletes a user's entries on resource, or all of them when
// resource is "".
func (c *Client) DeleteACL(ctx context.Context, user, resource string) (*AuthChange, error) {
	return c.authWrite(ctx, wire.AuthDeleteACL, &wire.AuthHeader{Subject: "User:" + user, Resource: resource}, nil)
}

func aclOf(a wire.AclInfo) UserACL {
	out := UserACL{User: strings.TrimPrefix(a.Subject, "User:"), Policies: []Policy{}}
	for _, p := range a.Policies {
		for _, e := range p.Entries {
			ips := e.SourceIPs
			if ips == nil {
				ips = []string{}
			}
			out.Policies = append(out.Policies, Policy{Resource: e.Resource, Actions: e.Actions, SourceIPs: ips, Decision: e.Decision})
		}
	}
	return out
}

// GetACL returns a user's policies.
func (c *Client) GetACL(ctx context.Context, user string) (*UserACL, error) {
	var a wire.AclInfo
	if err := c.authRead(ctx, wire.AuthGetACL, &wire.AuthHeader{Subject: "User:" + user}, &a); err != nil {
		return nil, err
	}
	out := aclOf(a)
	return &out, nil
}

// ListACLs returns the policies of the users whose names contain
// userFilter, those on resources containing resourceFilter.
func (c *Client) ListACLs(ctx context.Context, userFilter, resourceFilter string) ([]UserACL, error) {
	var as []wire.AclInfo
	if err := c.authRead(ctx, wire.AuthListACL, &wire.AuthHeader{SubjectFilter: userFilter, ResourceFilter: resourceFilter}, &as); err != nil {
		return nil, err
	}
	out := []UserACL{}
	for _, a := range as {
		out = append(out, aclOf(a))
	}
	return out, nil
}
