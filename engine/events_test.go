package engine

import (
	"context"
	"testing"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// TestTopicEvents: subscribers hear of every topic that comes into being,
// whoever creates it (CreateTopic, EnsureTopic, auto-creation on a first
// send, the retry topic of a group), once, and of deletions.
func TestTopicEvents(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{AutoCreateTopics: true})
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := e.Subscribe(ctx)
	next := func() Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		default:
			t.Fatal("no event")
			return Event{}
		}
	}
	want := func(kind EventKind, topic string) {
		t.Helper()
		if ev := next(); ev.Kind != kind || ev.Topic != topic {
			t.Fatalf("event %+v, want kind %d for %s", ev, kind, topic)
		}
	}

	mustTopic(t, e, "Made", 2)
	want(EventTopicCreated, "Made")
	mustTopic(t, e, "Made", 4) // an update is no creation
	if _, created, err := e.EnsureTopic(meta.Topic{Name: "Ensured", ReadQueues: 1, WriteQueues: 1}); err != nil || !created {
		t.Fatalf("EnsureTopic: created %v, %v", created, err)
	}
	want(EventTopicCreated, "Ensured")
	if _, _, err := e.EnsureTopic(meta.Topic{Name: "Ensured", ReadQueues: 1, WriteQueues: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Send(ctx, newMsg("Auto", "body")); err != nil {
		t.Fatal(err)
	}
	want(EventTopicCreated, "Auto")

	if err := e.CreateGroup(meta.Group{Name: "G"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Send(ctx, newMsg("Made", "fails"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SendBack(ctx, "G", res.CommitLogOffset, SendBackOptions{}); err != nil {
		t.Fatal(err)
	}
	// The retry topic, and the timer's own topic, which the first delayed
	// message creates.
	created := map[string]bool{}
	for range 2 {
		if ev := next(); ev.Kind == EventTopicCreated {
			created[ev.Topic] = true
		}
	}
	if !created[message.RetryTopic("G")] || !created[message.TopicTimer] {
		t.Fatalf("created %v, want %s and %s", created, message.RetryTopic("G"), message.TopicTimer)
	}

	if err := e.DeleteTopic("Auto"); err != nil {
		t.Fatal(err)
	}
	want(EventTopicDeleted, "Auto")
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}
