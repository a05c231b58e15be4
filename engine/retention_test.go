package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRetentionMovesQueueStart(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 10, RetentionAge: time.Hour})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	body := string(bytes.Repeat([]byte("r"), 4000))
	for i := range 100 { // about 6 segments
		if _, err := e.Send(ctx, newMsg("T", fmt.Sprintf("%03d%s", i, body))); err != nil {
			t.Fatal(err)
		}
	}
	e.WaitDispatched(ctx)
	removed, err := e.ApplyRetention(time.Now().Add(2 * time.Hour))
	if err != nil || removed == 0 {
		t.Fatalf("retention removed %d segments, %v", removed, err)
	}
	min, err := e.MinOffset("T", 0)
	if err != nil || min == 0 || min >= 100 {
		t.Fatalf("min offset after retention %d, %v", min, err)
	}
	var rangeErr *OffsetRangeError
	if _, err := e.Pull(ctx, "T", 0, 0, 32, nil); !errors.As(err, &rangeErr) || rangeErr.Min != min {
		t.Fatalf("pull below the new start: %v", err)
	}
	got := pullAll(t, e, "T", 0, min, nil)
	if len(got) != int(100-min) || !bytes.HasPrefix(got[0].Body, []byte(fmt.Sprintf("%03d", min))) {
		t.Fatalf("after retention pulled %d messages from %d", len(got), min)
	}
}

func TestCorruptRecordIsNeverServed(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, nil)
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	var victim SendResult
	for i := range 20 {
		res, err := e.Send(ctx, newMsg("T", fmt.Sprintf("message-%02d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if i == 10 {
			victim = res
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Flip one byte of message 10's body on disk.
	seg := filepath.Join(dir, "commitlog", fmt.Sprintf("%020d", 0))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data[victim.CommitLogOffset:], []byte("message-10"))
	if at < 0 {
		t.Fatal("victim not found in the segment")
	}
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{'X'}, victim.CommitLogOffset+int64(at)+8)
	f.Close()

	e = openTest(t, dir, nil)
	defer e.Close()
	got := pullAll(t, e, "T", 0, 0, nil)
	if len(got) != 19 {
		t.Fatalf("pulled %d messages, want the 19 intact ones", len(got))
	}
	for _, m := range got {
		if bytes.Contains(m.Body, []byte("X")) || string(m.Body) == "message-10" {
			t.Fatalf("corrupt record served: %q", m.Body)
		}
	}
	if _, err := e.MessageAt(victim.CommitLogOffset); !errors.Is(err, ErrMessageNotFound) {
		t.Fatalf("direct read of the corrupt record: %v", err)
	}
	if e.Stats().CorruptRecords == 0 {
		t.Fatal("corruption not counted")
	}
}

// TestRetentionRunsWhenASegmentFills: retention does not wait for its
// interval when the commit log moves to a new segment (the moment the
// disk fills): with an hour between runs, segments past their age go as
// soon as the log rolls.
func TestRetentionRunsWhenASegmentFills(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 64 << 10, RetentionAge: time.Millisecond, RetentionInterval: time.Hour})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	body := string(bytes.Repeat([]byte("r"), 4000))
	for i := range 50 { // about 3 segments
		if _, err := e.Send(ctx, newMsg("T", fmt.Sprintf("%03d%s", i, body))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // every segment is past its age when the next one starts
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.log.MinOffset() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no segment was deleted after the log rolled, with retention due only in an hour")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
