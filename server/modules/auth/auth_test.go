package auth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/modules/auth"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

func newServer(t testing.TB, data string, args ...string) (*server.Server, error) {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--data", data, "--segment-size", "64MiB", "--http-addr", "127.0.0.1:0",
		"--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--grpc-addr", "off", "--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off"}
	if err := opts.Flags.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	return server.New(*opts)
}

func moduleACL(t *testing.T, srv *server.Server) *acl.ACL {
	for _, m := range srv.Modules() {
		if am, ok := m.(*auth.Module); ok {
			return am.ACL()
		}
	}
	t.Fatal("no auth module")
	return nil
}

func TestSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--auth-init-user", "root", "--auth-init-secret", "rootsecret"}, "need --auth"},
		{[]string{"--auth", "--auth-init-user", "root"}, "go together"},
		{[]string{"--auth", "--auth-init-user", "root", "--auth-init-secret", "short"}, "6 to 256 bytes"},
		{[]string{"--auth", "--auth-init-user", "bad name", "--auth-init-secret", "rootsecret"}, "user name"},
		{[]string{"--auth", "--auth-init-user", "root", "--auth-init-secret", "rootsecret", "--auth-clock-skew", "-1s"}, "must be positive"},
		{[]string{"--auth"}, "needs a super user"},
	} {
		_, err := newServer(t, t.TempDir(), tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	_, err := newServer(t, t.TempDir(), "--auth")
	if !errors.Is(err, auth.ErrNoSuperUser) || !strings.Contains(err.Error(), "karman admin user create") {
		t.Errorf("--auth alone: %v", err)
	}
}

// TestInitUserRestart: the initial super user is created once, guards
// the broker (a real Go producer needs its credentials), and is still
// there after a restart without the init flags; refusals are counted on
// /metrics.
func TestInitUserRestart(t *testing.T) {
	rlog.SetLogLevel("error")
	data := t.TempDir()
	ctx := context.Background()
	srv, err := newServer(t, data, "--auth", "--auth-init-user", "root", "--auth-init-secret", "rootsecret")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := moduleACL(t, srv)
	if err := a.CreateUser(acl.User{Name: "app", Secret: "appsecret", Policies: []acl.Entry{{Resource: "Topic:orders", Actions: []string{"Pub"}, Decision: acl.Allow}}}); err != nil {
		t.Fatal(err)
	}
	send := func(s *server.Server, ak, sk, topic string) error {
		p, err := producer.NewDefaultProducer(
			producer.WithNsResolver(primitive.NewPassthroughResolver([]string{s.Addr("namesrv").String()})),
			producer.WithGroupName("auth-test"),
			producer.WithInstanceName("auth-test-"+ak+topic),
			producer.WithCredentials(primitive.Credentials{AccessKey: ak, SecretKey: sk}),
			producer.WithRetry(0),
			producer.WithSendMsgTimeout(5*time.Second),
		)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		defer p.Shutdown()
		_, err = p.SendSync(ctx, primitive.NewMessage(topic, []byte("x")))
		return err
	}
	if err := send(srv, "app", "appsecret", "orders"); err != nil {
		t.Fatalf("allowed send: %v", err)
	}
	if err := send(srv, "app", "wrongsecret", "orders"); err == nil || !strings.Contains(err.Error(), "signature mismatch") {
		t.Fatalf("send with a wrong secret: %v", err)
	}
	resp, err := http.Get("http://" + srv.Addr("http").String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `karman_auth_refused_total{kind="unauthenticated",protocol="remoting"} 1`) {
		t.Errorf("metrics lack the refusal:\n%s", grepLines(string(body), "karman_auth"))
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	srv, err = newServer(t, data, "--auth")
	if err != nil {
		t.Fatalf("restart without init flags: %v", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	if u, err := moduleACL(t, srv).User("app"); err != nil || u.Policies[0].Resource != "Topic:orders" {
		t.Fatalf("after restart: %+v, %v", u, err)
	}
	if err := send(srv, "app", "appsecret", "orders"); err != nil {
		t.Fatalf("allowed send after restart: %v", err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
