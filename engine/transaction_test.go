package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/registry"
)

func halfMsg(body string) *message.Message {
	return newMsg("T", body, message.PropertyTransactionPrepared, "true", message.PropertyProducerGroup, "PG", message.PropertyKeys, "k-"+body)
}

// testConn is a registry.Conn for a producer the tests pretend is connected.
type testConn struct{ addr string }

func (c *testConn) RemoteAddr() string { return c.addr }

func txnEngine(t *testing.T, o *Options) *Engine {
	t.Helper()
	e := openTest(t, t.TempDir(), o)
	mustTopic(t, e, "T", 1)
	return e
}

func TestTransactionCommitAndRollback(t *testing.T) {
	e := txnEngine(t, nil)
	defer e.Close()
	ctx := context.Background()
	commit, err := e.Send(ctx, halfMsg("commit"))
	if err != nil {
		t.Fatal(err)
	}
	rollback, _ := e.Send(ctx, halfMsg("rollback"))
	e.WaitDispatched(ctx)
	if n, err := e.HalfMessages(100); n != 2 || err != nil {
		t.Fatalf("half messages pending: %d, %v; want 2", n, err)
	}
	if n, _ := e.HalfMessages(1); n != 1 {
		t.Fatalf("half messages counted up to 1: %d", n)
	}
	if max, _ := e.MaxOffset("T", 0); max != 0 {
		t.Fatalf("half messages visible: %d", max)
	}
	req := EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: commit.CommitLogOffset, QueueOffset: commit.QueueOffset, Decision: Commit}
	if err := e.EndTransaction(ctx, req); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := e.EndTransaction(ctx, req); !errors.Is(err, ErrTransactionResolved) {
		t.Fatalf("second commit: %v", err)
	}
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "other", CommitLogOffset: rollback.CommitLogOffset, QueueOffset: -1, Decision: Commit}); !errors.Is(err, ErrTransactionGroup) {
		t.Fatalf("commit by another group: %v", err)
	}
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", MsgID: rollback.MsgID, QueueOffset: -1, Decision: Rollback}); err != nil {
		t.Fatalf("rollback by id: %v", err)
	}
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: 12345, QueueOffset: -1, Decision: Commit}); !errors.Is(err, ErrTransactionNotFound) {
		t.Fatalf("commit of nothing: %v", err)
	}
	got := waitMessages(t, e, "T", 0, 1, time.Second)
	m := got[0]
	if string(m.Body) != "commit" || m.UniqKey() != commit.MsgID || m.Keys()[0] != "k-commit" || m.Properties[message.PropertyTransactionPrepared] != "" {
		t.Fatalf("committed message: %+v", m)
	}
	time.Sleep(50 * time.Millisecond)
	if max, _ := e.MaxOffset("T", 0); max != 1 {
		t.Fatalf("rolled-back message delivered: queue holds %d", max)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := e.HalfMessages(100); n != 0 || err != nil {
		t.Fatalf("half messages pending once both ended: %d, %v", n, err)
	}
	// One of each ended; the refused ones count for nothing.
	if st := e.Stats(); st.TransactionsCommitted != 1 || st.TransactionsRolledBack != 1 {
		t.Fatalf("stats: %d committed, %d rolled back, want 1 and 1", st.TransactionsCommitted, st.TransactionsRolledBack)
	}
}

func TestTransactionChecks(t *testing.T) {
	e := txnEngine(t, &Options{TransactionTimeout: 50 * time.Millisecond, TransactionCheckInterval: 50 * time.Millisecond, TransactionCheckMax: 3, TransactionScanInterval: 10 * time.Millisecond})
	defer e.Close()
	ctx := context.Background()
	var mu sync.Mutex
	checks := map[string]int{}
	answers := map[string]Decision{"to-commit": Commit, "to-rollback": Rollback}
	e.SetTransactionChecker("test", func(ctx context.Context, p registry.ClientInfo, h HalfMessage) error {
		m, _, err := message.DecodeStored(h.Record)
		if err != nil || m.Topic != "T" {
			t.Errorf("check carries %v, %v", m, err)
			return err
		}
		mu.Lock()
		checks[string(m.Body)]++
		mu.Unlock()
		if d, ok := answers[string(m.Body)]; ok {
			go e.EndTransaction(context.Background(), EndTransactionRequest{ProducerGroup: h.ProducerGroup, CommitLogOffset: h.CommitLogOffset, QueueOffset: h.QueueOffset, Decision: d, FromCheck: true})
		}
		return nil
	})
	e.Clients().Heartbeat(registry.Heartbeat{Client: "producer-1", Protocol: "test", Conn: &testConn{"p1"}, Producers: []string{"PG"}})
	for _, b := range []string{"to-commit", "to-rollback", "silent"} {
		if _, err := e.Send(ctx, halfMsg(b)); err != nil {
			t.Fatal(err)
		}
	}
	got := waitMessages(t, e, "T", 0, 1, 5*time.Second)
	if string(got[0].Body) != "to-commit" {
		t.Fatalf("delivered %q", got[0].Body)
	}
	// The silent one is discarded after 3 checks and recorded.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if max, _ := e.MaxOffset(message.TopicTransCheckMaxTime, 0); max == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unanswered half message not discarded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if checks["silent"] != 3 {
		t.Fatalf("silent half message checked %d times, want 3", checks["silent"])
	}
	if checks["to-rollback"] < 1 {
		t.Fatal("to-rollback never checked")
	}
	if max, _ := e.MaxOffset("T", 0); max != 1 {
		t.Fatalf("queue holds %d", max)
	}
}

