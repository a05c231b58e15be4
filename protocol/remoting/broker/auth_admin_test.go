package broker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/protocol/remoting/auth"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func aclHarness(t *testing.T) (*harness, *acl.ACL) {
	a := acl.New(acl.Options{})
	h := newHarnessWith(t, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true, AutoCreateGroups: true, Hooks: []any{a}},
		broker: Options{AutoCreateTopics: true, AutoCreateGroups: true},
	})
	if err := a.Attach(h.eng); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateUser(acl.User{Name: "root", Secret: "rootsecret", Type: acl.Super}); err != nil {
		t.Fatal(err)
	}
	return h, a
}

func signed(code wire.RequestCode, hd *wire.AuthHeader, body any, ak, sk string) *wire.Command {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req := request(code, hd, b)
	auth.Sign(req, ak, sk)
	return req
}

func TestAuthAdmin(t *testing.T) {
	h, a := aclHarness(t)
	p := h.dial(nil)
	call := func(code wire.RequestCode, hd *wire.AuthHeader, body any, ak, sk string) *wire.Command {
		return invoke(t, p, signed(code, hd, body, ak, sk))
	}
	root := func(code wire.RequestCode, hd *wire.AuthHeader, body any) *wire.Command {
		return call(code, hd, body, "root", "rootsecret")
	}

	wantCode(t, root(wire.AuthCreateUser, &wire.AuthHeader{Username: "app"}, wire.UserInfo{Username: "app", Password: "appsecret", UserType: "Normal"}), wire.Success)
	wantCode(t, root(wire.AuthCreateUser, &wire.AuthHeader{Username: "app"}, wire.UserInfo{Username: "app", Password: "appsecret"}), wire.InvalidParameter)
	wantCode(t, root(wire.AuthCreateUser, &wire.AuthHeader{Username: "bad name"}, wire.UserInfo{Password: "appsecret"}), wire.InvalidParameter)

	acl1 := wire.AclInfo{Subject: "User:app", Policies: []wire.PolicyInfo{{Entries: []wire.PolicyEntryInfo{{Resource: "Topic:orders", Actions: []string{"Pub"}, Decision: "Allow"}}}}}
	wantCode(t, root(wire.AuthCreateACL, &wire.AuthHeader{Subject: "User:app"}, acl1), wire.Success)
	acl2 := wire.AclInfo{Policies: []wire.PolicyInfo{{Entries: []wire.PolicyEntryInfo{{Resource: "Group:g", Actions: []string{"Sub"}, SourceIPs: []string{"127.0.0.0/8"}, Decision: "Allow"}}}}}
	wantCode(t, root(wire.AuthCreateACL, &wire.AuthHeader{Subject: "User:app"}, acl2), wire.Success)
	bad := wire.AclInfo{Policies: []wire.PolicyInfo{{Entries: []wire.PolicyEntryInfo{{Resource: "Topic:a*b", Actions: []string{"Pub"}, Decision: "Allow"}}}}}
	resp := root(wire.AuthCreateACL, &wire.AuthHeader{Subject: "User:app"}, bad)
	wantCode(t, resp, wire.InvalidParameter)
	if !strings.Contains(resp.Remark, "'*' only ends a prefix") {
		t.Errorf("remark %q", resp.Remark)
	}
	wantCode(t, root(wire.AuthCreateACL, &wire.AuthHeader{Subject: "User:ghost"}, acl1), wire.QueryNotFound)

	resp = root(wire.AuthGetACL, &wire.AuthHeader{Subject: "User:app"}, nil)
	wantCode(t, resp, wire.Success)
	var info wire.AclInfo
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		t.Fatal(err)
	}
	if info.Subject != "User:app" || len(info.Policies) != 1 || len(info.Policies[0].Entries) != 2 || info.Policies[0].Entries[1].SourceIPs[0] != "127.0.0.0/8" {
		t.Fatalf("AUTH_GET_ACL = %s", resp.Body)
	}

	resp = root(wire.AuthListUser, &wire.AuthHeader{}, nil)
	wantCode(t, resp, wire.Success)
	if strings.Contains(string(resp.Body), "secret") {
		t.Errorf("AUTH_LIST_USER answers secrets: %s", resp.Body)
	}
	var users []wire.UserInfo
	if err := json.Unmarshal(resp.Body, &users); err != nil || len(users) != 2 || users[0].Username != "app" || users[1].UserType != "Super" {
		t.Fatalf("AUTH_LIST_USER = %s (%v)", resp.Body, err)
	}
	resp = root(wire.AuthListACL, &wire.AuthHeader{ResourceFilter: "Group"}, nil)
	var list []wire.AclInfo
	if err := json.Unmarshal(resp.Body, &list); err != nil || len(list) != 1 || len(list[0].Policies[0].Entries) != 1 {
		t.Fatalf("AUTH_LIST_ACL = %s (%v)", resp.Body, err)
	}

	// The user's policies work at once, and a normal user may not
	// administer.
	send := func(ak, sk, topic string) *wire.Command {
		req := request(wire.SendMessage, sendHeader(topic, 0, ""), []byte("x"))
		auth.Sign(req, ak, sk)
		return invoke(t, p, req)
	}
	wantCode(t, send("app", "appsecret", "orders"), wire.Success)
	wantCode(t, send("app", "appsecret", "payments"), wire.NoPermission)
	wantCode(t, send("app", "wrongsecret", "orders"), wire.NoPermission)
	resp = call(wire.AuthCreateUser, &wire.AuthHeader{Username: "x"}, wire.UserInfo{Password: "xsecret1"}, "app", "appsecret")
	wantCode(t, resp, wire.NoPermission)
	if !strings.Contains(resp.Remark, "Update on Cluster:") {
		t.Errorf("remark %q", resp.Remark)
	}

	wantCode(t, root(wire.AuthDeleteACL, &wire.AuthHeader{Subject: "User:app", Resource: "Topic:orders"}, nil), wire.Success)
	wantCode(t, send("app", "appsecret", "orders"), wire.NoPermission)
	wantCode(t, root(wire.AuthUpdateUser, &wire.AuthHeader{Username: "app"}, wire.UserInfo{UserStatus: "disable"}), wire.Success)
	if u, _ := a.User("app"); u.Status != acl.Disabled {
		t.Errorf("status after update: %s", u.Status)
	}
	wantCode(t, root(wire.AuthDeleteUser, &wire.AuthHeader{Username: "root"}, nil), wire.InvalidParameter) // the last super user
	wantCode(t, root(wire.AuthDeleteUser, &wire.AuthHeader{Username: "app"}, nil), wire.Success)
	wantCode(t, root(wire.AuthGetUser, &wire.AuthHeader{Username: "app"}, nil), wire.QueryNotFound)
}

func TestAuthAdminOff(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	resp := invoke(t, p, request(wire.AuthListUser, &wire.AuthHeader{}, nil))
	wantCode(t, resp, wire.RequestCodeNotSupported)
	if !strings.Contains(resp.Remark, "--auth") {
		t.Errorf("remark %q", resp.Remark)
	}
}
