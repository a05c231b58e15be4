package karmancmd

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/console"
)

// apiGet decodes the answer of GET url into a T.
func apiGet[T any](t *testing.T, url string) T {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v T
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return v
}

// TestAdminAndAPIAgree: on one server, the admin CLI (over the remoting
// protocol) and the JSON API answer the same topics and the same lag,
// queue by queue.
func TestAdminAndAPIAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	r := startServe(t, server.Default, "--data", t.TempDir(), "--segment-size", "64MiB",
		"--http-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--log-level", "error")
	ns, api := r.addrs["namesrv"], "http://"+r.addrs["http"]+"/api/v1"

	adminJSON[admin.TopicChange](t, ns, "topic", "create", "alpha", "--queues", "4")
	adminJSON[admin.TopicChange](t, ns, "topic", "create", "beta", "--queues", "2", "--type", "NORMAL")
	adminJSON[json.RawMessage](t, ns, "group", "create", "readers")
	for range 5 {
		adminJSON[json.RawMessage](t, ns, "message", "send", "alpha", "a")
	}
	adminJSON[json.RawMessage](t, ns, "message", "send", "beta", "b")
	// readers is behind by all of alpha, and by what beta got after "now".
	adminJSON[json.RawMessage](t, ns, "offset", "reset", "readers", "alpha", "--to-time", "0")
	adminJSON[json.RawMessage](t, ns, "offset", "reset", "readers", "beta", "--to-time", "now")
	for range 2 {
		adminJSON[json.RawMessage](t, ns, "message", "send", "beta", "b")
	}

	// Topics: the same names, types and queue counts.
	type topic struct {
		Type        string
		Read, Write int32
	}
	cli := map[string]topic{}
	for _, tp := range adminJSON[topicList](t, ns, "topic", "list").Topics {
		cli[tp.Topic] = topic{tp.Type, tp.ReadQueues, tp.WriteQueues}
	}
	web := map[string]topic{}
	for _, tp := range apiGet[console.TopicList](t, api+"/topics").Topics {
		web[tp.Name] = topic{tp.Type, tp.ReadQueues, tp.WriteQueues}
	}
	if !maps.Equal(cli, web) {
		t.Errorf("topic list: the CLI says %v, the API %v", cli, web)
	}
	if cli["alpha"] != (topic{"", 4, 4}) && cli["alpha"] != (topic{"NORMAL", 4, 4}) || cli["beta"].Type != "NORMAL" {
		t.Errorf("topic list %v, want alpha with 4 queues and beta NORMAL", cli)
	}

	// Lag: the same total and the same offsets in every queue.
	d := adminJSON[admin.GroupDescription](t, ns, "group", "describe", "readers")
	g := apiGet[console.Group](t, api+"/groups/readers")
	if d.TotalLag != 7 || g.Lag != d.TotalLag {
		t.Errorf("lag of readers: the CLI says %d, the API %d, want 7 (5 in alpha, 2 in beta)", d.TotalLag, g.Lag)
	}
	type queue struct {
		Topic            string
		ID               int32
		Max, Offset, Lag int64
	}
	var cq, wq []queue
	for _, q := range d.Queues {
		cq = append(cq, queue{q.Topic, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag})
	}
	for _, q := range g.Queues {
		// Where the group committed nothing (its retry topic here) the
		// API says -1, the remoting answer 0.
		wq = append(wq, queue{q.Topic, q.Queue, q.MaxOffset, max(q.ConsumerOffset, 0), q.Lag})
	}
	order := func(a, b queue) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	}
	slices.SortFunc(cq, order)
	slices.SortFunc(wq, order)
	// alpha's 4 queues, beta's 2 and the retry topic's 1.
	if len(cq) != 7 || !slices.Equal(cq, wq) {
		t.Errorf("queues of readers: the CLI says %+v, the API %+v", cq, wq)
	}
}
