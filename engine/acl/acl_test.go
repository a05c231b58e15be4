package acl

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/hook/rmqauth"
	"github.com/karmanmq/karman/engine/meta"
)

// memStore is a Store in memory.
type memStore struct {
	mu   sync.Mutex
	recs map[string][]byte
}

func (m *memStore) AuthRecords() (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range m.recs {
		out[k] = v
	}
	return out, nil
}

func (m *memStore) PutAuthRecord(name string, rec []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string][]byte{}
	}
	m.recs[name] = rec
	return nil
}

func (m *memStore) DeleteAuthRecord(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, name)
	return nil
}

func newACL(t testing.TB, opts Options, users ...User) *ACL {
	t.Helper()
	a := New(opts)
	if err := a.Attach(&memStore{}); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		pol := u.Policies
		u.Policies = nil
		if err := a.CreateUser(u); err != nil {
			t.Fatal(err)
		}
		if len(pol) > 0 {
			if err := a.AddPolicies(u.Name, pol); err != nil {
				t.Fatal(err)
			}
		}
	}
	return a
}

func allow(res string, actions ...string) Entry {
	return Entry{Resource: res, Actions: actions, Decision: Allow}
}

func deny(res string, actions ...string) Entry {
	return Entry{Resource: res, Actions: actions, Decision: Deny}
}

func ctxFrom(proto, addr, clientID string) context.Context {
	cl := &hook.Client{Protocol: proto, ID: clientID}
	if addr != "" {
		cl.Addr = netip.MustParseAddrPort(addr)
	}
	return hook.NewContext(context.Background(), cl)
}

