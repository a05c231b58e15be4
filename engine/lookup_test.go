package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/index"
	"github.com/karmanmq/karman/engine/message"
)

// A message retried and dead-lettered is still found by its client id in
// each topic it was stored in; without a topic the newest copy is found.
func TestMessageByIDInTopic(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{AutoCreateGroups: true})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	sent, err := e.Send(ctx, newMsg("T", "payload"))
	if err != nil {
		t.Fatal(err)
	}
	orig := pullAll(t, e, "T", 0, 0, nil)[0]
	if err := e.SendBack(ctx, "G", orig.CommitLogOffset, SendBackOptions{DelayLevel: -1}); err != nil {
		t.Fatal(err)
	}
	dead := pullAll(t, e, message.DLQTopic("G"), 0, 0, nil)
	if len(dead) != 1 {
		t.Fatalf("dead letters: %d", len(dead))
	}

	for _, tt := range []struct {
		topic string
		want  int64
	}{
		{"T", orig.CommitLogOffset},
		{message.DLQTopic("G"), dead[0].CommitLogOffset},
	} {
		m, err := e.MessageByIDInTopic(sent.MsgID, tt.topic)
		if err != nil || m.CommitLogOffset != tt.want || m.Topic != tt.topic {
			t.Errorf("MessageByIDInTopic(%s) = %+v, %v; want the message at %d", tt.topic, m, err, tt.want)
		}
	}
	if m, err := e.MessageByID(sent.MsgID); err != nil || m.CommitLogOffset != dead[0].CommitLogOffset {
		t.Errorf("MessageByID = %+v, %v; want the dead letter, the newest", m, err)
	}
	// By offset id, in its own topic only.
	if m, err := e.MessageByIDInTopic(sent.OffsetMsgID(), "T"); err != nil || m.CommitLogOffset != orig.CommitLogOffset {
		t.Errorf("MessageByIDInTopic(offset id, T) = %+v, %v", m, err)
	}
	for _, tt := range []struct{ id, topic string }{
		{sent.OffsetMsgID(), message.DLQTopic("G")},
		{sent.MsgID, "Other"},
		{"unknown", "T"},
	} {
		if _, err := e.MessageByIDInTopic(tt.id, tt.topic); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("MessageByIDInTopic(%s, %s): %v, want ErrMessageNotFound", tt.id, tt.topic, err)
		}
	}
}

// An index written with the earlier id layout is rewritten from the log
// when the engine opens.
func TestOpenMigratesLegacyIDIndex(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, &Options{})
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	var ids []string
	for range 5 {
		res, err := e.Send(ctx, newMsg("T", "m", message.PropertyKeys, "k"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MsgID)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// What an earlier version left: ids keyed alone, and none of the
	// current layout.
	db, err := pebble.Open(filepath.Join(dir, "index"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte{index.PrefixID}, []byte{index.PrefixID + 1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Set(append([]byte{index.PrefixLegacyID}, ids[0]...), make([]byte, 8), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	e = openTest(t, dir, &Options{})
	defer e.Close()
	for _, id := range ids {
		if m, err := e.MessageByIDInTopic(id, "T"); err != nil || m.UniqKey() != id {
			t.Errorf("after reopening: MessageByIDInTopic(%s) = %v, %v", id, m, err)
		}
	}
	if legacy, err := e.keys.HasLegacyIDs(); err != nil || legacy {
		t.Errorf("legacy id entries left after reopening: %v, %v", legacy, err)
	}
	if got := len(pullAll(t, e, "T", 0, 0, nil)) + len(pullAll(t, e, "T", 1, 0, nil)); got != 5 {
		t.Errorf("the rebuilt queues hold %d messages, want 5", got)
	}
	ms, err := e.MessagesByKey("T", "k", 0, 1<<62, 10)
	if err != nil || len(ms) != 5 {
		t.Errorf("the rebuilt key index finds %d messages, %v", len(ms), err)
	}
}

// Looking a message up by its client id among 10,000, in its topic and
// over every topic.
func BenchmarkMessageByID(b *testing.B) {
	e := openTest(b, b.TempDir(), &Options{SegmentSize: 64 << 20})
	defer e.Close()
	mustTopic(b, e, "T", 4)
	ctx := context.Background()
	ids := make([]string, 0, 10_000)
	for range cap(ids) {
		res, err := e.Send(ctx, newMsg("T", "payload"))
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, res.MsgID)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("in-topic", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := e.MessageByIDInTopic(ids[i%len(ids)], "T"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("any-topic", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := e.MessageByID(ids[i%len(ids)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestStoreTime checks that StoreTime gives each stored message's store
// time and refuses offsets with no message.
func TestStoreTime(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	var sent []SendResult
	for i := range 3 {
		res, err := e.Send(ctx, newMsg("T", strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, res)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	for _, res := range sent {
		ts, err := e.StoreTime("T", 0, res.QueueOffset)
		if err != nil || ts != res.StoreTimestamp {
			t.Errorf("store time of offset %d = %d, %v; want %d", res.QueueOffset, ts, err, res.StoreTimestamp)
		}
	}
	for _, off := range []int64{-1, 3} {
		if _, err := e.StoreTime("T", 0, off); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("store time of offset %d: %v, want ErrMessageNotFound", off, err)
		}
	}
	if _, err := e.StoreTime("Nope", 0, 0); !errors.Is(err, ErrTopicNotFound) {
		t.Errorf("store time in an unknown topic: %v", err)
	}
}