func TestMessageTypeCheck(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		typ  meta.MessageType
		m    *message.Message
		okay bool
	}{
		{meta.MessageTypeNormal, newMsg("N", "x"), true},
		{meta.MessageTypeNormal, newMsg("N", "x", message.PropertyDelayLevel, "1"), false},
		{meta.MessageTypeDelay, newMsg("D", "x", message.PropertyDelayLevel, "1"), true},
		{meta.MessageTypeDelay, newMsg("D", "x"), false},
		{meta.MessageTypeFIFO, newMsg("F", "x", message.PropertyShardingKey, "g"), true},
		{meta.MessageTypeFIFO, newMsg("F", "x"), false},
		{meta.MessageTypeTransaction, newMsg("X", "x", message.PropertyTransactionPrepared, "true", message.PropertyProducerGroup, "PG"), true},
		{meta.MessageTypeTransaction, newMsg("X", "x"), false},
		{meta.MessageTypeMixed, newMsg("M", "x", message.PropertyDelayLevel, "1"), true},
		{meta.MessageTypeUnspecified, newMsg("U", "x", message.PropertyShardingKey, "g"), true},
	} {
		e.CreateTopic(meta.Topic{Name: tt.m.Topic, ReadQueues: 1, WriteQueues: 1, MessageType: tt.typ})
		_, err := e.Send(ctx, tt.m)
		if tt.okay != (err == nil) || (err != nil && !errors.Is(err, ErrMessageTypeMismatch)) {
			t.Errorf("%s topic, props %v: %v", tt.typ, tt.m.Properties, err)
		}
	}
	if _, err := e.Send(ctx, newMsg("X", "x", message.PropertyTransactionPrepared, "true")); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("half message without a producer group: %v", err)
	}
}

func TestCommittedCopy(t *testing.T) {
	e := txnEngine(t, nil)
	defer e.Close()
	ctx := context.Background()
	m := halfMsg("body")
	m.Flag, m.ReconsumeTimes, m.BornTimestamp = 7, 2, 1_700_000_000_000
	m.BornHost = netip.MustParseAddrPort("[2001:db8::5]:4000")
	m.SetTags("TagA")
	m.SetProperty("custom", "x")
	res, err := e.Send(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: res.CommitLogOffset, QueueOffset: res.QueueOffset, Decision: Commit}); err != nil {
		t.Fatal(err)
	}
	got := pullAll(t, e, "T", 0, 0, nil)
	if len(got) != 1 {
		t.Fatalf("queue holds %d", len(got))
	}
	c := got[0]
	if c.Topic != "T" || c.QueueID != 0 || string(c.Body) != "body" || c.Flag != 7 || c.ReconsumeTimes != 2 ||
		c.BornTimestamp != m.BornTimestamp || c.BornHost != m.BornHost {
		t.Fatalf("committed copy %+v", c)
	}
	if message.TransactionType(c.SysFlag) != message.SysFlagTransactionCommit || c.PreparedTransactionOffset != res.CommitLogOffset {
		t.Fatalf("sysflag %#x, prepared offset %d (half at %d)", c.SysFlag, c.PreparedTransactionOffset, res.CommitLogOffset)
	}
	want := map[string]string{
		message.PropertyTags: "TagA", message.PropertyKeys: "k-body", "custom": "x",
		message.PropertyProducerGroup: "PG", message.PropertyUniqKey: res.MsgID,
		propertyTransactionSource: strconv.FormatInt(res.CommitLogOffset, 10),
	}
	if !maps.Equal(c.Properties, want) {
		t.Fatalf("properties %v, want %v", c.Properties, want)
	}
	byID, err := e.MessageByID(res.MsgID)
	if err != nil || byID.Topic != "T" || byID.CommitLogOffset != c.CommitLogOffset {
		t.Fatalf("by id: %+v, %v", byID, err)
	}
	byKey, err := e.MessagesByKey("T", "k-body", 0, time.Now().UnixMilli()+1000, 10)
	if err != nil || len(byKey) != 1 || byKey[0].CommitLogOffset != c.CommitLogOffset {
		t.Fatalf("by key: %v, %v", byKey, err)
	}
}