func TestAuthorize(t *testing.T) {
	users := []User{
		{Name: "root", Secret: "rootsecret", Type: Super},
		{Name: "app", Secret: "appsecret", Policies: []Entry{
			allow("Topic:orders", "Pub"),
			allow("Topic:logs-*", "Pub", "Sub"),
			allow("Group:billing", "Sub"),
			allow("Topic:secret*", "All"),
			deny("Topic:secret-keys", "Sub"),
		}},
		{Name: "reader", Secret: "readersecret", Policies: []Entry{allow("*", "Sub", "Get")}},
		{Name: "local", Secret: "localsecret", Policies: []Entry{
			{Resource: "Topic:*", Actions: []string{"Pub"}, Decision: Allow, SourceIPs: []string{"10.0.0.0/8", "192.168.1.7"}},
			{Resource: "Topic:blocked", Actions: []string{"Pub"}, Decision: Deny, SourceIPs: []string{"10.9.0.0/16"}},
		}},
		{Name: "off", Secret: "offsecret", Status: Disabled, Policies: []Entry{allow("*", "All")}},
		{Name: "dev", Secret: "devsecret", Policies: []Entry{
			allow("Topic:devices", "Pub", "Sub"),
			allow("mqtt:devices/%c/#", "Pub", "Sub"),
			allow("mqtt:users/%u/+/in", "Sub"),
			deny("mqtt:devices/%c/locked", "Pub"),
		}},
		{Name: "plain", Secret: "plainsecret", Policies: []Entry{allow("Topic:devices", "Pub")}},
	}
	a := newACL(t, Options{}, users...)
	bg := context.Background()
	for _, tc := range []struct {
		user string
		ctx  context.Context
		act  hook.Action
		res  hook.Resource
		ok   bool
	}{
		{"root", bg, hook.ActionDelete, hook.Topic("anything"), true},
		{"root", bg, hook.ActionUpdate, hook.Cluster("DefaultCluster"), true},
		{"nobody", bg, hook.ActionPub, hook.Topic("orders"), false},
		{"", bg, hook.ActionPub, hook.Topic("orders"), false},
		{"off", bg, hook.ActionPub, hook.Topic("orders"), false},

		{"app", bg, hook.ActionPub, hook.Topic("orders"), true},
		{"app", bg, hook.ActionSub, hook.Topic("orders"), false},      // Pub only
		{"app", bg, hook.ActionPub, hook.Topic("orders2"), false},     // literal
		{"app", bg, hook.ActionPub, hook.Group("orders"), false},      // other type
		{"app", bg, hook.ActionSub, hook.Topic("logs-app"), true},     // prefix
		{"app", bg, hook.ActionSub, hook.Topic("logs"), false},        // prefix needs the dash
		{"app", bg, hook.ActionSub, hook.Group("billing"), true},      //
		{"app", bg, hook.ActionCreate, hook.Topic("secret-x"), true},  // All
		{"app", bg, hook.ActionSub, hook.Topic("secret-keys"), false}, // Deny beats Allow
		{"app", bg, hook.ActionPub, hook.Topic("secret-keys"), true},  // Deny is on Sub only
		{"app", bg, hook.ActionGet, hook.Cluster("DefaultCluster"), false},
		{"app", bg, hook.ActionSub, hook.Topic("%RETRY%billing"), true},   // a group's retry topic is the group's
		{"app", bg, hook.ActionSub, hook.Topic("%DLQ%billing"), true},     // and so is its dead-letter topic
		{"app", bg, hook.ActionSub, hook.Topic("%RETRY%payments"), false}, // not Sub on Group:payments
		{"app", bg, hook.ActionPub, hook.Topic("%RETRY%"), false},         // a prefix alone is a topic

		{"reader", bg, hook.ActionSub, hook.Topic("x"), true},
		{"reader", bg, hook.ActionGet, hook.Cluster("c"), true},
		{"reader", bg, hook.ActionPub, hook.Topic("x"), false},

		{"local", ctxFrom("remoting", "10.1.2.3:5000", ""), hook.ActionPub, hook.Topic("t"), true},
		{"local", ctxFrom("remoting", "[::ffff:10.1.2.3]:5000", ""), hook.ActionPub, hook.Topic("t"), true},
		{"local", ctxFrom("remoting", "192.168.1.7:1", ""), hook.ActionPub, hook.Topic("t"), true},
		{"local", ctxFrom("remoting", "192.168.1.8:1", ""), hook.ActionPub, hook.Topic("t"), false},
		{"local", bg, hook.ActionPub, hook.Topic("t"), false}, // address unknown: no Allow with sources
		{"local", ctxFrom("remoting", "10.9.1.1:1", ""), hook.ActionPub, hook.Topic("blocked"), false},
		{"local", ctxFrom("remoting", "10.8.1.1:1", ""), hook.ActionPub, hook.Topic("blocked"), true},

		// MQTT: the RocketMQ topic and the MQTT topic are checked.
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionPub, hook.MQTT("devices/c1/temp"), true},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionPub, hook.MQTT("devices/c1"), true}, // # matches the parent
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionPub, hook.MQTT("devices/c2/temp"), false},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionPub, hook.MQTT("devices/c1/locked"), false},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.MQTT("devices/c1/#"), true},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.MQTT("devices/c1/+/x"), true},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.MQTT("devices/+/temp"), false}, // wider than the pattern
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.MQTT("devices/#"), false},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.MQTT("users/dev/a/in"), true},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.MQTT("users/dev/+/in"), true},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.MQTT("users/dev/#"), false},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.MQTT("users/other/a/in"), false},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionPub, hook.MQTT("users/dev/a/in"), false}, // Sub only
		{"dev", ctxFrom("mqtt", "", "a/b"), hook.ActionPub, hook.MQTT("devices/a/b/x"), false}, // client id with '/'
		{"dev", ctxFrom("mqtt", "", "+"), hook.ActionPub, hook.MQTT("devices/+/x"), false},
		{"dev", ctxFrom("mqtt", "", ""), hook.ActionPub, hook.MQTT("devices//x"), false},
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionPub, hook.Topic("devices"), true},
		{"plain", ctxFrom("mqtt", "", "c1"), hook.ActionPub, hook.MQTT("devices/anything"), true}, // no mqtt entries
		{"plain", ctxFrom("mqtt", "", "c1"), hook.ActionPub, hook.Topic("other"), false},

		// Every topic at once (an MQTT filter #): an Allow of all, and no
		// Deny of any.
		{"root", bg, hook.ActionSub, hook.AllTopics, true},
		{"reader", bg, hook.ActionSub, hook.AllTopics, true},                                    // *
		{"app", bg, hook.ActionSub, hook.AllTopics, false},                                      // prefixes only
		{"dev", ctxFrom("mqtt", "", "c1"), hook.ActionSub, hook.AllTopics, false},               // one topic
		{"local", ctxFrom("remoting", "10.1.2.3:1", ""), hook.ActionPub, hook.AllTopics, true},  // Topic:*
		{"local", ctxFrom("remoting", "10.9.1.1:1", ""), hook.ActionPub, hook.AllTopics, false}, // Deny of Topic:blocked from there
		{"local", ctxFrom("remoting", "10.1.2.3:1", ""), hook.ActionSub, hook.AllTopics, false}, // Pub only
	} {
		name := fmt.Sprintf("%s/%s/%s", tc.user, tc.act, tc.res)
		err := a.Authorize(tc.ctx, hook.Principal{Name: tc.user}, tc.act, tc.res)
		if tc.ok && err != nil {
			t.Errorf("%s: %v, want allowed", name, err)
		}
		if !tc.ok && !errors.Is(err, hook.ErrDenied) {
			t.Errorf("%s: %v, want denied", name, err)
		}
	}
}

