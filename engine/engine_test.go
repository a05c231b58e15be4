package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

func openTest(t testing.TB, dir string, o *Options) *Engine {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = 1 << 20
	}
	// The disk rules read the host's file system, which other programs
	// fill: off unless a test sets them.
	if o.RetentionDiskRatio == 0 {
		o.RetentionDiskRatio = 1
	}
	if o.DiskFullRatio == 0 {
		o.DiskFullRatio = 1
	}
	e, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return e
}

func mustTopic(t testing.TB, e *Engine, name string, queues int32) {
	t.Helper()
	if err := e.CreateTopic(meta.Topic{Name: name, ReadQueues: queues, WriteQueues: queues}); err != nil {
		t.Fatalf("CreateTopic(%s): %v", name, err)
	}
}

func newMsg(topic, body string, props ...string) *message.Message {
	m := &message.Message{Topic: topic, Body: []byte(body)}
	for i := 0; i+1 < len(props); i += 2 {
		m.SetProperty(props[i], props[i+1])
	}
	return m
}

func pullAll(t testing.TB, e *Engine, topic string, queue int32, from int64, f Filter) []*message.Message {
	t.Helper()
	ctx := context.Background()
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatalf("WaitDispatched: %v", err)
	}
	var out []*message.Message
	for {
		res, err := e.Pull(ctx, topic, queue, from, 32, f)
		if err != nil {
			t.Fatalf("Pull(%s/%d@%d): %v", topic, queue, from, err)
		}
		for _, rec := range res.Records {
			m, _, err := message.DecodeStored(rec)
			if err != nil {
				t.Fatalf("DecodeStored: %v", err)
			}
			out = append(out, m)
		}
		if res.NextOffset == from {
			return out
		}
		from = res.NextOffset
	}
}

func TestSendAndPull(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	for i := range 100 {
		m := newMsg("T", fmt.Sprintf("body-%d", i), message.PropertyTags, fmt.Sprintf("tag%d", i%3), message.PropertyKeys, fmt.Sprintf("k%d shared", i))
		res, err := e.SendToQueue(ctx, m, int32(i%2))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.QueueID != int32(i%2) || res.QueueOffset != int64(i/2) {
			t.Fatalf("send %d stored at %d/%d, want %d/%d", i, res.QueueID, res.QueueOffset, i%2, i/2)
		}
		if len(res.MsgID) != 32 || m.UniqKey() != "" {
			t.Fatalf("send %d: MsgID %q, message modified: %q", i, res.MsgID, m.UniqKey())
		}
	}
	for q := range int32(2) {
		got := pullAll(t, e, "T", q, 0, nil)
		if len(got) != 50 {
			t.Fatalf("queue %d: pulled %d messages, want 50", q, len(got))
		}
		for j, m := range got {
			i := j*2 + int(q)
			if string(m.Body) != fmt.Sprintf("body-%d", i) || m.QueueOffset != int64(j) || m.QueueID != q {
				t.Fatalf("queue %d #%d: got %q at %d/%d", q, j, m.Body, m.QueueID, m.QueueOffset)
			}
			if m.Tags() != fmt.Sprintf("tag%d", i%3) || m.UniqKey() == "" || m.StoreTimestamp == 0 {
				t.Fatalf("queue %d #%d: properties not kept: %v", q, j, m.Properties)
			}
		}
	}
	max, _ := e.MaxOffset("T", 0)
	min, _ := e.MinOffset("T", 0)
	if max != 50 || min != 0 {
		t.Fatalf("bounds [%d,%d), want [0,50)", min, max)
	}
}

func TestSendPicksQueues(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 4)
	ctx := context.Background()
	used := map[int32]int{}
	groupQueue := map[int32]bool{}
	for i := range 40 {
		res, err := e.Send(ctx, newMsg("T", "x"))
		if err != nil {
			t.Fatal(err)
		}
		used[res.QueueID]++
		res, err = e.Send(ctx, newMsg("T", "y", message.PropertyShardingKey, "order-7"))
		if err != nil {
			t.Fatal(err)
		}
		groupQueue[res.QueueID] = true
		_ = i
	}
	if len(used) != 4 {
		t.Errorf("round-robin used queues %v, want all 4", used)
	}
	if len(groupQueue) != 1 {
		t.Errorf("one message group went to queues %v, want one queue", groupQueue)
	}
}

