package engine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/karmanmq/karman/engine/message"
)

// prefixRouter routes a record to %LMQ%<p> for every registered p that
// its topic + "/" + tags starts with, and reads its prefixes from State.
type prefixRouter struct {
	mu       sync.Mutex
	prefixes []string
	seen     int
	loaded   bool
}

func (r *prefixRouter) LoadRoutes(e *Engine) error {
	r.loaded = true
	return e.State("routes").Scan("", func(k string, _ []byte) error {
		r.prefixes = append(r.prefixes, k)
		return nil
	})
}

func (r *prefixRouter) Route(rec *RouteRecord, dst []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen++
	name := string(rec.Topic) + "/" + string(rec.Tags)
	if v, ok := rec.Property("origin"); ok {
		name = string(v)
	}
	for _, p := range r.prefixes {
		if strings.HasPrefix(name, p) {
			dst = append(dst, LightQueuePrefix+p)
		}
	}
	return append(dst, "not-a-light-queue")
}

func (r *prefixRouter) add(p string) {
	r.mu.Lock()
	r.prefixes = append(r.prefixes, p)
	r.mu.Unlock()
}

func TestRouter(t *testing.T) {
	dir := t.TempDir()
	r := &prefixRouter{}
	e := openTest(t, dir, &Options{Router: r})
	if !r.loaded {
		t.Fatal("LoadRoutes was not called")
	}
	mustTopic(t, e, "dev", 2)
	r.add("dev/a")
	r.add("dev/")
	ctx := context.Background()
	send := func(m *message.Message) {
		t.Helper()
		if _, err := e.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	m := newMsg("dev", "1")
	m.SetTags("a1")
	send(m)
	m = newMsg("dev", "2")
	m.SetTags("b")
	send(m)
	send(newMsg("dev", "3", "origin", "dev/a/x", message.PropertyInnerMultiDispatch, "%LMQ%own"))

	want := map[string]string{"%LMQ%dev/a": "1,3", "%LMQ%dev/": "1,2,3", "%LMQ%own": "3"}
	check := func(e *Engine) {
		t.Helper()
		for q, bodies := range want {
			var got []string
			for _, m := range pullAll(t, e, q, 0, 0, nil) {
				got = append(got, string(m.Body))
			}
			if strings.Join(got, ",") != bodies {
				t.Errorf("%s holds %v, want %s", q, got, bodies)
			}
		}
		if n, err := e.MaxOffset(LightQueuePrefix+"dev/b", 0); err == nil && n != 0 {
			t.Errorf("an unrouted light queue holds %d", n)
		}
	}
	check(e)
	if r.seen != 3 {
		t.Errorf("router saw %d records, want 3", r.seen)
	}
	e.Close()

	// Without its router, a reopened engine keeps what was indexed and
	// routes nothing new.
	e = openTest(t, dir, nil)
	send(newMsg("dev", "4", "origin", "dev/a"))
	check(e)
	e.Close()
}

// TestRouterAtReplay checks that records appended but not indexed before
// a crash are routed when the log is replayed, by routes loaded from
// State before the replay.
func TestRouterAtReplay(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, nil)
	mustTopic(t, e, "dev", 1)
	if err := e.State("routes").Put("dev/a", nil); err != nil {
		t.Fatal(err)
	}
	e.Close()
	// Records appended by an engine without the router stand for records
	// the crashed engine had appended but not indexed: wipe the index so
	// that the next Open replays them.
	e = openTest(t, dir, nil)
	m := newMsg("dev", "x")
	m.SetTags("a")
	if _, err := e.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.disp.wipe(); err != nil {
		t.Fatal(err)
	}
	e.Close()

	r := &prefixRouter{}
	e = openTest(t, dir, &Options{Router: r})
	defer e.Close()
	got := pullAll(t, e, "%LMQ%dev/a", 0, 0, nil)
	if len(got) != 1 || string(got[0].Body) != "x" {
		t.Fatalf("after replay the routed queue holds %d messages", len(got))
	}
}