// A decision is refused while another one for the same half message is
// waiting to be indexed, and after it was.
func TestSecondDecisionRefused(t *testing.T) {
	e := txnEngine(t, nil)
	defer e.Close()
	ctx := context.Background()
	for i := range 200 {
		res, err := e.Send(ctx, halfMsg(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		first, second := Commit, Rollback
		if i%2 == 1 {
			first, second = second, first
		}
		req := EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: res.CommitLogOffset, QueueOffset: -1, Decision: first}
		if err := e.EndTransaction(ctx, req); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		req.Decision = second
		if err := e.EndTransaction(ctx, req); !errors.Is(err, ErrTransactionResolved) {
			t.Fatalf("%d: second decision: %v", i, err)
		}
	}
	if got := pullAll(t, e, "T", 0, 0, nil); len(got) != 100 {
		t.Fatalf("%d committed, want 100", len(got))
	}
	if pending, _ := e.halves.List(0, 10, nil); len(pending) != 0 {
		t.Fatalf("pending after every decision: %v", pending)
	}
}

// The index of half messages comes out the same whether a decision was
// indexed in the batch of its half message or in a later one, which a
// rebuild of the index from the log (one batch) and the engine's own
// indexing as it goes (many) exercise.
func TestTransactionIndexRebuilt(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, nil)
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	send := func(body string, props ...string) SendResult {
		t.Helper()
		m := halfMsg(body)
		for i := 0; i+1 < len(props); i += 2 {
			m.SetProperty(props[i], props[i+1])
		}
		res, err := e.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	decide := func(r SendResult, d Decision) {
		t.Helper()
		if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: r.CommitLogOffset, QueueOffset: -1, Decision: d}); err != nil {
			t.Fatal(err)
		}
	}
	h1 := send("h1", message.PropertyUniqKey, "DUP")
	h2 := send("h2", message.PropertyUniqKey, "DUP") // a producer's retry: same id
	decide(h1, Commit)
	h3 := send("h3")
	h4 := send("h4")
	decide(h4, Rollback)
	h5 := send("h5")
	e.WaitDispatched(ctx)

	check := func(when string) {
		t.Helper()
		pending, err := e.halves.List(0, 10, nil)
		if err != nil || !slices.Equal(pending, []int64{h2.CommitLogOffset, h3.CommitLogOffset, h5.CommitLogOffset}) {
			t.Fatalf("%s: pending %v, %v", when, pending, err)
		}
		for _, tt := range []struct {
			id, topic, body string
		}{
			{"DUP", "T", "h1"}, // the commit of h1 is the last record with that id
			{h3.MsgID, message.TopicTransHalf, "h3"},
			{h4.MsgID, message.TopicTransOpHalf, "h4"},
			{h5.MsgID, message.TopicTransHalf, "h5"},
		} {
			m, err := e.MessageByID(tt.id)
			if err != nil || m.Topic != tt.topic || string(m.Body) != tt.body {
				t.Fatalf("%s: by id %s: %v %v, want %s in %s", when, tt.id, m, err, tt.body, tt.topic)
			}
		}
		for _, half := range []SendResult{h2, h3, h5} {
			ent, ok, err := e.queues.Get(message.TopicTransHalf, 0, half.QueueOffset)
			if err != nil || !ok || ent.CommitLogOffset != half.CommitLogOffset {
				t.Fatalf("%s: half topic entry %d: %+v %v %v", when, half.QueueOffset, ent, ok, err)
			}
		}
	}
	check("indexed as sent")
	e.Close()
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, dir, nil)
	defer e.Close()
	check("rebuilt")
	// Decided at once, h1 and h4 need no entry in the half topic's queue.
	for _, half := range []SendResult{h1, h4} {
		if _, ok, _ := e.queues.Get(message.TopicTransHalf, 0, half.QueueOffset); ok {
			t.Fatalf("rebuilt index has a half topic entry for %d, decided in the same batch", half.QueueOffset)
		}
	}
	decide(h2, Commit)
	decide(h3, Rollback)
	decide(h5, Commit)
	if err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: h1.CommitLogOffset, QueueOffset: -1, Decision: Rollback}); !errors.Is(err, ErrTransactionResolved) {
		t.Fatalf("decision on h1 after the rebuild: %v", err)
	}
	var bodies []string
	for _, m := range pullAll(t, e, "T", 0, 0, nil) {
		bodies = append(bodies, string(m.Body))
	}
	if !slices.Equal(bodies, []string{"h1", "h2", "h5"}) {
		t.Fatalf("committed %v", bodies)
	}
}