func TestSendBatchIsContiguous(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	if _, err := e.Send(ctx, newMsg("T", "first")); err != nil {
		t.Fatal(err)
	}
	batch := []*message.Message{newMsg("T", "a"), newMsg("T", "b"), newMsg("T", "c", message.PropertyUniqKey, "MYID")}
	res, err := e.SendBatch(ctx, batch, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.QueueOffset != int64(i+1) {
			t.Errorf("batch message %d at offset %d, want %d", i, r.QueueOffset, i+1)
		}
		if i > 0 && r.CommitLogOffset <= res[i-1].CommitLogOffset {
			t.Errorf("batch not in log order: %d then %d", res[i-1].CommitLogOffset, r.CommitLogOffset)
		}
	}
	if res[2].MsgID != "MYID" {
		t.Errorf("given UNIQ_KEY replaced: %q", res[2].MsgID)
	}
	got := pullAll(t, e, "T", 0, 0, nil)
	var bodies []string
	for _, m := range got {
		bodies = append(bodies, string(m.Body))
	}
	if strings.Join(bodies, ",") != "first,a,b,c" {
		t.Fatalf("pulled %v", bodies)
	}
	for i, r := range res {
		// Generated ids are written into the records: each result names
		// its own record's id.
		if m := got[i+1]; m.UniqKey() != r.MsgID || len(r.MsgID) != 32 && i < 2 {
			t.Errorf("batch message %d: result id %q, stored id %q", i, r.MsgID, m.UniqKey())
		}
	}
	if res[0].MsgID == res[1].MsgID {
		t.Errorf("two messages with id %q", res[0].MsgID)
	}
	mixed := []*message.Message{newMsg("T", "a"), newMsg("U", "b")}
	if _, err := e.SendBatch(ctx, mixed, 0); !errors.Is(err, ErrBatchMixedTargets) {
		t.Fatalf("mixed batch: %v, want ErrBatchMixedTargets", err)
	}
}

func TestBadInput(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{MaxMessageSize: 1000})
	defer e.Close()
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	sendTests := []struct {
		name  string
		m     *message.Message
		queue int32
		want  error
	}{
		{"unknown topic", newMsg("Nope", "x"), AnyQueue, ErrTopicNotFound},
		{"bad topic chars", newMsg("a b", "x"), AnyQueue, ErrInvalidTopic},
		{"long topic", newMsg(strings.Repeat("t", 128), "x"), AnyQueue, ErrInvalidTopic},
		{"empty topic", newMsg("", "x"), AnyQueue, ErrInvalidTopic},
		{"empty body", newMsg("T", ""), AnyQueue, ErrEmptyBody},
		{"large body", newMsg("T", strings.Repeat("x", 1001)), AnyQueue, ErrMessageTooLarge},
		{"queue out of range", newMsg("T", "x"), 2, ErrInvalidQueue},
		{"negative queue", newMsg("T", "x"), -5, ErrInvalidQueue},
		{"bad property", newMsg("T", "x", "k\x01", "v"), AnyQueue, ErrInvalidMessage},
		{"send to light queue", newMsg("%LMQ%x", "x"), AnyQueue, ErrReservedName},
		{"bad light queue", newMsg("T", "x", message.PropertyInnerMultiDispatch, "plain"), AnyQueue, ErrInvalidMessage},
	}
	for _, tt := range sendTests {
		_, err := e.SendToQueue(ctx, tt.m, tt.queue)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	topicTests := []struct {
		name string
		t    meta.Topic
		want error
	}{
		{"system topic", meta.Topic{Name: "TBW102"}, ErrReservedName},
		{"too many queues", meta.Topic{Name: "Big", ReadQueues: MaxQueues + 1}, ErrInvalidArgument},
		{"bad name", meta.Topic{Name: "a/b"}, ErrInvalidTopic},
		{"light queue", meta.Topic{Name: "%LMQ%a"}, ErrReservedName},
	}
	for _, tt := range topicTests {
		if err := e.CreateTopic(tt.t); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := e.Send(ctx, newMsg("T", "x")); err != nil {
		t.Fatal(err)
	}
	e.WaitDispatched(ctx)
	var rangeErr *OffsetRangeError
	if _, err := e.Pull(ctx, "T", 0, 5, 32, nil); !errors.As(err, &rangeErr) || !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("pull past the end: %v, want *OffsetRangeError", err)
	}
	if _, err := e.Pull(ctx, "T", 0, -1, 32, nil); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("pull at -1: %v", err)
	}
	if _, err := e.Pull(ctx, "T", 9, 0, 32, nil); !errors.Is(err, ErrInvalidQueue) {
		t.Errorf("pull of queue 9: %v", err)
	}
	if _, err := e.Pull(ctx, "T", 0, 0, 0, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("pull of 0 messages: %v", err)
	}
	if _, err := e.Pull(ctx, "Nope", 0, 0, 1, nil); !errors.Is(err, ErrTopicNotFound) {
		t.Errorf("pull of unknown topic: %v", err)
	}
	if err := e.CommitOffset("g", "T", 0, 99); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("commit past the end: %v", err)
	}
	if err := e.CommitOffset("bad group!", "T", 0, 0); !errors.Is(err, ErrInvalidGroup) {
		t.Errorf("commit for a bad group: %v", err)
	}
	if _, err := e.MessageByID("nothing"); !errors.Is(err, ErrMessageNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := e.MessageAt(12345); !errors.Is(err, ErrMessageNotFound) {
		t.Errorf("bad commit-log offset: %v", err)
	}
	if _, err := TagFilter("||"); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("bad tag filter: %v", err)
	}
}

