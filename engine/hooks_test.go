package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// storeFunc and deliverFunc adapt functions to the hook interfaces.
type storeFunc func(context.Context, *hook.StoreBatch) error

func (f storeFunc) BeforeStore(ctx context.Context, b *hook.StoreBatch) error { return f(ctx, b) }

type deliverFunc func(context.Context, *hook.DeliverBatch) error

func (f deliverFunc) BeforeDeliver(ctx context.Context, b *hook.DeliverBatch) error { return f(ctx, b) }

// bothHook implements both hook interfaces.
type bothHook struct {
	storeFunc
	deliverFunc
}

func TestHooksValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hooks []any
		ok    bool
	}{
		{"none", nil, true},
		{"store", []any{storeFunc(nil)}, true},
		{"deliver", []any{deliverFunc(nil)}, true},
		{"both in one", []any{bothHook{}}, true},
		{"not a hook", []any{storeFunc(nil), "hello"}, false},
		{"nil", []any{nil}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(t.TempDir(), &Options{SegmentSize: 1 << 20, Hooks: tc.hooks})
			if tc.ok && err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "hook 1") && !strings.Contains(err.Error(), "hook 0")) {
				t.Fatalf("Open with %v: %v, want an error naming the hook", tc.hooks, err)
			}
		})
	}
	e, err := Open(t.TempDir(), &Options{SegmentSize: 1 << 20, Hooks: []any{bothHook{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(e.hooks.Store) != 1 || len(e.hooks.Deliver) != 1 {
		t.Fatalf("a value implementing both kinds is installed as %d store and %d delivery hooks", len(e.hooks.Store), len(e.hooks.Deliver))
	}
}

func TestStoreHooksChangeProperties(t *testing.T) {
	var (
		mu    sync.Mutex
		calls []string // hook name and batch size, in call order
	)
	note := func(s string) { mu.Lock(); calls = append(calls, s); mu.Unlock() }
	first := storeFunc(func(ctx context.Context, b *hook.StoreBatch) error {
		note(fmt.Sprintf("first %d %s/%d %s", len(b.Messages), b.Topic, b.Queue, b.Client.ID))
		for _, m := range b.Messages {
			m.SetProperty("stamp", "1")
			m.SetTags("rewritten")
			m.SetKeys([]string{"k-" + string(m.Body)})
			m.Topic = "Elsewhere"      // ignored
			m.Body = []byte("changed") // ignored
		}
		return nil
	})
	second := storeFunc(func(ctx context.Context, b *hook.StoreBatch) error {
		note(fmt.Sprintf("second %d", len(b.Messages)))
		for _, m := range b.Messages {
			m.SetProperty("stamp", m.Property("stamp")+"2") // sees the first's change
		}
		return nil
	})
	e := openTest(t, t.TempDir(), &Options{Hooks: []any{first, second}, AutoCreateGroups: true})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := hook.NewContext(context.Background(), &hook.Client{Protocol: "test", ID: "c1"})

	single := newMsg("T", "one", message.PropertyTags, "orig")
	if _, err := e.Send(ctx, single); err != nil {
		t.Fatal(err)
	}
	// A front-end's message: properties still encoded.
	encoded := &message.Message{Topic: "T", Body: []byte("two"), EncodedProperties: message.AppendProperties(nil, map[string]string{"x": "y"})}
	batch := []*message.Message{encoded, newMsg("T", "three")}
	if _, err := e.SendBatch(ctx, batch, 0); err != nil {
		t.Fatal(err)
	}
	want := []string{"first 1 T/-1 c1", "second 1", "first 2 T/0 c1", "second 2"}
	if !slices.Equal(calls, want) {
		t.Fatalf("hook calls %q, want %q", calls, want)
	}
	if single.Tags() != "orig" || single.Property("stamp") != "" || encoded.Properties != nil {
		t.Fatalf("the sender's messages were modified: %v, %v", single.Properties, encoded.Properties)
	}

	check := func(how string, m *message.Message, body string) {
		t.Helper()
		if m.Topic != "T" || string(m.Body) != body || m.Property("stamp") != "12" || m.Tags() != "rewritten" || !slices.Equal(m.Keys(), []string{"k-" + body}) {
			t.Fatalf("%s: got %s %q props %v", how, m.Topic, m.Body, m.Properties)
		}
	}
	bodies := []string{"one", "two", "three"}
	tagFilter := func(expr string) Filter {
		f, err := TagFilter(expr)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	got := pullAll(t, e, "T", 0, 0, tagFilter("rewritten"))
	if len(got) != 3 {
		t.Fatalf("pull with the hook's tag got %d messages", len(got))
	}
	for i, m := range got {
		check("pull", m, bodies[i])
	}
	if m := got[1]; m.Property("x") != "y" {
		t.Fatalf("encoded properties lost: %v", m.Properties)
	}
	if n := len(pullAll(t, e, "T", 0, 0, tagFilter("orig"))); n != 0 {
		t.Fatalf("the old tag still matches %d messages", n)
	}
	popped, err := e.Pop(context.Background(), PopOptions{Group: "G", Topic: "T", Max: 32})
	if err != nil || len(popped) != 3 {
		t.Fatalf("pop: %d messages, %v", len(popped), err)
	}
	for i, p := range popped {
		m, _, err := message.DecodeStored(p.Record)
		if err != nil {
			t.Fatal(err)
		}
		check("pop", m, bodies[i])
	}
	if found, err := e.MessagesByKey("T", "k-two", 0, time.Now().Add(time.Minute).UnixMilli(), 10); err != nil || len(found) != 1 {
		t.Fatalf("key the hook set: %d found, %v", len(found), err)
	}
}

func TestStoreHookRejects(t *testing.T) {
	var calls int
	deny := storeFunc(func(ctx context.Context, b *hook.StoreBatch) error {
		calls++
		for _, m := range b.Messages {
			if m.Property("tenant") == "" {
				return hook.Reject("message without a tenant")
			}
		}
		return nil
	})
	never := storeFunc(func(_ context.Context, b *hook.StoreBatch) error {
		for _, m := range b.Messages {
			if m.Property("tenant") == "" {
				t.Error("a hook after the rejecting one ran")
			}
		}
		return nil
	})
	e := openTest(t, t.TempDir(), &Options{Hooks: []any{deny, never}, AutoCreateTopics: true})
	defer e.Close()
	mustTopic(t, e, "T", 2)
	ctx := context.Background()
	_, end := e.LogRange()

	batch := []*message.Message{newMsg("T", "a", "tenant", "t1"), newMsg("T", "b")}
	_, err := e.SendBatch(ctx, batch, AnyQueue)
	var rej *hook.RejectError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &rej) || rej.Reason != "message without a tenant" || !strings.Contains(err.Error(), "message without a tenant") {
		t.Fatalf("rejected batch: %v", err)
	}
	if errors.Is(err, ErrHookFailed) {
		t.Fatalf("a rejection matches ErrHookFailed: %v", err)
	}
	// A rejected send to an unknown topic creates nothing.
	if _, err := e.Send(ctx, newMsg("Unknown", "c")); !errors.Is(err, ErrRejected) {
		t.Fatalf("send to an unknown topic: %v", err)
	}
	if _, err := e.Topic("Unknown"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("a rejected send created its topic: %v", err)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	if _, now := e.LogRange(); now != end {
		t.Fatalf("the log grew from %d to %d on rejected sends", end, now)
	}
	for q := range int32(2) {
		if max, _ := e.MaxOffset("T", q); max != 0 {
			t.Fatalf("queue %d holds %d messages after a rejection", q, max)
		}
	}
	if _, err := e.Send(ctx, newMsg("T", "d", "tenant", "t1")); err != nil {
		t.Fatalf("accepted send: %v", err)
	}
	if calls != 3 {
		t.Fatalf("the hook ran %d times for 3 sends", calls)
	}
}

func TestStoreHookFails(t *testing.T) {
	boom := errors.New("plugin unreachable")
	e := openTest(t, t.TempDir(), &Options{Hooks: []any{storeFunc(func(context.Context, *hook.StoreBatch) error { return boom })}})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	_, err := e.Send(context.Background(), newMsg("T", "a"))
	if !errors.Is(err, ErrHookFailed) || !errors.Is(err, boom) || errors.Is(err, ErrRejected) {
		t.Fatalf("failing hook: %v", err)
	}
	if max, _ := e.MaxOffset("T", 0); max != 0 {
		t.Fatalf("stored %d messages past a failing hook", max)
	}
	// A hook that returns because the caller gave up reports the caller's
	// error, not a failure of its own.
	ctx, cancel := context.WithCancel(context.Background())
	e2 := openTest(t, t.TempDir(), &Options{Hooks: []any{storeFunc(func(ctx context.Context, _ *hook.StoreBatch) error {
		cancel()
		return ctx.Err()
	})}})
	defer e2.Close()
	mustTopic(t, e2, "T", 1)
	if _, err := e2.Send(ctx, newMsg("T", "a")); !errors.Is(err, context.Canceled) || errors.Is(err, ErrHookFailed) {
		t.Fatalf("cancelled send: %v", err)
	}
}

// dropSecret drops the messages with a "secret" property and notes the
// batches it saw.
type dropSecret struct {
	mu      sync.Mutex
	batches []string
}

func (d *dropSecret) BeforeDeliver(_ context.Context, b *hook.DeliverBatch) error {
	d.mu.Lock()
	d.batches = append(d.batches, fmt.Sprintf("%s/%d %s %s n=%d", b.Topic, b.Queue, b.Group, b.Client.ID, len(b.Messages)))
	d.mu.Unlock()
	for i, m := range b.Messages {
		if m.Property("secret") != "" {
			b.Drop(i)
		}
	}
	return nil
}

func TestDeliverHookDropsFromPull(t *testing.T) {
	d := &dropSecret{}
	e := openTest(t, t.TempDir(), &Options{Hooks: []any{d}})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	bg := context.Background()
	for i := range 10 {
		var props []string
		if i%3 == 0 {
			props = []string{"secret", "yes"}
		}
		if _, err := e.SendToQueue(bg, newMsg("T", fmt.Sprintf("m%d", i), props...), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(bg); err != nil {
		t.Fatal(err)
	}
	ctx := hook.NewContext(bg, &hook.Client{ID: "c1", Group: "G"})
	res, err := e.Pull(ctx, "T", 0, 0, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var joined []byte
	for _, rec := range res.Records {
		m, _, err := message.DecodeStored(rec)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m.Body))
		joined = append(joined, rec...)
	}
	if want := []string{"m1", "m2", "m4", "m5", "m7", "m8"}; !slices.Equal(got, want) {
		t.Fatalf("pulled %q, want %q", got, want)
	}
	if res.NextOffset != 10 {
		t.Fatalf("next offset %d, want 10: dropped messages must be passed", res.NextOffset)
	}
	if !bytes.Equal(res.Bytes(), joined) {
		t.Fatalf("Bytes() is not the kept records back to back (%d bytes, want %d)", len(res.Bytes()), len(joined))
	}
	res.Release()
	if want := []string{"T/0 G c1 n=10"}; !slices.Equal(d.batches, want) {
		t.Fatalf("hook saw %q, want %q", d.batches, want)
	}
	res, err = e.Pull(ctx, "T", 0, 8, 1, nil)
	if err != nil || len(res.Records) != 1 || res.NextOffset != 9 {
		t.Fatalf("pull of a kept message: %v, %d records, next %d", err, len(res.Records), res.NextOffset)
	}
	// Everything dropped: an empty pull that still moves on.
	res, err = e.Pull(ctx, "T", 0, 0, 1, nil)
	if err != nil || len(res.Records) != 0 || res.NextOffset != 1 {
		t.Fatalf("pull of a dropped message: %v, %d records, next %d", err, len(res.Records), res.NextOffset)
	}
}

func TestDeliverHookDropsFromPop(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			d := &dropSecret{}
			e := openTest(t, t.TempDir(), &Options{Hooks: []any{d}})
			defer e.Close()
			mustTopic(t, e, "T", 1)
			if _, _, err := e.meta.CreateGroup(meta.Group{Name: "G", FIFO: fifo}); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i := range 10 {
				props := []string{message.PropertyShardingKey, fmt.Sprintf("g%d", i)}
				if i%3 == 0 {
					props = append(props, "secret", "yes")
				}
				if _, err := e.SendToQueue(ctx, newMsg("T", fmt.Sprintf("m%d", i), props...), 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.WaitDispatched(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"m1", "m2", "m4", "m5", "m7", "m8"}; !slices.Equal(bodies(t, got), want) {
				t.Fatalf("popped %q, want %q", bodies(t, got), want)
			}
			for _, p := range got {
				if err := e.Ack(ctx, "G", p.Handle); err != nil {
					t.Fatal(err)
				}
			}
			// The dropped messages were finished with the pop: once the
			// delivered ones are acknowledged, the whole queue is done and
			// nothing is in flight to come back.
			v, _ := e.pops.Load(popKey{"G", "T", 0})
			pq := v.(*popQueue)
			pq.mu.Lock()
			acked, inflight := pq.st.AckedBelow, len(pq.st.Inflight)
			pq.mu.Unlock()
			if acked != 10 || inflight != 0 {
				t.Fatalf("after acking what was delivered: acked below %d, %d in flight; want 10 and 0", acked, inflight)
			}
			if len(d.batches) != 1 || d.batches[0] != "T/0 G  n=10" {
				t.Fatalf("hook saw %q", d.batches)
			}
		})
	}
}

func TestDeliverHookFailureHandsPopsBack(t *testing.T) {
	var fail, reject bool
	var mu sync.Mutex
	h := deliverFunc(func(context.Context, *hook.DeliverBatch) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case reject:
			return hook.Reject("group G may not read T")
		case fail:
			return errors.New("plugin down")
		}
		return nil
	})
	e := openTest(t, t.TempDir(), &Options{Hooks: []any{h}, AutoCreateGroups: true})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	for i := range 3 {
		if _, err := e.Send(ctx, newMsg("T", fmt.Sprintf("m%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	set := func(f, r bool) { mu.Lock(); fail, reject = f, r; mu.Unlock() }

	set(true, false)
	got, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Hour})
	if !errors.Is(err, ErrHookFailed) || len(got) != 0 {
		t.Fatalf("pop past a failing hook: %d messages, %v", len(got), err)
	}
	set(false, true)
	if _, err := e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Hour}); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "may not read") {
		t.Fatalf("pop past a rejecting hook: %v", err)
	}
	if _, err := e.Pull(ctx, "T", 0, 0, 32, nil); !errors.Is(err, ErrRejected) {
		t.Fatalf("pull past a rejecting hook: %v", err)
	}
	// Handed back: visible at once (the invisible time was an hour), and
	// still the first attempt.
	set(false, false)
	got, err = e.Pop(ctx, PopOptions{Group: "G", Topic: "T", Max: 32, Invisible: time.Hour})
	if err != nil || !slices.Equal(bodies(t, got), []string{"m0", "m1", "m2"}) {
		t.Fatalf("pop after the hook recovered: %q, %v", bodies(t, got), err)
	}
	for _, p := range got {
		if p.Attempt != 1 {
			t.Fatalf("%d: attempt %d after failed deliveries, want 1", p.Offset, p.Attempt)
		}
	}
}

// TestHooksConcurrent sends and pops from several goroutines through a
// store hook and a delivery hook (run it with -race): every message
// stored carries the store hook's property, and every message the
// delivery hook keeps is delivered once.
func TestHooksConcurrent(t *testing.T) {
	stamp := storeFunc(func(_ context.Context, b *hook.StoreBatch) error {
		for _, m := range b.Messages {
			m.SetProperty("stamped", "yes")
			if m.Property("n") != "" && m.Property("n")[len(m.Property("n"))-1] == '0' {
				m.SetProperty("secret", "yes") // every tenth
			}
		}
		return nil
	})
	e := openTest(t, t.TempDir(), &Options{Hooks: []any{stamp, &dropSecret{}}, AutoCreateGroups: true})
	defer e.Close()
	mustTopic(t, e, "T", 4)
	ctx := context.Background()
	const senders, each = 4, 50
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := e.Send(ctx, newMsg("T", fmt.Sprintf("s%d-%d", s, i), "n", fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
	)
	want := senders * each * 9 / 10
	ctx2, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n >= want || ctx2.Err() != nil {
					return
				}
				got, err := e.Pop(ctx2, PopOptions{Group: "G", Topic: "T", Max: 16, Wait: 50 * time.Millisecond, Invisible: time.Minute})
				if err != nil && ctx2.Err() == nil {
					t.Error(err)
					return
				}
				for _, p := range got {
					m, _, err := message.DecodeStored(p.Record)
					if err != nil || m.Property("stamped") != "yes" || m.Property("secret") != "" {
						t.Errorf("popped %v: %v", m, err)
						return
					}
					mu.Lock()
					seen[string(m.Body)]++
					mu.Unlock()
					if err := e.Ack(ctx, "G", p.Handle); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != want {
		t.Fatalf("%d distinct messages delivered, want %d", len(seen), want)
	}
	for body, n := range seen {
		if n != 1 {
			t.Fatalf("%s delivered %d times", body, n)
		}
	}
}

// TestStoreHookSeesEncodedProperties: a front-end's encoded properties
// reach a store hook still encoded, readable through the accessors, and
// a message whose properties no hook touched is stored with them.
func TestStoreHookSeesEncodedProperties(t *testing.T) {
	var encodedSeen, valueSeen bool
	look := storeFunc(func(ctx context.Context, b *hook.StoreBatch) error {
		m := b.Messages[0]
		encodedSeen = m.Properties == nil && len(m.EncodedProperties) > 0
		valueSeen = m.Property("x") == "y"
		return nil
	})
	e := openTest(t, t.TempDir(), &Options{Hooks: []any{look}})
	defer e.Close()
	mustTopic(t, e, "T", 1)
	m := &message.Message{Topic: "T", Body: []byte("b"), EncodedProperties: message.AppendProperties(nil, map[string]string{"x": "y"})}
	if _, err := e.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if !encodedSeen || !valueSeen {
		t.Fatalf("hook saw encoded properties %v, x=y %v", encodedSeen, valueSeen)
	}
	got := pullAll(t, e, "T", 0, 0, nil)
	if len(got) != 1 || got[0].Property("x") != "y" {
		t.Fatalf("stored %d messages, x=%q", len(got), got[0].Property("x"))
	}
}
