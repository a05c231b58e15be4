package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

func get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestConsolePages fetches the web console's page and assets, checks
// they reference nothing outside the server, and calls every API path
// the page's script uses against a server with data.
func TestConsolePages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	srv, api := startAPIServer(t)
	base := strings.TrimSuffix(api, "/api/v1")
	eng := srv.Engine()
	ctx := context.Background()
	if err := eng.CreateTopic(meta.Topic{Name: "shop", ReadQueues: 2, WriteQueues: 2, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 4 {
		m := &message.Message{Topic: "shop", Body: []byte(fmt.Sprintf(`{"order":%d}`, i))}
		m.SetKeys([]string{fmt.Sprintf("o-%d", i)})
		res, err := eng.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MsgID)
	}
	if err := eng.CreateGroup(meta.Group{Name: "shoppers"}); err != nil {
		t.Fatal(err)
	}
	if err := eng.WaitDispatched(ctx); err != nil { // before the commit: offset 1 exists once indexed
		t.Fatal(err)
	}
	if err := eng.CommitOffset("shoppers", "shop", 0, 1); err != nil {
		t.Fatal(err)
	}

	resp, page := get(t, base+"/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page, `<script src="/ui/app.js">`) || !strings.Contains(page, `href="/ui/style.css"`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("GET /: %d %v\n%s", resp.StatusCode, resp.Header, page)
	}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	if m := external.FindString(page); m != "" {
		t.Errorf("the page refers to %s", m)
	}
	var script string
	for path, ctype := range map[string]string{"/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		resp, body := get(t, base+path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || len(body) < 100 {
			t.Errorf("GET %s: %d %s, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
		if m := external.FindString(body); m != "" {
			t.Errorf("%s refers to %s", path, m)
		}
		if path == "/ui/app.js" {
			script = body
		}
	}
	if resp, _ := get(t, base+"/ui/nothing.js"); resp.StatusCode != 404 {
		t.Errorf("a missing asset: %d", resp.StatusCode)
	}

	// The API calls the script makes, with this server's data: each
	// fragment must be in the script, and its call must answer 200.
	for _, c := range []struct{ fragment, method, path string }{
		{`api("GET", "/overview")`, "GET", "/overview"},
		{`api("GET", "/topics")`, "GET", "/topics"},
		{`api("GET", "/topics/" + encodeURIComponent(name))`, "GET", "/topics/shop"},
		{`api("GET", "/groups")`, "GET", "/groups"},
		{`const path = "/groups/" + encodeURIComponent(name)`, "GET", "/groups/shoppers"},
		{`path + "/dead-letters?count=100"`, "GET", "/groups/shoppers/dead-letters?count=100"},
		{`"/messages/" + encodeURIComponent(`, "GET", "/messages/" + ids[2]},
		{`"/messages?" + q({ topic: f.topic.value, key: f.key.value, limit: 100 })`, "GET", "/messages?topic=shop&key=o-1&limit=100"},
		{`"/messages?" + q({ topic: f.topic.value, begin: ms(f.begin.value), end: ms(f.end.value), limit: 100 })`, "GET", "/messages?topic=shop&limit=100"},
		{"`/topics/${encodeURIComponent(f.topic.value)}/queues/${encodeURIComponent(f.queue.value)}/messages?`", "GET", "/topics/shop/queues/1/messages?from=0&count=32"},
		{`api("POST", "/topics", body)`, "POST", "/topics"},
		{`api("PUT", "/topics/" + encodeURIComponent(t.name), { queues: Number(q.value) })`, "PUT", "/topics/made"},
		{`api("POST", path + "/reset-offset", { topic: f.topic.value, time: t })`, "POST", "/groups/shoppers/reset-offset"},
		{`api("DELETE", "/topics/" + encodeURIComponent(t.name))`, "DELETE", "/topics/made"},
	} {
		if !strings.Contains(script, c.fragment) {
			t.Errorf("app.js does not call %s", c.fragment)
			continue
		}
		var body any
		switch c.path {
		case "/topics":
			if c.method == "POST" {
				body = map[string]any{"name": "made", "queues": 2}
			}
		case "/topics/made":
			if c.method == "PUT" {
				body = map[string]any{"queues": 3}
			}
		case "/groups/shoppers/reset-offset":
			body = map[string]any{"topic": "shop", "time": 0}
		}
		if r := call(t, c.method, api+c.path, body); r.status/100 != 2 {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
}
