package broker

import (
	"context"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// holdingStore holds the sends of messages with the property hold until
// release is closed; it says it may wait, as process plugins do.
type holdingStore struct {
	held    chan struct{}
	release chan struct{}
	waits   bool
}

func (s *holdingStore) BeforeStore(ctx context.Context, b *hook.StoreBatch) error {
	if b.Messages[0].Property("hold") != "" {
		s.held <- struct{}{}
		<-s.release
	}
	return nil
}

func (s *holdingStore) MayWait() bool { return s.waits }

// TestWaitingStoreHookDoesNotHoldTheConnection: while a store hook that
// may wait holds one send, the next send on the same connection is
// stored and answered.
func TestWaitingStoreHookDoesNotHoldTheConnection(t *testing.T) {
	hk := &holdingStore{held: make(chan struct{}, 1), release: make(chan struct{}), waits: true}
	h := newHarnessWith(t, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true, AutoCreateGroups: true, Hooks: []any{hk}},
		broker: Options{AutoCreateTopics: true, AutoCreateGroups: true},
	})
	if h.b.hooksMayWait(server.KindDefault) {
		t.Fatal("requests of the default kind are taken to call a waiting store hook")
	}
	p := h.dial(nil)
	h.send(p, "T", 0, "first") // creates the topic

	first := make(chan *wire.Command, 1)
	go func() {
		first <- invoke(t, p, request(wire.SendMessage, sendHeader("T", 0, props("hold", "1")), []byte("held")))
	}()
	<-hk.held
	h.send(p, "T", 0, "second") // answered while the first is held
	close(hk.release)
	wantCode(t, <-first, wire.Success)
}

// TestACLKeepsRequestsInline: the engine's ACL never waits, so with it
// installed sends and pulls are still served on the connection's
// reading goroutine, as without authentication: no goroutine is started
// and woken per signed request.
func TestACLKeepsRequestsInline(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true, AutoCreateGroups: true, Hooks: []any{acl.New(acl.Options{})}},
		broker: Options{AutoCreateTopics: true, AutoCreateGroups: true},
	})
	if !h.b.eng.Hooks().Guarded() {
		t.Fatal("the ACL is not installed as an Authenticator or Authorizer")
	}
	for _, kind := range []server.Kind{server.KindSend, server.KindPull, server.KindDefault} {
		if h.b.hooksMayWait(kind) {
			t.Errorf("kind %v: taken to call a hook that may wait, so served off the reading goroutine", kind)
		}
	}
}
