//go:build !race && unix

package compat

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/hook/rmqauth"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/server"
)

// Credentials the guarded server knows.
const (
	authAccessKey = "karman-ak"
	authSecret    = "karman-secret"
	authTopic     = "AuthAllowed"   // the one topic the principal may use
	authForbidden = "AuthForbidden" // exists, but the principal may not use it
)

// topicAuthorizer allows authAccessKey everything on authTopic, on
// groups and on the cluster, and denies every other topic. It records
// the principals it saw.
type topicAuthorizer struct {
	mu   sync.Mutex
	seen map[string]int
}

func (z *topicAuthorizer) Authorize(_ context.Context, p hook.Principal, a hook.Action, r hook.Resource) error {
	z.mu.Lock()
	z.seen[p.Name]++
	z.mu.Unlock()
	if p.Name != authAccessKey {
		return hook.Deny("unknown principal " + p.Name)
	}
	if r.Type == hook.ResourceTopic && r.Name != authTopic {
		return hook.Deny(a.String() + " on " + r.Name + " is not allowed for " + p.Name)
	}
	return nil
}

// senderSeen is a store hook that records the principal of each send.
type senderSeen struct {
	mu    sync.Mutex
	names []string
}

func (s *senderSeen) BeforeStore(_ context.Context, b *hook.StoreBatch) error {
	s.mu.Lock()
	s.names = append(s.names, b.Client.Protocol+":"+b.Client.Principal.Name)
	s.mu.Unlock()
	return nil
}

type guarded struct {
	namesrv, broker, grpc string
	authz                 *topicAuthorizer
	store                 *senderSeen
}

// startGuarded runs a name server, a broker and the gRPC endpoint (the
// server package's standard modules) on an engine whose hooks
// authenticate with rmqauth.Keys and authorize with topicAuthorizer.
func startGuarded(t *testing.T) *guarded {
	t.Helper()
	g := &guarded{authz: &topicAuthorizer{seen: map[string]int{}}, store: &senderSeen{}}
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	args := slices.Concat([]string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "off"}, listenArgs[2:])
	if err := opts.Flags.Parse(args); err != nil {
		t.Fatal(err)
	}
	opts.Hooks = []any{rmqauth.Keys{authAccessKey: authSecret}, g.authz, g.store}
	opts.Logger, opts.Announce = testLogger(t), io.Discard
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, done := context.WithTimeout(context.Background(), 20*time.Second)
		defer done()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	for _, name := range []string{authTopic, authForbidden} {
		if err := srv.Engine().CreateTopic(meta.Topic{Name: name, ReadQueues: 2, WriteQueues: 2, Perm: meta.PermRW}); err != nil {
			t.Fatal(err)
		}
	}
	g.namesrv, g.broker, g.grpc = srv.Addr("namesrv").String(), srv.Addr("broker").String(), srv.Addr("grpc").String()
	// Topics made in the engine reach the name server with the broker's
	// next registration; a producer asking before would get the default
	// route instead.
	k := &karman{t: t, namesrv: g.namesrv}
	for _, name := range []string{authTopic, authForbidden} {
		k.waitRoute(name)
	}
	return g
}

func newAuthProducer(t *testing.T, g *guarded, secret string) interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
} {
	t.Helper()
	return aclProducer(t, g.namesrv, authAccessKey, secret)
}