func TestAutoCreate(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{AutoCreateTopics: true, DefaultQueues: 3})
	defer e.Close()
	if _, err := e.Send(context.Background(), newMsg("Fresh", "x")); err != nil {
		t.Fatal(err)
	}
	cfg, err := e.Topic("Fresh")
	if err != nil || cfg.Queues() != 3 || !cfg.Perm.Writable() {
		t.Fatalf("auto-created topic %+v, %v", cfg, err)
	}
	if _, err := e.Send(context.Background(), newMsg("SCHEDULE_TOPIC_XXXX", "x")); !errors.Is(err, ErrReservedName) {
		t.Fatalf("auto-create of a system topic: %v", err)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, &Options{SegmentSize: 64 << 10})
	mustTopic(t, e, "T", 1)
	if err := e.CreateGroup(meta.Group{Name: "G", FIFO: true, MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body := strings.Repeat("x", 900)
	for i := range 300 { // several segments
		if _, err := e.Send(ctx, newMsg("T", fmt.Sprintf("%d-%s", i, body))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.CommitOffset("G", "T", 0, 120); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, dir, &Options{SegmentSize: 64 << 10})
	defer e.Close()
	got := pullAll(t, e, "T", 0, 0, nil)
	if len(got) != 300 {
		t.Fatalf("after reopen pulled %d, want 300", len(got))
	}
	for i, m := range got {
		if !bytes.HasPrefix(m.Body, []byte(fmt.Sprintf("%d-", i))) {
			t.Fatalf("message %d is %q", i, m.Body[:10])
		}
	}
	if off, err := e.ConsumerOffset("G", "T", 0); err != nil || off != 120 {
		t.Fatalf("offset after reopen %d, %v", off, err)
	}
	if g, err := e.Group("G"); err != nil || !g.FIFO || g.MaxAttempts != 3 {
		t.Fatalf("group after reopen %+v, %v", g, err)
	}
	res, err := e.Send(ctx, newMsg("T", "after"))
	if err != nil || res.QueueOffset != 300 {
		t.Fatalf("send after reopen: offset %d, %v", res.QueueOffset, err)
	}
}

func TestLightQueues(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	for i := range 5 {
		lmq := "%LMQ%a"
		if i%2 == 1 {
			lmq += ",%LMQ%b"
		}
		if _, err := e.Send(ctx, newMsg("T", fmt.Sprint(i), message.PropertyInnerMultiDispatch, lmq)); err != nil {
			t.Fatal(err)
		}
	}
	a := pullAll(t, e, "%LMQ%a", 0, 0, nil)
	b := pullAll(t, e, "%LMQ%b", 0, 0, nil)
	if len(a) != 5 || len(b) != 2 {
		t.Fatalf("light queues hold %d and %d, want 5 and 2", len(a), len(b))
	}
	for i, m := range b {
		if m.QueueOffset != int64(i) || string(m.Body) != fmt.Sprint(2*i+1) {
			t.Fatalf("light queue b #%d: offset %d body %q", i, m.QueueOffset, m.Body)
		}
	}
	if a[3].CommitLogOffset != b[1].CommitLogOffset {
		t.Fatalf("one message stored twice: %d vs %d", a[3].CommitLogOffset, b[1].CommitLogOffset)
	}
}

func TestTagFilterPull(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	for i := range 90 {
		e.Send(ctx, newMsg("T", fmt.Sprint(i), message.PropertyTags, []string{"A", "B", "C"}[i%3]))
	}
	f, err := TagFilter("A || C")
	if err != nil {
		t.Fatal(err)
	}
	got := pullAll(t, e, "T", 0, 0, f)
	if len(got) != 60 {
		t.Fatalf("filtered pull got %d, want 60", len(got))
	}
	for _, m := range got {
		if m.Tags() == "B" {
			t.Fatalf("filter let B through")
		}
	}
}

// TestPullBytes checks that a pull's records lie back to back, as
// PullResult.Bytes returns them, filtered or not.
func TestPullBytes(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	for i := range 40 {
		e.Send(ctx, newMsg("T", fmt.Sprint(i), message.PropertyTags, []string{"A", "B"}[i%2]))
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := TagFilter("A")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Filter{nil, f} {
		res, err := e.Pull(ctx, "T", 0, 1, 16, f)
		if err != nil || len(res.Records) == 0 {
			t.Fatalf("%v %v", res, err)
		}
		var joined []byte
		for _, r := range res.Records {
			joined = append(joined, r...)
		}
		if !bytes.Equal(res.Bytes(), joined) {
			t.Fatalf("Bytes is not the records back to back (filter %v)", f)
		}
		res.Release()
	}
	empty, err := e.Pull(ctx, "T", 0, 40, 16, nil)
	if err != nil || empty.Bytes() != nil {
		t.Fatalf("caught up: %v %v", empty.Bytes(), err)
	}
}

func TestWaitForArrival(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.WaitForArrival(ctx, "T", 0, 0)
		}()
	}
	if _, err := e.Send(ctx, newMsg("T", "wake")); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := e.WaitForArrival(short, "T", 0, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with nothing arriving: %v", err)
	}
}

func TestLookups(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	var results []SendResult
	for i := range 10 {
		res, err := e.Send(ctx, newMsg("T", fmt.Sprint(i), message.PropertyKeys, fmt.Sprintf("order-%d common", i)))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	e.WaitDispatched(ctx)
	m, err := e.MessageByID(results[3].MsgID)
	if err != nil || string(m.Body) != "3" {
		t.Fatalf("by uniq id: %v %v", m, err)
	}
	m, err = e.MessageByID(results[4].OffsetMsgID())
	if err != nil || string(m.Body) != "4" {
		t.Fatalf("by offset id: %v %v", m, err)
	}
	ms, err := e.MessagesByKey("T", "order-7", 0, time.Now().UnixMilli()+1000, 10)
	if err != nil || len(ms) != 1 || string(ms[0].Body) != "7" {
		t.Fatalf("by key: %v %v", ms, err)
	}
	ms, err = e.MessagesByKey("T", "common", 0, time.Now().UnixMilli()+1000, 4)
	if err != nil || len(ms) != 4 {
		t.Fatalf("by shared key with limit 4: %d %v", len(ms), err)
	}
	if ms, _ := e.MessagesByKey("T", "common", 0, 1, 10); len(ms) != 0 {
		t.Fatalf("time range excludes all, got %d", len(ms))
	}
	off, err := e.OffsetByTime("T", 0, results[5].StoreTimestamp)
	if err != nil || off > 5 {
		t.Fatalf("offset by time of message 5: %d %v", off, err)
	}
	if off, _ := e.OffsetByTime("T", 0, time.Now().UnixMilli()+60000); off != 10 {
		t.Fatalf("offset by future time %d, want 10", off)
	}
	if off, _ := e.OffsetByTime("T", 0, 0); off != 0 {
		t.Fatalf("offset by time 0: %d", off)
	}
}

func TestConcurrentSendersKeepQueueOrder(t *testing.T) {
	e := openTest(t, t.TempDir(), &Options{SegmentSize: 256 << 10})
	defer e.Close()
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	const producers, each = 8, 300
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := e.SendToQueue(ctx, newMsg("T", fmt.Sprintf("%d:%d", p, i)), int32(p%2)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for q := range int32(2) {
		got := pullAll(t, e, "T", q, 0, nil)
		if len(got) != producers/2*each {
			t.Fatalf("queue %d has %d messages", q, len(got))
		}
		last := map[string]int{}
		for j, m := range got {
			if m.QueueOffset != int64(j) {
				t.Fatalf("queue %d entry %d has offset %d", q, j, m.QueueOffset)
			}
			p, i, _ := strings.Cut(string(m.Body), ":")
			var n int
			fmt.Sscan(i, &n)
			if prev, ok := last[p]; ok && n != prev+1 {
				t.Fatalf("producer %s: %d after %d", p, n, prev)
			}
			last[p] = n
		}
	}
}

func TestDeleteTopic(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	e.Send(ctx, newMsg("T", "x"))
	e.CommitOffset("G", "T", 0, 0)
	if err := e.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Pull(ctx, "T", 0, 0, 1, nil); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("pull after delete: %v", err)
	}
	if err := e.DeleteTopic("T"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestSQLFilterPull(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	for i := range 100 {
		e.Send(ctx, newMsg("T", fmt.Sprint(i), "n", fmt.Sprint(i), "color", []string{"red", "blue"}[i%2], message.PropertyTags, "t"))
	}
	f, err := e.SQLFilter("G", "T", "n >= 90 AND color = 'red' AND TAGS = 't'")
	if err != nil {
		t.Fatal(err)
	}
	got := pullAll(t, e, "T", 0, 0, f)
	if len(got) != 5 {
		t.Fatalf("SQL filter matched %d, want 5", len(got))
	}
	if _, err := e.SQLFilter("G", "T", "n >>= 1"); !errors.Is(err, ErrInvalidFilter) || !strings.Contains(err.Error(), "column") {
		t.Fatalf("bad expression: %v", err)
	}
	off := openTest(t, t.TempDir(), &Options{DisableSQLFilter: true})
	defer off.Close()
	if _, err := off.SQLFilter("G", "T", "a = 1"); !errors.Is(err, ErrFilterDisabled) {
		t.Fatalf("disabled SQL filter: %v", err)
	}
}

// BenchmarkFilteredPull scans a queue where 1% of the messages match.
func BenchmarkFilteredPull(b *testing.B) {
	e := openTest(b, b.TempDir(), &Options{SegmentSize: 256 << 20})
	defer e.Close()
	mustTopic(b, e, "T", 1)
	ctx := context.Background()
	const n = 100_000
	batch := make([]*message.Message, 100)
	for i := range batch {
		batch[i] = newMsg("T", strings.Repeat("x", 256), "n", fmt.Sprint(i))
	}
	for range n / 100 {
		if _, err := e.SendBatch(ctx, batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	e.WaitDispatched(ctx)
	f, err := e.SQLFilter("G", "T", "n = 7")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	scanned := 0
	for b.Loop() {
		var off int64
		for off < n {
			res, err := e.Pull(ctx, "T", 0, off, 32, f)
			if err != nil {
				b.Fatal(err)
			}
			scanned += int(res.NextOffset - off)
			off = res.NextOffset
			res.Release()
		}
	}
	b.ReportMetric(float64(scanned)/b.Elapsed().Seconds(), "scanned/s")
}

func TestStoreBatch(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	stored, err := e.StoreBatch(ctx, []*message.Message{newMsg("T", "a"), newMsg("T", "b")}, AnyQueue)
	if err != nil || !stored {
		t.Fatalf("StoreBatch: stored %v, %v", stored, err)
	}
	got := pullAll(t, e, "T", 0, 0, nil)
	if len(got) != 2 || string(got[0].Body) != "a" || string(got[1].Body) != "b" || len(got[0].UniqKey()) != 32 {
		t.Fatalf("pulled %v", got)
	}
	if m, err := e.MessageByID(got[1].UniqKey()); err != nil || string(m.Body) != "b" {
		t.Fatalf("MessageByID of a stored message: %v %v", m, err)
	}
	for _, tc := range []struct {
		name string
		msgs []*message.Message
		want error
	}{
		{"empty", nil, ErrInvalidArgument},
		{"mixed topics", []*message.Message{newMsg("T", "a"), newMsg("U", "b")}, ErrBatchMixedTargets},
		{"unknown topic", []*message.Message{newMsg("nope", "a")}, ErrTopicNotFound},
	} {
		if stored, err := e.StoreBatch(ctx, tc.msgs, AnyQueue); stored || !errors.Is(err, tc.want) {
			t.Errorf("%s: stored %v, %v; want not stored, %v", tc.name, stored, err, tc.want)
		}
	}
}
