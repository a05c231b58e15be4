package engine

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/karmanmq/karman/engine/meta"
)

// TestEnsureTopicKeepsExisting checks that EnsureTopic never changes a
// topic an administrator configured, and that the topic it creates can
// be sent to at once.
func TestEnsureTopicKeepsExisting(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	admin := meta.Topic{Name: "Orders", ReadQueues: 3, WriteQueues: 3, Perm: meta.PermRW, MessageType: meta.MessageTypeFIFO}
	if err := e.CreateTopic(admin); err != nil {
		t.Fatal(err)
	}
	got, created, err := e.EnsureTopic(meta.Topic{Name: "Orders"})
	if err != nil || created {
		t.Fatalf("EnsureTopic of an existing topic: created %v, %v", created, err)
	}
	if got.Queues() != 3 || got.MessageType != meta.MessageTypeFIFO {
		t.Fatalf("EnsureTopic returned %+v, want the administrator's configuration", got)
	}
	if stored, _ := e.Topic("Orders"); stored.Queues() != 3 || stored.MessageType != meta.MessageTypeFIFO {
		t.Fatalf("stored topic changed to %+v", stored)
	}

	got, created, err = e.EnsureTopic(meta.Topic{Name: "Fresh"})
	if err != nil || !created || got.Queues() != DefaultQueueCount {
		t.Fatalf("EnsureTopic of a new topic = %+v, created %v, %v", got, created, err)
	}
	if _, err := e.Send(context.Background(), newMsg("Fresh", "x")); err != nil {
		t.Fatalf("send to the ensured topic: %v", err)
	}
	if _, _, err := e.EnsureTopic(meta.Topic{Name: "bad name!"}); !errors.Is(err, ErrInvalidTopic) && !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("EnsureTopic of an invalid name: %v", err)
	}
}

// TestEnsureConcurrentCreatorsOneWins runs many creators of one topic and
// one group at once: exactly one of each reports creating it, and all
// get the same configuration back.
func TestEnsureConcurrentCreatorsOneWins(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	const creators = 16
	var topicsMade, groupsMade atomic.Int32
	var wg sync.WaitGroup
	topics := make([]meta.Topic, creators)
	groups := make([]meta.Group, creators)
	for i := range creators {
		wg.Go(func() {
			tp, created, err := e.EnsureTopic(meta.Topic{Name: "T", ReadQueues: int32(i + 1), WriteQueues: int32(i + 1)})
			if err != nil {
				t.Error(err)
			}
			if created {
				topicsMade.Add(1)
			}
			topics[i] = tp
			g, created, err := e.EnsureGroup(meta.Group{Name: "G", MaxAttempts: int32(i + 1)})
			if err != nil {
				t.Error(err)
			}
			if created {
				groupsMade.Add(1)
			}
			groups[i] = g
		})
	}
	wg.Wait()
	if topicsMade.Load() != 1 || groupsMade.Load() != 1 {
		t.Fatalf("%d creators made the topic and %d the group, want 1 each", topicsMade.Load(), groupsMade.Load())
	}
	stored, _ := e.Topic("T")
	storedGroup, _ := e.Group("G")
	for i := range creators {
		if !reflect.DeepEqual(topics[i], stored) || !reflect.DeepEqual(groups[i], storedGroup) {
			t.Fatalf("creator %d got %+v / %+v, stored %+v / %+v", i, topics[i], groups[i], stored, storedGroup)
		}
	}
}

// TestEnsureGroupKeepsExisting checks that EnsureGroup leaves an existing
// group's settings alone and refuses invalid ones.
func TestEnsureGroupKeepsExisting(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	if err := e.CreateGroup(meta.Group{Name: "G", FIFO: true, MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	g, created, err := e.EnsureGroup(meta.Group{Name: "G"})
	if err != nil || created || !g.FIFO || g.MaxAttempts != 3 {
		t.Fatalf("EnsureGroup of an existing group = %+v, created %v, %v", g, created, err)
	}
	if _, _, err := e.EnsureGroup(meta.Group{Name: "H", MaxAttempts: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative max attempts: %v", err)
	}
	if _, _, err := e.EnsureGroup(meta.Group{Name: ""}); !errors.Is(err, ErrInvalidGroup) {
		t.Fatalf("empty group name: %v", err)
	}
}
