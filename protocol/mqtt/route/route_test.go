package route

import (
	"context"
	"strings"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
)

func queueBodies(t *testing.T, e *engine.Engine, filter string) []string {
	t.Helper()
	ctx := context.Background()
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := e.Pull(ctx, QueueName(filter), 0, 0, 32, nil)
	if err != nil {
		return nil
	}
	defer res.Release()
	var out []string
	for _, r := range res.Records {
		m, _, err := message.DecodeStored(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(m.Body))
	}
	return out
}

func TestRouter(t *testing.T) {
	dir := t.TempDir()
	r := New()
	e, err := engine.Open(dir, &engine.Options{Router: r, SegmentSize: 1 << 20, AutoCreateTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"dev/+/temp", "dev/#", "#", "other"} {
		if _, err := r.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	r.Add("other") // two holders
	ctx := context.Background()
	send := func(topic, tag, origin, body string) {
		t.Helper()
		m := &message.Message{Topic: topic, Body: []byte(body)}
		if tag != "" {
			m.SetTags(tag)
		}
		if origin != "" {
			m.SetProperty(mapping.PropOriginTopic, origin)
		}
		if _, err := e.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	send("dev", "d1/temp", "", "1")      // a RocketMQ producer with a tag
	send("dev", "x", "dev/d2/temp", "2") // an MQTT publish: origin wins
	send("dev", "", "", "3")             // untagged: "dev"
	send("other", "", "", "4")
	want := map[string]string{"dev/+/temp": "1,2", "dev/#": "1,2,3", "#": "1,2,3,4", "other": "4"}
	check := func() {
		t.Helper()
		for f, w := range want {
			got := strings.Join(queueBodies(t, e, f), ",")
			if got != w {
				t.Errorf("%s: %q, want %q", f, got, w)
			}
		}
	}
	check()
	if err := r.Release("other"); err != nil {
		t.Fatal(err)
	}
	if err := r.Release("dev/#"); err != nil {
		t.Fatal(err)
	}
	send("other", "", "", "5")
	send("dev", "", "", "6")
	want["other"] = "4,5"
	want["#"] = "1,2,3,4,5,6"
	check()
	e.Close()

	// The filters survive a restart; Sweep drops those nobody re-adds.
	r = New()
	e, err = engine.Open(dir, &engine.Options{Router: r, SegmentSize: 1 << 20, AutoCreateTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := r.Filters(); n != 3 {
		t.Fatalf("%d filters after restart, want 3", n)
	}
	r.Add("#")
	if err := r.Sweep(); err != nil {
		t.Fatal(err)
	}
	if n := r.Filters(); n != 1 {
		t.Fatalf("%d filters after Sweep, want 1", n)
	}
	send("dev", "d1/temp", "", "7")
	want = map[string]string{"#": "1,2,3,4,5,6,7", "dev/+/temp": "1,2"}
	check()
}

// TestRouteCache routes MQTT records of the same topics again and again
// while filters come and go: each record reaches the filters subscribed
// when it is indexed, whatever the records of its topic before it did.
func TestRouteCache(t *testing.T) {
	r := New()
	e, err := engine.Open(t.TempDir(), &engine.Options{Router: r, SegmentSize: 1 << 20, AutoCreateTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	publish := func(origin string, bodies ...string) {
		t.Helper()
		for _, b := range bodies {
			m := &message.Message{Topic: "a", Body: []byte(b)}
			m.SetProperty(mapping.PropOriginTopic, origin)
			if _, err := e.Send(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.WaitDispatched(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string, want map[string]string) {
		t.Helper()
		for f, w := range want {
			got := strings.Join(queueBodies(t, e, f), ",")
			if got != w {
				t.Errorf("%s: %s holds %q, want %q", stage, f, got, w)
			}
		}
	}
	if _, err := r.Add("a/#"); err != nil {
		t.Fatal(err)
	}
	publish("a/b", "1", "2")
	publish("a/c", "3")
	if _, err := r.Add("a/b"); err != nil {
		t.Fatal(err)
	}
	publish("a/b", "4", "5")
	check("added", map[string]string{"a/#": "1,2,3,4,5", "a/b": "4,5"})
	if err := r.Release("a/#"); err != nil {
		t.Fatal(err)
	}
	publish("a/b", "6")
	publish("a/c", "7")
	check("released", map[string]string{"a/#": "1,2,3,4,5", "a/b": "4,5,6"})
	if _, err := r.Add("+/c"); err != nil {
		t.Fatal(err)
	}
	publish("a/c", "8")
	check("added again", map[string]string{"+/c": "8", "a/b": "4,5,6"})
}