// TestRemotingACL drives the guarded broker with rocketmq-client-go and
// ACL credentials: signed sends to the allowed topic are stored (and
// the store hook sees the principal), a consumer with the same
// credentials receives them, a wrong secret is refused, and a send to a
// forbidden topic is NO_PERMISSION with the authorizer's reason.
func TestRemotingACL(t *testing.T) {
	g := startGuarded(t)
	ctx := context.Background()

	good := newAuthProducer(t, g, authSecret)
	const n = 5
	for i := range n {
		res, err := good.SendSync(ctx, primitive.NewMessage(authTopic, []byte("hello "+string(rune('a'+i)))))
		if err != nil {
			t.Fatalf("allowed send %d: %v", i, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("allowed send %d: %v", i, res)
		}
	}
	g.store.mu.Lock()
	names := append([]string(nil), g.store.names...)
	g.store.mu.Unlock()
	if len(names) != n || names[0] != "remoting:"+authAccessKey {
		t.Fatalf("the store hook saw senders %q, want %d of remoting:%s", names, n, authAccessKey)
	}

	_, err := good.SendSync(ctx, primitive.NewMessage(authForbidden, []byte("no")))
	if err == nil {
		t.Fatal("a send to the forbidden topic succeeded")
	}
	// The Go client reports a broker's refusal as "CODE: <code>, DESC: <remark>".
	if msg := err.Error(); !strings.Contains(msg, "CODE: 16,") || !strings.Contains(msg, "Pub on "+authForbidden+" is not allowed") {
		t.Fatalf("forbidden send: %v, want NO_PERMISSION (16) with the authorizer's reason", err)
	}
	t.Logf("forbidden send: %v", err)

	bad := newAuthProducer(t, g, "wrong-secret")
	_, err = bad.SendSync(ctx, primitive.NewMessage(authTopic, []byte("no")))
	if err == nil {
		t.Fatal("a send signed with a wrong secret succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "CODE: 16,") || !strings.Contains(msg, "signature mismatch") {
		t.Fatalf("wrong secret: %v, want NO_PERMISSION (16) saying the signature does not match", err)
	}
	t.Logf("wrong secret: %v", err)

	// A push consumer with the credentials receives what was sent: its
	// heartbeats, pulls and offset commits are signed and authorized.
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{g.namesrv}),
		consumer.WithGroupName("auth-consumer"),
		consumer.WithInstance("auth-consumer"),
		consumer.WithCredentials(primitive.Credentials{AccessKey: authAccessKey, SecretKey: authSecret}),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2*n)
	if err := c.Subscribe(authTopic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			got <- string(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	deadline := time.After(40 * time.Second)
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case b := <-got:
			seen[b] = true
		case <-deadline:
			t.Fatalf("the consumer received %d of %d messages", len(seen), n)
		}
	}
}

// codeUnauthorized is the gRPC API's UNAUTHORIZED.
const codeUnauthorized = 40100

// TestGRPCACL drives the guarded gRPC endpoint with the Node.js client
// and sessionCredentials: every call of a producer's start-up and send is
// signed and verified, and the store hook sees the principal; a client
// with a wrong secret is refused at start-up.
func TestGRPCACL(t *testing.T) {
	requireNode(t)
	g := startGuarded(t)
	k := &karman{t: t, grpc: g.grpc}

	t.Setenv("COMPAT_ACCESS_KEY", authAccessKey)
	t.Setenv("COMPAT_ACCESS_SECRET", authSecret)
	res := k.nodeTrySend(authTopic, []outMessage{{Body: "signed"}})
	if res[0].Error != nil {
		t.Fatalf("allowed send: %+v", res[0].Error)
	}
	g.store.mu.Lock()
	last := g.store.names[len(g.store.names)-1]
	g.store.mu.Unlock()
	if last != "grpc:"+authAccessKey {
		t.Fatalf("the store hook saw sender %q, want grpc:%s", last, authAccessKey)
	}

	// A wrong secret: the server refuses the start-up's first call
	// (QueryRoute) as UNAUTHORIZED, saying why, and the client does not
	// start.
	t.Setenv("COMPAT_ACCESS_SECRET", "wrong-secret")
	var start startupResult
	k.node("startup", map[string]any{"kind": "producer", "topics": []string{authTopic}}, &start)
	if start.Started {
		t.Fatal("a producer signing with a wrong secret started")
	}
	checkRefused(t, "start-up with a wrong secret", start.Error, codeUnauthorized, "signature mismatch")

}
