package broker

import (
	"context"
	"testing"

	"github.com/karmanmq/karman/engine"
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
