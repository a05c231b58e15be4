package karmancmd

import (
	"strings"
	"testing"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/modules/auth"
	"github.com/karmanmq/karman/server/modules/broker"
	"github.com/karmanmq/karman/server/modules/namesrv"
)

// authRegistry holds the name server, the broker and the ACL.
func authRegistry() *server.Registry {
	reg := &server.Registry{}
	reg.Register(namesrv.Info)
	reg.Register(broker.Info)
	reg.Register(auth.Info)
	return reg
}

// TestAdminAuthEndToEnd runs the user and acl commands against an
// in-process "karman serve --auth".
func TestAdminAuthEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	data := t.TempDir()
	// The first super user, written while no server runs.
	out, stderr, err := runAdmin(t, "user", "create", "boot", "--secret", "bootsecret", "--type", "super", "--data", data)
	if err != nil || !strings.Contains(out, "created Super user boot") {
		t.Fatalf("offline user create: %v %s %s", err, out, stderr)
	}
	r := startServe(t, authRegistry(), "--data", data, "--segment-size", "64MiB", "--auth",
		"--http-addr", "off", "--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--log-level", "error")
	ns := r.addrs["namesrv"]
	root := []string{"--access-key", "boot", "--secret-key", "bootsecret"}
	as := func(cred []string, args ...string) []string { return append(append([]string{}, cred...), args...) }

	if err := adminFails(t, ns, "user", "list"); !strings.Contains(err, "NO_PERMISSION") || !strings.Contains(err, "no credentials") {
		t.Errorf("user list without credentials: %v", err)
	}
	if err := adminFails(t, ns, as([]string{"--access-key", "boot", "--secret-key", "wrong-secret"}, "user", "list")...); !strings.Contains(err, "signature mismatch") {
		t.Errorf("user list with a wrong secret: %v", err)
	}
	if err := adminFails(t, ns, as([]string{"--access-key", "boot"}, "user", "list")...); !strings.Contains(err, "needs --secret-key") {
		t.Errorf("--access-key alone: %v", err)
	}

	adminJSON[admin.AuthChange](t, ns, as(root, "user", "create", "app", "--secret", "appsecret")...)
	if err := adminFails(t, ns, as(root, "user", "create", "app", "--secret", "appsecret")...); !strings.Contains(err, "already exists") {
		t.Errorf("second user create: %v", err)
	}
	if err := adminFails(t, ns, as(root, "user", "create", "x", "--secret", "short")...); !strings.Contains(err, "INVALID_PARAMETER") {
		t.Errorf("short secret: %v", err)
	}
	users := adminJSON[userList](t, ns, as(root, "user", "list")...)
	if len(users.Users) != 2 || users.Users[0] != (admin.User{Name: "app", Type: "Normal", Status: "enable"}) || users.Users[1].Type != "Super" {
		t.Errorf("user list = %+v", users)
	}

	adminJSON[admin.AuthChange](t, ns, as(root, "acl", "create", "app", "--resource", "Topic:orders", "--actions", "Pub,Sub", "--decision", "Allow")...)
	adminJSON[admin.AuthChange](t, ns, as(root, "acl", "create", "app", "--resource", "Cluster:*", "--actions", "Get", "--decision", "Allow", "--source-ip", "127.0.0.0/8")...)
	if _, _, err := runAdmin(t, append([]string{"--namesrv", ns}, as(root, "acl", "create", "app", "--resource", "Topic:a*b", "--actions", "Pub")...)...); err == nil || !strings.Contains(err.Error(), "'*' only ends a prefix") {
		t.Errorf("bad resource: %v", err)
	}
	got := adminJSON[admin.UserACL](t, ns, as(root, "acl", "get", "app")...)
	if got.User != "app" || len(got.Policies) != 2 || got.Policies[1].SourceIPs[0] != "127.0.0.0/8" || strings.Join(got.Policies[0].Actions, ",") != "Pub,Sub" {
		t.Errorf("acl get = %+v", got)
	}
	if l := adminJSON[aclList](t, ns, as(root, "acl", "list", "--resource", "Topic")...); len(l.ACLs) != 1 || len(l.ACLs[0].Policies) != 1 {
		t.Errorf("acl list --resource Topic = %+v", l)
	}

	// app may Get on the cluster from loopback, but not change users; the
	// environment carries its credentials.
	t.Setenv(accessKeyEnv, "app")
	t.Setenv(secretKeyEnv, "appsecret")
	if u := adminJSON[admin.User](t, ns, "user", "get", "app"); u.Name != "app" {
		t.Errorf("user get as app = %+v", u)
	}
	if err := adminFails(t, ns, "user", "create", "y", "--secret", "ysecret"); !strings.Contains(err, "denied") || !strings.Contains(err, "Update on Cluster:") {
		t.Errorf("user create as app: %v", err)
	}
	t.Setenv(accessKeyEnv, "")
	t.Setenv(secretKeyEnv, "")

	adminJSON[admin.AuthChange](t, ns, as(root, "acl", "delete", "app", "--resource", "Cluster:*")...)
	if got := adminJSON[admin.UserACL](t, ns, as(root, "acl", "get", "app")...); len(got.Policies) != 1 {
		t.Errorf("after acl delete: %+v", got)
	}
	adminJSON[admin.AuthChange](t, ns, as(root, "user", "update", "app", "--status", "disable")...)
	if u := adminJSON[admin.User](t, ns, as(root, "user", "get", "app")...); u.Status != "disable" {
		t.Errorf("after update: %+v", u)
	}
	if err := adminFails(t, ns, as(root, "user", "delete", "boot")...); !strings.Contains(err, "last enabled super user") {
		t.Errorf("deleting the last super user: %v", err)
	}
	adminJSON[admin.AuthChange](t, ns, as(root, "user", "delete", "app")...)
	if err := adminFails(t, ns, as(root, "user", "get", "app")...); !strings.Contains(err, "QUERY_NOT_FOUND") {
		t.Errorf("user get after delete: %v", err)
	}

	// The offline path refuses a data directory the server holds.
	if _, _, err := runAdmin(t, "user", "create", "late", "--secret", "latesecret", "--data", data); err == nil || !strings.Contains(err.Error(), "is the server still running on it?") {
		t.Errorf("offline create on a running server's directory: %v", err)
	}
}
