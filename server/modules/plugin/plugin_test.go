package plugin_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/karmanmq/karman/plugins"
	"github.com/karmanmq/karman/server"
	pluginmod "github.com/karmanmq/karman/server/modules/plugin"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

// headerauth builds the example plugin that admits clients by a request
// field and checks a message property.
func headerauth(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "headerauth")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/karmanmq/karman/plugins/examples/headerauth").CombinedOutput()
	if err != nil {
		t.Fatalf("build headerauth: %v\n%s", err, out)
	}
	return bin
}

// newServer makes a server with the standard modules on loopback ports
// and the given extra flags.
func newServer(t testing.TB, args ...string) (*server.Server, error) {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "off",
		"--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--grpc-addr", "off",
		"--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off"}
	if err := opts.Flags.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	return server.New(*opts)
}

// TestPluginFlag runs the headerauth example through --plugin with the
// real Go producer: the plugin's authenticator takes the client's
// AccessKey as its principal, its store interceptor admits only messages
// whose "token" property is allowed.
func TestPluginFlag(t *testing.T) {
	bin := headerauth(t)
	srv, err := newServer(t, "--plugin", "auth="+bin+",allow=ak-good,field=AccessKey,header=token")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})

	rlog.SetLogLevel("error")
	send := func(accessKey, token string) error {
		p, err := producer.NewDefaultProducer(
			producer.WithNsResolver(primitive.NewPassthroughResolver([]string{srv.Addr("namesrv").String()})),
			producer.WithGroupName("plugin-test"),
			producer.WithInstanceName("plugin-test-"+accessKey),
			producer.WithCredentials(primitive.Credentials{AccessKey: accessKey, SecretKey: "unused"}),
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
		m := primitive.NewMessage("Guarded", []byte("hello"))
		if token != "" {
			m.WithProperty("token", token)
		}
		_, err = p.SendSync(ctx, m)
		return err
	}
	if err := send("ak-good", "ak-good"); err != nil {
		t.Fatalf("a send the plugin admits: %v", err)
	}
	for _, tc := range []struct{ name, accessKey, token, want string }{
		{"no token property", "ak-good", "", "CODE: 16,"},
		{"a token not allowed", "ak-good", "forged", "CODE: 16,"},
		{"an access key not allowed", "ak-bad", "ak-good", "CODE: 16,"},
	} {
		err := send(tc.accessKey, tc.token)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: send = %v, want a refusal (%s)", tc.name, err, tc.want)
		}
	}
}

// TestPluginFlagBadInput checks that a plugin that cannot run stops the
// server before it binds a port.
func TestPluginFlagBadInput(t *testing.T) {
	bin := headerauth(t)
	for _, tc := range []struct {
		spec string
		want error
	}{
		{"x=" + filepath.Join(t.TempDir(), "missing"), plugins.ErrNotFound},
		{"x=" + bin + ",allow=a,sha256=" + strings.Repeat("0", 64), plugins.ErrChecksum},
		{"x=/bin/true", plugins.ErrHandshake},
		{"no-path", plugins.ErrSpec},
	} {
		_, err := newServer(t, "--plugin", tc.spec)
		if !errors.Is(err, tc.want) {
			t.Errorf("--plugin %s: %v, want %v", tc.spec, err, tc.want)
		}
	}
	if _, err := newServer(t, "--plugin-on-failure", "ignore", "--plugin", "x="+bin+",allow=a"); err == nil || !strings.Contains(err.Error(), "want reject or skip") {
		t.Errorf("--plugin-on-failure ignore: %v", err)
	}
}

// TestOverviewStatus: the API's overview shows the loaded plugin with
// its counters, which the API's own authenticated calls move, and the
// modules compiled in, running or turned off.
func TestOverviewStatus(t *testing.T) {
	bin := headerauth(t)
	// The plugin admits API calls by their Authorization header: user ops,
	// secret secret12.
	allow := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:secret12"))
	srv, err := newServer(t, "--http-addr", "127.0.0.1:0", "--plugin", "auth="+bin+",allow="+allow+",field=authorization")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(ctx) })

	type overview struct {
		Compiled []struct {
			ID, Version string
			Running     bool
		}
		Status struct {
			Plugin *struct{ Plugins []pluginmod.PluginStatus } `json:"plugin.process"`
		}
	}
	get := func(secret string) (int, overview) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+srv.Addr("http").String()+"/api/v1/overview", nil)
		req.SetBasicAuth("ops", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var o overview
		json.NewDecoder(resp.Body).Decode(&o)
		return resp.StatusCode, o
	}
	if code, _ := get("wrong"); code != http.StatusUnauthorized {
		t.Fatalf("overview as a user the plugin refuses: %d, want 401", code)
	}
	code, o := get("secret12")
	if code != http.StatusOK || o.Status.Plugin == nil || len(o.Status.Plugin.Plugins) != 1 {
		t.Fatalf("overview: %d %+v, want the plugin's status", code, o)
	}
	p := o.Status.Plugin.Plugins[0]
	// Both calls were authenticated by the plugin; the second's counted
	// before its overview was made.
	if p.Name != "auth" || !p.Up || p.Calls < 2 || p.Restarts != 0 {
		t.Errorf("plugin status %+v, want auth up with at least 2 calls", p)
	}
	running := map[string]bool{}
	for _, m := range o.Compiled {
		running[m.ID] = m.Running
		if m.Version == "" || m.Version == "unknown" {
			t.Errorf("module %s without a version: %+v", m.ID, m)
		}
	}
	if on, ok := running["plugin.process"]; !ok || !on {
		t.Errorf("plugin.process compiled in and running: %v %v (%v)", ok, on, running)
	}
	if on, ok := running["frontend.grpc"]; !ok || on {
		t.Errorf("frontend.grpc compiled in, turned off: %v %v (%v)", ok, on, running)
	}
}