func TestMQTTCovers(t *testing.T) {
	for _, tc := range []struct {
		pattern, topic string
		want           bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", false},
		{"a/b", "a", false},
		{"a/+", "a/b", true},
		{"a/+", "a/", true},
		{"a/+", "a/b/c", false},
		{"a/+", "a/+", true},
		{"a/+", "a/#", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"a/#", "a/#", true},
		{"#", "anything/at/all", true},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"a/b", "a/+", false},
		{"x%uy/%c", "xdevy/c1", true},
		{"x%uy/%c", "xdevz/c1", false},
		{"100%%/a", "100%/a", true},
	} {
		levels, err := parseMQTTPattern(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if got := mqttCovers(levels, tc.topic, "dev", "c1"); got != tc.want {
			t.Errorf("%s covers %s = %v, want %v", tc.pattern, tc.topic, got, tc.want)
		}
	}
}

func TestParseResourceErrors(t *testing.T) {
	for _, s := range []string{"", "Topic", "Topic:", "Queue:x", "Topic:a*b", "Topic:a b", "mqtt:", "mqtt:a/#/b", "mqtt:a+/b", "mqtt:%x", "mqtt:a/%", "**"} {
		if _, _, _, err := ParseResource(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseResource(%q) = %v, want ErrInvalid", s, err)
		}
	}
	for _, s := range []string{"*", "Topic:*", "Topic:a", "Topic:ns%a-*", "group:g", "Cluster:DefaultCluster", "mqtt:#", "mqtt:a/+/%u/%c/#"} {
		if _, _, _, err := ParseResource(s); err != nil {
			t.Errorf("ParseResource(%q): %v", s, err)
		}
	}
}

func TestEntryErrors(t *testing.T) {
	for _, e := range []Entry{
		{Resource: "Topic:a", Actions: []string{"Publish"}, Decision: Allow},
		{Resource: "Topic:a", Decision: Allow},
		{Resource: "Topic:a", Actions: []string{"Pub"}, Decision: "maybe"},
		{Resource: "Topic:a", Actions: []string{"Pub"}, Decision: Allow, SourceIPs: []string{"10.0.0.0/33"}},
		{Resource: "Topic:a", Actions: []string{"Pub"}, Decision: Allow, SourceIPs: []string{"host"}},
	} {
		if _, err := e.Normalize(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", e, err)
		}
	}
	e, err := Entry{Resource: " Topic:a ", Actions: []string{"sub,pub"}, Decision: "deny"}.Normalize()
	if err != nil || e.Resource != "Topic:a" || strings.Join(e.Actions, ",") != "Pub,Sub" || e.Decision != Deny {
		t.Errorf("Normalize = %+v, %v", e, err)
	}
}

