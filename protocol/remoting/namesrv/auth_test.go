package namesrv

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/hook/rmqauth"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// keyAuth accepts the access key "ak" as the principal "admin" and
// refuses every other, an empty one included.
type keyAuth struct{}

func (keyAuth) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	if c.AccessKey != "ak" {
		return hook.Principal{}, hook.Unauthenticated("unknown key " + c.AccessKey)
	}
	return hook.Principal{Name: "admin"}, nil
}

// denyAll refuses every action and records what it was asked.
type denyAll struct {
	mu    sync.Mutex
	asked []string
}

func (d *denyAll) Authorize(_ context.Context, p hook.Principal, a hook.Action, r hook.Resource) error {
	d.mu.Lock()
	d.asked = append(d.asked, p.Name+" "+a.String()+" "+r.String())
	d.mu.Unlock()
	return hook.Deny("admins only")
}

func (d *denyAll) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

// signed adds the access key ak to req.
func signed(req *wire.Command) *wire.Command {
	req.SetExt(rmqauth.FieldAccessKey, "ak")
	return req
}

func TestAdminRequestsGuarded(t *testing.T) {
	deny := &denyAll{}
	guarded := &hook.Set{Authorizers: []hook.Authorizer{deny}}
	authenticated := &hook.Set{Authenticators: []hook.Authenticator{keyAuth{}}}
	storeOnly := &hook.Set{Store: []hook.BeforeStore{nil}} // no Authenticator, no Authorizer: nothing is guarded

	admin := []struct {
		name  string
		req   func() *wire.Command
		asked string // what the Authorizer is asked
	}{
		{"delete topic", func() *wire.Command {
			return request(wire.DeleteTopicInNamesrv, &wire.DeleteTopicRequestHeader{Topic: "TopicA", ClusterName: "DefaultCluster"}, nil)
		}, " Delete Cluster:DefaultCluster"},
		{"put kv", func() *wire.Command {
			return request(wire.PutKVConfig, &PutKVConfigRequestHeader{Namespace: "NS", Key: "k", Value: "new"}, nil)
		}, " Update Cluster:"},
		{"delete kv", func() *wire.Command {
			return request(wire.DeleteKVConfig, &KVConfigRequestHeader{Namespace: "NS", Key: "k"}, nil)
		}, " Delete Cluster:"},
		{"wipe write perm", func() *wire.Command {
			return request(wire.WipeWritePermOfBroker, &wire.BrokerNameRequestHeader{BrokerName: "broker-a"}, nil)
		}, " Update Cluster:"},
		{"add write perm", func() *wire.Command {
			return request(wire.AddWritePermOfBroker, &wire.BrokerNameRequestHeader{BrokerName: "broker-a"}, nil)
		}, " Update Cluster:"},
	}
	open := []struct {
		name string
		req  func() *wire.Command
	}{
		{"route", func() *wire.Command {
			return request(wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: "TopicA"}, nil)
		}},
		{"cluster info", func() *wire.Command { return request(wire.GetBrokerClusterInfo, nil, nil) }},
		{"get kv", func() *wire.Command {
			return request(wire.GetKVConfig, &KVConfigRequestHeader{Namespace: "NS", Key: "k"}, nil)
		}},
	}

	for _, tc := range []struct {
		name    string
		hooks   *hook.Set
		sign    bool
		code    wire.ResponseCode // of the admin requests
		remark  string            // a substring of their remark
		denials bool              // whether the Authorizer is asked
	}{
		{name: "no hooks", code: wire.Success},
		{name: "hooks without auth", hooks: storeOnly, code: wire.Success},
		{name: "authorizer denies", hooks: guarded, code: wire.NoPermission, remark: "admins only", denials: true},
		{name: "signed, authorizer denies", hooks: guarded, sign: true, code: wire.NoPermission, remark: "admins only", denials: true},
		{name: "unauthenticated", hooks: authenticated, code: wire.NoPermission, remark: "unknown key"},
		{name: "authenticated", hooks: authenticated, sign: true, code: wire.Success},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deny.mu.Lock()
			deny.asked = nil
			deny.mu.Unlock()
			f := startNamesrv(t, Options{Hooks: tc.hooks})
			p := dialPeer(t, f.addr, wire.JSON)
			ctx := context.Background()

			// A broker registers without credentials: registration is open.
			resp, err := p.Invoke(ctx, registerRequest(t, "broker-a", 0, "127.0.0.1:10911", false, false, topicCfg("TopicA", 4)))
			if err != nil {
				t.Fatal(err)
			}
			if resp.ResponseCode() != wire.Success {
				t.Fatalf("register: %s %q", resp.ResponseCode(), resp.Remark)
			}
			f.kv.Put("NS", "k", "old")

			for _, o := range open {
				resp, err := p.Invoke(ctx, o.req())
				if err != nil {
					t.Fatal(err)
				}
				if resp.ResponseCode() != wire.Success {
					t.Errorf("%s: %s %q, want SUCCESS", o.name, resp.ResponseCode(), resp.Remark)
				}
			}
			for _, a := range admin {
				req := a.req()
				if tc.sign {
					req = signed(req)
				}
				resp, err := p.Invoke(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.ResponseCode() != tc.code || !strings.Contains(resp.Remark, tc.remark) {
					t.Errorf("%s: %s %q, want %s with %q", a.name, resp.ResponseCode(), resp.Remark, tc.code, tc.remark)
				}
			}

			// A refused request changed nothing; an allowed one ran.
			rd, _ := f.routes.Route("TopicA")
			haveRoute := len(rd.QueueDatas) > 0
			v, haveKey := f.kv.Get("NS", "k")
			if tc.code == wire.Success {
				if haveRoute || haveKey {
					t.Errorf("allowed admin requests did not run: route %v, kv %q %v", haveRoute, v, haveKey)
				}
			} else if !haveRoute || v != "old" {
				t.Errorf("refused admin requests changed state: route %v, kv %q", haveRoute, v)
			}

			asked := deny.calls()
			if !tc.denials {
				if len(asked) != 0 {
					t.Errorf("authorizer asked %q", asked)
				}
				return
			}
			who := "" // guarded has no Authenticator: every principal is anonymous
			if len(asked) != len(admin) {
				t.Fatalf("authorizer asked %q, want one question per admin request", asked)
			}
			for i, a := range admin {
				if asked[i] != who+a.asked {
					t.Errorf("%s: authorizer asked %q, want %q", a.name, asked[i], who+a.asked)
				}
			}
		})
	}
}
