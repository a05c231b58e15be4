package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
)

// receiver is a webhook endpoint that records the bodies it got and
// fails the first failFirst posts with a 500.
type receiver struct {
	mu        sync.Mutex
	got       map[string]int // body → times received
	posts     int
	failFirst int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var p struct {
		Messages []struct {
			Topic string `json:"topic"`
			Body  []byte `json:"body"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if r.posts <= r.failFirst {
		http.Error(w, "not yet", http.StatusInternalServerError)
		return
	}
	for _, m := range p.Messages {
		if m.Topic != "T" {
			http.Error(w, "topic "+m.Topic, http.StatusBadRequest)
			return
		}
		r.got[string(m.Body)]++
	}
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func sendN(t *testing.T, e *engine.Engine, from, n int) {
	t.Helper()
	for i := from; i < from+n; i += 10 {
		batch := make([]*message.Message, 0, 10)
		for j := i; j < i+10 && j < from+n; j++ {
			batch = append(batch, msg(fmt.Sprintf("m%03d", j)))
		}
		if _, err := e.SendBatch(context.Background(), batch, engine.AnyQueue); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWebhookSinkResumes runs the webhook sink, restarts the engine and
// the plugin in between, and checks that every message reached the
// endpoint at least once and none was skipped.
func TestWebhookSinkResumes(t *testing.T) {
	r := &receiver{got: map[string]int{}, failFirst: 2}
	srv := httptest.NewServer(r)
	defer srv.Close()
	dir := t.TempDir()
	spec := "hook=" + program("webhook") + ",url=" + srv.URL + ",retries=1"
	opts := Options{SinkBatch: 16, RestartMin: 10 * time.Millisecond, RestartMax: 100 * time.Millisecond}
	ctx := context.Background()

	run := func(from, n, want int) {
		p := load(t, spec, opts)
		if len(p.Connectors()) != 1 || p.Connectors()[0].Kind() != KindSink || len(p.Hooks()) != 0 {
			t.Fatalf("connectors %v, hooks %d; want one sink", p.Connectors(), len(p.Hooks()))
		}
		e, err := engine.Open(dir, &engine.Options{AutoCreateTopics: true})
		if err != nil {
			t.Fatal(err)
		}
		sendN(t, e, from, n/2)
		if err := p.Connectors()[0].Start(ctx, e); err != nil {
			t.Fatal(err)
		}
		sendN(t, e, from+n/2, n-n/2)
		eventually(t, 20*time.Second, fmt.Sprintf("the endpoint has not got %d messages", want), func() bool { return r.count() == want })
		p.Close()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run(0, 100, 100)
	pos, err := os.ReadFile(PositionFile(dir, "hook"))
	if err != nil || strings.TrimSpace(string(pos)) == "0" {
		t.Fatalf("position file %q, %v; want a position past the first run", pos, err)
	}
	// While the broker is down more messages come; the sink resumes
	// from its stored position.
	run(100, 100, 200)
	for i := range 200 {
		if r.got[fmt.Sprintf("m%03d", i)] == 0 {
			t.Fatalf("m%03d never delivered", i)
		}
	}
	dups := 0
	for _, n := range r.got {
		dups += n - 1
	}
	t.Logf("%d posts, %d duplicates", r.posts, dups)
}

// TestWebhookSinkPluginKilled kills the sink's process mid-stream: the
// host restarts it and hands the unacknowledged batch again.
func TestWebhookSinkPluginKilled(t *testing.T) {
	var mu sync.Mutex
	got := map[string]bool{}
	block := make(chan struct{})
	var first atomic.Bool
	entered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p struct{ Messages []struct{ Body []byte } }
		json.NewDecoder(req.Body).Decode(&p)
		if len(p.Messages) > 0 && string(p.Messages[0].Body) == "m050" {
			if first.CompareAndSwap(false, true) { // the first post of m050 hangs until the kill
				close(entered)
				<-block
			}
		}
		mu.Lock()
		for _, m := range p.Messages {
			got[string(m.Body)] = true
		}
		mu.Unlock()
	}))
	defer srv.Close()
	defer close(block)
	p := load(t, "hook="+program("webhook")+",url="+srv.URL+",timeout=30s", Options{Logger: testLogger(t), SinkBatch: 10, CallTimeout: 30 * time.Second, RestartMin: 10 * time.Millisecond})
	e, err := engine.Open(t.TempDir(), &engine.Options{AutoCreateTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := p.Connectors()[0].Start(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	sendN(t, e, 0, 100)
	<-entered
	if err := killPID(p.pid()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "not every message delivered after the kill", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 100
	})
	if st := p.Stats(); st.Restarts < 1 {
		t.Fatalf("stats %+v; want a restart", st)
	}
}

func TestFileSource(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		f, err := os.OpenFile(filepath.Join(in, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	write("a.log", "a1\na2\n")
	write("b.log", "b1\nb2 partial")
	spec := "files=" + program("filesource") + ",path=" + in + ",topic=T,poll=20ms"
	e := openEngine(t, filepath.Join(dir, "data"), nil)
	bodies := func() string {
		var s []string
		for _, m := range pullAll(t, e) {
			s = append(s, m.Property("file")+":"+string(m.Body))
		}
		return strings.Join(s, " ")
	}
	p := load(t, spec, Options{SourceWait: 100 * time.Millisecond})
	if len(p.Connectors()) != 1 || p.Connectors()[0].Kind() != KindSource {
		t.Fatalf("connectors %v; want one source", p.Connectors())
	}
	if err := p.Connectors()[0].Start(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	want := "a.log:a1 a.log:a2 b.log:b1"
	eventually(t, 10*time.Second, "lines not sent", func() bool { return bodies() == want })
	write("b.log", " done\n")
	write("a.log", "a3\n")
	want += " a.log:a3 b.log:b2 partial done"
	eventually(t, 10*time.Second, "appended lines not sent", func() bool { return bodies() == want })
	p.Close()

	// A new process goes on from the acknowledged position.
	write("c.log", "c1\n")
	p = load(t, spec, Options{SourceWait: 100 * time.Millisecond})
	if err := p.Connectors()[0].Start(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	// At least once: the batch stored just before the old process was
	// closed may come again if its acknowledgement did not reach the
	// plugin; nothing older may, and nothing may be missing.
	lastBatch := []string{"a.log:a3", "b.log:b2 partial done"}
	want += " c.log:c1"
	var got []string
	eventually(t, 10*time.Second, "lines after the restart not sent", func() bool {
		got = nil
		for _, m := range pullAll(t, e) {
			got = append(got, m.Property("file")+":"+string(m.Body))
		}
		return len(got) > 0 && got[len(got)-1] == "c.log:c1"
	})
	seen := map[string]bool{}
	var firsts []string
	for _, b := range got {
		if seen[b] && !slices.Contains(lastBatch, b) {
			t.Fatalf("stored %q: %q twice, and it was acknowledged before the restart", got, b)
		}
		if !seen[b] {
			firsts = append(firsts, b)
		}
		seen[b] = true
	}
	if strings.Join(firsts, " ") != want {
		t.Fatalf("stored %q; want %q (repeats of the last batch allowed)", got, want)
	}
}

func TestHeaderAuth(t *testing.T) {
	p := load(t, "auth="+program("headerauth")+",header=token,allow=s3cret+other", Options{RestartMin: 10 * time.Millisecond})
	e := openEngine(t, t.TempDir(), p.Hooks())
	ctx := context.Background()
	for _, tc := range []struct {
		m    *message.Message
		want string // "" to succeed, else part of the rejection
	}{
		{msg("x"), "no token"},
		{msg("x", "token", "guess"), "not allowed"},
		{msg("x", "token", "s3cret"), ""},
		{msg("x", "token", "other"), ""},
	} {
		_, err := e.Send(ctx, tc.m)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("send with %v: %v", tc.m.Properties, err)
		case tc.want != "" && (!errors.Is(err, engine.ErrRejected) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("send with %v: %v; want a rejection with %q", tc.m.Properties, err, tc.want)
		}
	}
	if n := len(pullAll(t, e)); n != 2 {
		t.Fatalf("stored %d messages; want 2", n)
	}
}

func TestHeaderAuthAuthenticateAuthorize(t *testing.T) {
	p := load(t, "auth="+program("headerauth")+",allow=s3cret,topics=T", Options{RestartMin: 10 * time.Millisecond})
	set, err := hook.Sort(p.Hooks())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Authenticators) != 1 || len(set.Authorizers) != 1 || len(set.Store) != 1 {
		t.Fatalf("hooks %+v; want an authenticator, an authorizer and a store hook", set)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		fields map[string]string
		want   error
	}{
		{map[string]string{"token": "s3cret"}, nil},
		{map[string]string{"token": "guess"}, hook.ErrUnauthenticated},
		{nil, hook.ErrUnauthenticated},
	} {
		pr, err := set.Authenticate(ctx, &hook.Credentials{Protocol: "remoting", Fields: tc.fields})
		if !errors.Is(err, tc.want) || tc.want == nil && pr.Name != "s3cret" {
			t.Errorf("Authenticate(%v) = %v, %v; want %v", tc.fields, pr, err, tc.want)
		}
	}
	for _, tc := range []struct {
		who  string
		a    hook.Action
		r    hook.Resource
		want error
	}{
		{"s3cret", hook.ActionPub, hook.Topic("T"), nil},
		{"mallory", hook.ActionPub, hook.Topic("T"), hook.ErrDenied},
		{"mallory", hook.ActionPub, hook.Topic("U"), nil},
		{"mallory", hook.ActionSub, hook.Topic("T"), nil},
	} {
		if err := set.Authorize(ctx, hook.Principal{Name: tc.who}, tc.a, tc.r); !errors.Is(err, tc.want) {
			t.Errorf("Authorize(%s, %s, %s) = %v; want %v", tc.who, tc.a, tc.r, err, tc.want)
		}
	}
	// A dead plugin fails closed.
	if err := killPID(p.pid()); err != nil {
		t.Fatal(err)
	}
	err = set.Authorize(ctx, hook.Principal{Name: "s3cret"}, hook.ActionPub, hook.Topic("T"))
	if !errors.Is(err, hook.ErrDenied) || !errors.Is(err, ErrCallFailed) {
		t.Fatalf("Authorize with the plugin killed: %v; want ErrDenied and ErrCallFailed", err)
	}
	_, err = set.Authenticate(ctx, &hook.Credentials{Fields: map[string]string{"token": "s3cret"}})
	if !errors.Is(err, hook.ErrUnauthenticated) || !errors.Is(err, ErrCallFailed) {
		t.Fatalf("Authenticate with the plugin killed: %v; want ErrUnauthenticated and ErrCallFailed", err)
	}
	eventually(t, 10*time.Second, "the auth plugin is not back", func() bool {
		return set.Authorize(ctx, hook.Principal{Name: "s3cret"}, hook.ActionPub, hook.Topic("T")) == nil
	})
}