// Decisions racing for the same half messages, while the index catches
// up, settle each exactly once.
func TestConcurrentDecisions(t *testing.T) {
	e := txnEngine(t, nil)
	defer e.Close()
	ctx := context.Background()
	const halves, deciders = 300, 4
	offs := make([]int64, halves)
	for i := range offs {
		res, err := e.Send(ctx, halfMsg(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		offs[i] = res.CommitLogOffset
	}
	var won [halves]atomic.Int32
	var wg sync.WaitGroup
	for g := range deciders {
		wg.Go(func() {
			for i, off := range offs {
				d := Commit
				if (i+g)%2 == 1 {
					d = Rollback
				}
				err := e.EndTransaction(ctx, EndTransactionRequest{ProducerGroup: "PG", CommitLogOffset: off, QueueOffset: -1, Decision: d})
				switch {
				case err == nil:
					won[i].Add(1)
				case !errors.Is(err, ErrTransactionResolved):
					t.Errorf("half %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	for i := range won {
		if n := won[i].Load(); n != 1 {
			t.Fatalf("half %d decided %d times", i, n)
		}
	}
	committed := len(pullAll(t, e, "T", 0, 0, nil))
	rolledBack := len(pullAll(t, e, message.TopicTransOpHalf, 0, 0, nil))
	if committed+rolledBack != halves {
		t.Fatalf("%d committed and %d rolled back, want %d in all", committed, rolledBack, halves)
	}
}

// A pending half message whose record retention deleted is retired, not
// looked for on every scan forever.
func TestHalfMessageDeletedByRetention(t *testing.T) {
	e := txnEngine(t, &Options{SegmentSize: 64 << 10, RetentionAge: time.Hour, TransactionScanInterval: time.Hour})
	defer e.Close()
	ctx := context.Background()
	half, err := e.Send(ctx, halfMsg("lost"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(bytes.Repeat([]byte("r"), 4000))
	for range 100 { // about 6 segments
		if _, err := e.Send(ctx, newMsg("T", body)); err != nil {
			t.Fatal(err)
		}
	}
	e.WaitDispatched(ctx)
	if removed, err := e.ApplyRetention(time.Now().Add(2 * time.Hour)); err != nil || removed == 0 {
		t.Fatalf("retention removed %d segments, %v", removed, err)
	}
	if pending, _ := e.halves.List(0, 10, nil); len(pending) != 1 || pending[0] != half.CommitLogOffset {
		t.Fatalf("pending half messages before the scan: %v", pending)
	}
	if err := e.checkTransactions(); err != nil {
		t.Fatal(err)
	}
	e.WaitDispatched(ctx)
	if pending, _ := e.halves.List(0, 10, nil); len(pending) != 0 {
		t.Fatalf("half messages still pending after the scan: %v", pending)
	}
	if max, _ := e.MaxOffset(message.TopicTransCheckMaxTime, 0); max != 1 {
		t.Fatalf("%d discard records, want 1", max)
	}
}

// TestMessageSizeHook: Options.MessageSize hears each stored message of
// Send and SendBatch, and nothing of a refused send.
func TestMessageSizeHook(t *testing.T) {
	type obs struct {
		topic string
		size  int
	}
	var (
		mu  sync.Mutex
		got []obs
	)
	e := txnEngine(t, &Options{MessageSize: func(topic string, n int) {
		mu.Lock()
		got = append(got, obs{topic, n})
		mu.Unlock()
	}})
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Send(ctx, &message.Message{Topic: "T", Body: []byte("12345")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SendBatch(ctx, []*message.Message{{Topic: "T", Body: []byte("ab")}, {Topic: "T", Body: []byte("abc")}}, AnyQueue); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Send(ctx, &message.Message{Topic: "missing", Body: []byte("x")}); err == nil {
		t.Fatal("a send to a missing topic was stored")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []obs{{"T", 5}, {"T", 2}, {"T", 3}}; !slices.Equal(got, want) {
		t.Fatalf("MessageSize heard %v, want %v", got, want)
	}
}