func TestUserAdmin(t *testing.T) {
	st := &memStore{}
	a := New(Options{})
	if err := a.CreateUser(User{Name: "u", Secret: "secret1"}); !errors.Is(err, ErrNotReady) {
		t.Fatalf("CreateUser before Attach: %v", err)
	}
	if err := a.Attach(st); err != nil {
		t.Fatal(err)
	}
	if a.HasSuper() {
		t.Fatal("HasSuper with no user")
	}
	for _, u := range []User{
		{Name: "", Secret: "secret1"},
		{Name: "a b", Secret: "secret1"},
		{Name: "u", Secret: "short"},
		{Name: "u", Secret: "secret1", Type: "admin"},
	} {
		if err := a.CreateUser(u); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateUser(%+v) = %v, want ErrInvalid", u, err)
		}
	}
	if err := a.CreateUser(User{Name: "root", Secret: "rootsecret", Type: "super"}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateUser(User{Name: "root", Secret: "other1"}); !errors.Is(err, ErrUserExists) {
		t.Fatalf("second CreateUser: %v", err)
	}
	if !a.HasSuper() {
		t.Fatal("no super user after creating one")
	}
	for _, fn := range []func() error{
		func() error { return a.DeleteUser("root") },
		func() error { return a.UpdateUser("root", UserChange{Status: Disabled}) },
		func() error { return a.UpdateUser("root", UserChange{Type: Normal}) },
	} {
		if err := fn(); !errors.Is(err, ErrLastSuper) {
			t.Errorf("changing the last super user: %v, want ErrLastSuper", err)
		}
	}
	if err := a.CreateUser(User{Name: "app", Secret: "appsecret"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddPolicies("app", []Entry{allow("Topic:a", "Pub")}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddPolicies("app", []Entry{allow("Topic:b", "Sub"), allow("Topic:a", "Pub", "Sub")}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddPolicies("ghost", []Entry{allow("Topic:b", "Sub")}); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("AddPolicies of unknown user: %v", err)
	}
	u, err := a.User("app")
	if err != nil || len(u.Policies) != 2 || strings.Join(u.Policies[0].Actions, ",") != "Pub,Sub" {
		t.Fatalf("User = %+v, %v", u, err)
	}
	if err := a.Authorize(context.Background(), hook.Principal{Name: "app"}, hook.ActionSub, hook.Topic("a")); err != nil {
		t.Fatal(err)
	}
	if err := a.UpdateUser("app", UserChange{Status: Disabled}); err != nil {
		t.Fatal(err)
	}
	if err := a.Authorize(context.Background(), hook.Principal{Name: "app"}, hook.ActionSub, hook.Topic("a")); !errors.Is(err, hook.ErrDenied) {
		t.Fatalf("disabled user: %v", err)
	}

	// A second ACL on the same store sees what the first wrote.
	b := New(Options{})
	if err := b.Attach(st); err != nil {
		t.Fatal(err)
	}
	if got := b.Users(""); len(got) != 2 || got[0].Name != "app" || got[0].Status != Disabled || len(got[0].Policies) != 2 {
		t.Fatalf("reloaded users = %+v", got)
	}
	if err := a.DeletePolicies("app", "Topic:a"); err != nil {
		t.Fatal(err)
	}
	if u, _ := a.User("app"); len(u.Policies) != 1 || u.Policies[0].Resource != "Topic:b" {
		t.Fatalf("after DeletePolicies: %+v", u.Policies)
	}
	if err := a.DeleteUser("app"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.User("app"); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("deleted user: %v", err)
	}
	if err := a.DeleteUser("app"); !errors.Is(err, ErrUserNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// TestMetaStoreKeepsUsers: users written through the engine's metadata
// store are there after it is closed and opened again.
func TestMetaStoreKeepsUsers(t *testing.T) {
	dir := t.TempDir()
	st, err := meta.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{})
	if err := a.Attach(st); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateUser(User{Name: "app", Secret: "appsecret", Policies: []Entry{allow("Topic:a", "Pub")}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = meta.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := New(Options{})
	if err := b.Attach(st); err != nil {
		t.Fatal(err)
	}
	if err := b.Authorize(context.Background(), hook.Principal{Name: "app"}, hook.ActionPub, hook.Topic("a")); err != nil {
		t.Fatal(err)
	}
}

func TestAuthenticate(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var logs bytes.Buffer
	a := newACL(t, Options{Now: func() time.Time { return now }, ClockSkew: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		User{Name: "app", Secret: "appsecret"},
		User{Name: "off", Secret: "offsecret", Status: Disabled})
	ctx := context.Background()

	remoting := func(ak, secret string) *hook.Credentials {
		ext := map[string]string{"AccessKey": ak, "topic": "t"}
		content := rmqauth.RemotingContent(ext, []byte("body"))
		return &hook.Credentials{Protocol: "remoting", AccessKey: ak, Algorithm: rmqauth.AlgorithmRemoting, Signature: rmqauth.SignRemoting(content, secret), Content: content}
	}
	grpc := func(ak, secret string, at time.Time) *hook.Credentials {
		dt := at.UTC().Format(dateLayout)
		return &hook.Credentials{Protocol: "grpc", AccessKey: ak, Algorithm: rmqauth.AlgorithmGRPC, Signature: rmqauth.SignGRPC(dt, secret), Content: []byte(dt)}
	}
	mqtt := func(user, pw string) *hook.Credentials {
		return &hook.Credentials{Protocol: "mqtt", Username: user, Password: []byte(pw), ClientID: "c1"}
	}
	// cert: an MQTT client whose TLS connection verified a certificate
	// of subject CN=cn.
	cert := func(cn, user, pw string) *hook.Credentials {
		c := mqtt(user, pw)
		c.Certificate = &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: []string{"devices"}}}
		return c
	}
	for _, tc := range []struct {
		name string
		c    *hook.Credentials
		want string // "" accepted, else part of the reason
	}{
		{"remoting ok", remoting("app", "appsecret"), ""},
		{"remoting wrong secret", remoting("app", "wrong"), "signature mismatch"},
		{"remoting unknown", remoting("ghost", "appsecret"), "unknown access key ghost"},
		{"remoting disabled", remoting("off", "offsecret"), "disabled"},
		{"remoting none", &hook.Credentials{Protocol: "remoting"}, "no credentials"},
		{"remoting unsigned", &hook.Credentials{Protocol: "remoting", AccessKey: "app"}, "not signed"},
		{"grpc ok", grpc("app", "appsecret", now.Add(-30*time.Second)), ""},
		{"grpc skew", grpc("app", "appsecret", now.Add(-2*time.Minute)), "off the broker's clock"},
		{"grpc future", grpc("app", "appsecret", now.Add(2*time.Minute)), "off the broker's clock"},
		{"grpc bad date", &hook.Credentials{Protocol: "grpc", AccessKey: "app", Algorithm: rmqauth.AlgorithmGRPC, Signature: "00", Content: []byte("yesterday")}, "not a date-time"},
		{"grpc wrong secret", grpc("app", "wrong", now), "signature mismatch"},
		{"mqtt ok", mqtt("app", "appsecret"), ""},
		{"mqtt wrong", mqtt("app", "appsecret2"), "bad username or password"},
		{"mqtt unknown", mqtt("ghost", "appsecret"), "bad username or password"},
		{"mqtt no user", mqtt("", ""), "no username"},
		{"mqtt disabled", mqtt("off", "offsecret"), "disabled"},
		{"mqtt cert", cert("app", "", ""), ""},
		{"mqtt cert and its username", cert("app", "app", "not checked"), ""},
		{"mqtt cert and another username", cert("app", "off", "offsecret"), "username off is not the client certificate's common name app"},
		{"mqtt cert unknown", cert("ghost", "", ""), "common name ghost is no user"},
		{"mqtt cert disabled", cert("off", "", ""), "disabled"},
		{"mqtt cert without a name", cert("", "app", "appsecret"), "no common name"},
		{"http basic ok", &hook.Credentials{Protocol: "http", Username: "app", Password: []byte("appsecret")}, ""},
		{"http basic wrong", &hook.Credentials{Protocol: "http", Username: "app", Password: []byte("nope")}, "bad username or password"},
	} {
		p, err := a.Authenticate(ctx, tc.c)
		if tc.want == "" {
			if err != nil || p.Name != "app" {
				t.Errorf("%s: %v, %+v", tc.name, err, p)
			}
			continue
		}
		if !errors.Is(err, hook.ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want unauthenticated with %q", tc.name, err, tc.want)
		}
	}
	if strings.Contains(logs.String(), "appsecret") || strings.Contains(logs.String(), "offsecret") {
		t.Errorf("a secret reached the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"auth: credentials refused\" user=app protocol=remoting") {
		t.Errorf("no audit line for the wrong secret:\n%s", logs.String())
	}
	by, unlogged := a.Refusals()
	if by[0].Unauthenticated != 5 || by[1].Unauthenticated != 4 || by[2].Unauthenticated != 8 || by[3].Unauthenticated != 1 {
		t.Errorf("refusals = %+v", by)
	}
	if unlogged != 18-AuditBurst { // 18 refusals within one second of the fixed clock
		t.Errorf("unlogged = %d, want %d", unlogged, 18-AuditBurst)
	}
}

func TestDenyAudit(t *testing.T) {
	var logs bytes.Buffer
	a := newACL(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, User{Name: "app", Secret: "appsecret"})
	err := a.Authorize(ctxFrom("grpc", "127.0.0.1:4000", "c"), hook.Principal{Name: "app"}, hook.ActionPub, hook.Topic("t"))
	if !errors.Is(err, hook.ErrDenied) {
		t.Fatal(err)
	}
	want := `level=WARN msg="auth: request denied" user=app protocol=grpc action=Pub resource=Topic:t source=127.0.0.1 reason="no policy allows it"`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log:\n%s\nwant %s", logs.String(), want)
	}
	if by, _ := a.Refusals(); by[1].Denied != 1 {
		t.Errorf("refusals = %+v", by)
	}
}

func TestNotAttached(t *testing.T) {
	a := New(Options{})
	if _, err := a.Authenticate(context.Background(), &hook.Credentials{Protocol: "remoting", AccessKey: "x"}); !errors.Is(err, hook.ErrUnauthenticated) {
		t.Error(err)
	}
	if err := a.Authorize(context.Background(), hook.Principal{Name: "x"}, hook.ActionPub, hook.Topic("t")); !errors.Is(err, hook.ErrDenied) {
		t.Error(err)
	}
}

// TestAuthorizeAllocs: an allowed check allocates nothing.
func TestAuthorizeAllocs(t *testing.T) {
	a := benchACL(t, 300)
	ctx := ctxFrom("remoting", "10.0.0.1:1", "c")
	p := hook.Principal{Name: "user150"}
	n := testing.AllocsPerRun(100, func() {
		if err := a.Authorize(ctx, p, hook.ActionPub, hook.Topic("topic150")); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("Authorize allocates %v times", n)
	}
}

// TestAuthenticateAllocs: a signed request that verifies allocates
// nothing.
func TestAuthenticateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	a := benchACL(t, 300)
	ext := map[string]string{"AccessKey": "user150", "topic": "topic150", "queueId": "1"}
	content := rmqauth.RemotingContent(ext, make([]byte, 1024))
	c := &hook.Credentials{Protocol: "remoting", AccessKey: "user150", Algorithm: rmqauth.AlgorithmRemoting, Signature: rmqauth.SignRemoting(content, "secret150"), Content: content}
	n := testing.AllocsPerRun(100, func() {
		if _, err := a.Authenticate(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("Authenticate allocates %v times", n)
	}
}

func benchACL(t testing.TB, users int) *ACL {
	var list []User
	for i := range users {
		list = append(list, User{Name: fmt.Sprintf("user%d", i), Secret: "secret" + fmt.Sprint(i), Policies: []Entry{allow(fmt.Sprintf("Topic:topic%d", i), "Pub", "Sub")}})
	}
	return newACL(t, Options{}, list...)
}

func BenchmarkAuthorize(b *testing.B) {
	a := benchACL(b, 300)
	ctx := ctxFrom("remoting", "10.0.0.1:1", "c")
	p := hook.Principal{Name: "user150"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := a.Authorize(ctx, p, hook.ActionPub, hook.Topic("topic150")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAuthenticateRemoting(b *testing.B) {
	a := benchACL(b, 300)
	ext := map[string]string{"AccessKey": "user150", "topic": "topic150", "queueId": "1"}
	content := rmqauth.RemotingContent(ext, make([]byte, 1024))
	c := &hook.Credentials{Protocol: "remoting", AccessKey: "user150", Algorithm: rmqauth.AlgorithmRemoting, Signature: rmqauth.SignRemoting(content, "secret150"), Content: content}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOnChange: every published change calls the watchers, a refused
// change does not, and a cancelled watcher is called no more;
// CheckPrincipal follows the users.
func TestOnChange(t *testing.T) {
	a := newACL(t, Options{}, User{Name: "root", Secret: "rootsecret", Type: Super}, User{Name: "dev", Secret: "devsecret"})
	var set hook.Set
	set.Authenticators = []hook.Authenticator{a}
	set.Authorizers = []hook.Authorizer{a}
	calls := 0
	cancel := set.OnChange(func() { calls++ }) // registered once though listed twice
	p := hook.Principal{Name: "dev"}
	if err := set.CheckPrincipal(p); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		change  func() error
		calls   int
		checkOK bool
	}{
		{"policy", func() error { return a.AddPolicies("dev", []Entry{allow("Topic:t", "Sub")}) }, 1, true},
		{"refused", func() error { return a.DeleteUser("root") }, 1, true}, // the last super user
		{"disabled", func() error { return a.UpdateUser("dev", UserChange{Status: Disabled}) }, 2, false},
		{"enabled", func() error { return a.UpdateUser("dev", UserChange{Status: Enabled}) }, 3, true},
		{"deleted", func() error { return a.DeleteUser("dev") }, 4, false},
	}
	for _, st := range steps {
		err := st.change()
		if (err == nil) != (st.name != "refused") {
			t.Fatalf("%s: %v", st.name, err)
		}
		if calls != st.calls {
			t.Fatalf("%s: %d calls, want %d", st.name, calls, st.calls)
		}
		if err := set.CheckPrincipal(p); (err == nil) != st.checkOK || (err != nil && !errors.Is(err, hook.ErrUnauthenticated)) {
			t.Fatalf("%s: CheckPrincipal %v", st.name, err)
		}
	}
	cancel()
	if err := a.CreateUser(User{Name: "dev", Secret: "devsecret"}); err != nil {
		t.Fatal(err)
	}
	if calls != 4 {
		t.Fatalf("called after cancel: %d", calls)
	}
	if err := set.CheckPrincipal(hook.Principal{}); err != nil {
		t.Fatalf("anonymous: %v", err)
	}
}
