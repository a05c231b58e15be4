//go:build !race && unix

package compat

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// codeForbidden is the gRPC API's FORBIDDEN.
const codeForbidden = 40300

// The super user the ACL tests start the binary with.
const (
	aclRoot       = "root"
	aclRootSecret = "root-secret"
)

// cli runs the karman binary's admin command with the root credentials
// against k's name server and fails the test if it fails.
func (k *karmanProcess) cli(args ...string) string {
	k.t.Helper()
	out, err := k.cliTry(args...)
	if err != nil {
		k.t.Fatalf("karman admin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (k *karmanProcess) cliTry(args ...string) (string, error) {
	cmd := exec.Command(karmanBinary(k.t), append([]string{"admin", "--namesrv", k.namesrv}, args...)...)
	cmd.Env = append(os.Environ(), "KARMAN_ACCESS_KEY="+aclRoot, "KARMAN_SECRET_KEY="+aclRootSecret)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// aclProducer starts a Go producer signing with ak and sk.
func aclProducer(t *testing.T, namesrv, ak, sk string) interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
} {
	t.Helper()
	p, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{namesrv}),
		producer.WithGroupName("acl-producer"),
		producer.WithCredentials(primitive.Credentials{AccessKey: ak, SecretKey: sk}),
		// One instance per credentials: the client shares connections,
		// and their credentials, by instance name.
		producer.WithInstanceName(instance("acl-"+ak)),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

func wantRefused(t *testing.T, what string, err error, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded", what)
	}
	// The Go client reports a broker's refusal as "CODE: <code>, DESC: <remark>".
	if msg := err.Error(); !strings.Contains(msg, "CODE: 16,") || !strings.Contains(msg, reason) {
		t.Fatalf("%s: %v, want NO_PERMISSION (16) saying %q", what, err, reason)
	}
}

// TestBinaryACL runs the real binary with --auth and its first super
// user from the flags; users and policies are made with the binary's own
// admin commands; rocketmq-client-go producers and a push consumer with
// primitive.Credentials are let in or refused by them, Deny beating
// Allow; after a restart without the init flags the users are still
// there. The Node.js gRPC client with sessionCredentials is held to the
// same policies.
func TestBinaryACL(t *testing.T) {
	dir := t.TempDir()
	k := startBinary(t, "--data", dir, "--auth", "--auth-init-user", aclRoot, "--auth-init-secret", aclRootSecret)
	const orders, secret, group = "AclOrders", "AclSecret", "acl-readers"
	k.cli("topic", "create", orders, "--queues", "2")
	k.cli("topic", "create", secret, "--queues", "2")
	k.cli("user", "create", "app", "--secret", "app-secret")
	k.cli("acl", "create", "app", "--resource", "Topic:Acl*", "--actions", "Pub", "--decision", "Allow")
	k.cli("acl", "create", "app", "--resource", "Topic:"+secret, "--actions", "Pub", "--decision", "Deny")
	k.cli("user", "create", "reader", "--secret", "reader-secret")
	k.cli("acl", "create", "reader", "--resource", "Topic:"+orders, "--actions", "Sub", "--decision", "Allow")
	k.cli("acl", "create", "reader", "--resource", "Group:"+group, "--actions", "Sub", "--decision", "Allow")
	if out := k.cli("acl", "list"); strings.Count(out, "\n") != 5 || !strings.Contains(out, "Topic:AclSecret") {
		t.Fatalf("acl list:\n%s", out)
	}
	if out, err := k.cliTry("--access-key", "app", "--secret-key", "app-secret", "user", "list"); err == nil || !strings.Contains(out, "denied") {
		t.Fatalf("user list as a normal user: %v\n%s", err, out)
	}
	k.waitRoute(orders)
	k.waitRoute(secret)
	ctx := context.Background()

	app := aclProducer(t, k.namesrv, "app", "app-secret")
	const n = 5
	for i := range n {
		if _, err := app.SendSync(ctx, primitive.NewMessage(orders, []byte("order-"+string(rune('a'+i))))); err != nil {
			t.Fatalf("allowed send %d: %v", i, err)
		}
	}
	_, err := app.SendSync(ctx, primitive.NewMessage(secret, []byte("no")))
	wantRefused(t, "a send Deny beats Allow on", err, "a Deny policy matches")
	_, err = aclProducer(t, k.namesrv, "app", "wrong-secret").SendSync(ctx, primitive.NewMessage(orders, []byte("no")))
	wantRefused(t, "a send with a wrong secret", err, "signature mismatch")
	_, err = aclProducer(t, k.namesrv, "ghost", "ghost-secret").SendSync(ctx, primitive.NewMessage(orders, []byte("no")))
	wantRefused(t, "a send by an unknown user", err, "unknown access key ghost")
	_, err = aclProducer(t, k.namesrv, "reader", "reader-secret").SendSync(ctx, primitive.NewMessage(orders, []byte("no")))
	wantRefused(t, "a send by a Sub-only user", err, "Pub on Topic:AclOrders by reader")

	// The Sub-only user consumes what app sent.
	got := newReceived()
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{k.namesrv}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("acl-reader")),
		consumer.WithCredentials(primitive.Credentials{AccessKey: "reader", SecretKey: "reader-secret"}),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(orders, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.add(msgs...)
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, "every message", time.Minute, func() bool { return got.distinct() == n })
	c.Shutdown()

	// Refusals are logged, without secrets, and counted.
	if log := k.stderr.String(); !strings.Contains(log, `msg="auth: request denied" module=auth user=app protocol=remoting action=Pub resource=Topic:AclSecret source=127.0.0.1 reason="a Deny policy matches"`) ||
		strings.Contains(log, "app-secret") || strings.Contains(log, aclRootSecret) {
		t.Errorf("audit log:\n%s", log)
	}
	resp, err := http.Get("http://" + k.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `karman_auth_refused_total{kind="denied",protocol="remoting"} 3`) ||
		!strings.Contains(string(m), `karman_auth_refused_total{kind="unauthenticated",protocol="remoting"} 2`) {
		t.Errorf("metrics lack the refusals:\n%s", m)
	}

	// gRPC: the Node.js client with sessionCredentials.
	if _, err := exec.LookPath("node"); err == nil {
		requireNode(t)
		t.Setenv("COMPAT_ACCESS_KEY", "app")
		t.Setenv("COMPAT_ACCESS_SECRET", "app-secret")
		if res := k.nodeTrySend(orders, []outMessage{{Body: "grpc-signed"}}); res[0].Error != nil {
			t.Fatalf("allowed gRPC send: %+v", res[0].Error)
		}
		// A producer of a Sub-only user is refused at start-up, when it
		// declares its topics: FORBIDDEN, naming the reason.
		t.Setenv("COMPAT_ACCESS_KEY", "reader")
		t.Setenv("COMPAT_ACCESS_SECRET", "reader-secret")
		var start startupResult
		k.node("startup", map[string]any{"kind": "producer", "topics": []string{orders}}, &start)
		if start.Started {
			t.Fatal("a gRPC producer of a Sub-only user started")
		}
		checkRefused(t, "gRPC producer of a Sub-only user", start.Error, codeForbidden, "Pub on Topic:AclOrders by reader: denied: no policy allows it")
	} else {
		t.Log("no node on PATH: the gRPC part is left out")
	}

	// A restart without the init flags keeps the users and policies.
	k.stop()
	k = startBinary(t, "--data", dir, "--auth")
	k.waitRoute(orders)
	if _, err := aclProducer(t, k.namesrv, "app", "app-secret").SendSync(ctx, primitive.NewMessage(orders, []byte("after restart"))); err != nil {
		t.Fatalf("allowed send after a restart: %v", err)
	}
	_, err = aclProducer(t, k.namesrv, "app", "app-secret").SendSync(ctx, primitive.NewMessage(secret, []byte("no")))
	wantRefused(t, "a denied send after a restart", err, "a Deny policy matches")
}

// TestBinaryACLRefusesWithoutSuperUser: --auth on an empty data
// directory without an initial user stops before any port is bound,
// saying how to make one.
func TestBinaryACLRefusesWithoutSuperUser(t *testing.T) {
	cmd := exec.Command(karmanBinary(t), "serve", "--data", t.TempDir(), "--auth", "--http-addr", "127.0.0.1:0",
		"--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--auth needs a super user") || strings.Contains(string(out), "listening") {
		t.Fatalf("serve --auth without a super user: %v\n%s", err, out)
	}
}
