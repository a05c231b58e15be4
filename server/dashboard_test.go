package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

// sample is one series of a scrape.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrape reads /metrics in the text format.
func scrape(t *testing.T, url string) []sample {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("/metrics line %q does not parse", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
			s.labels[l[1]] = l[2]
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sum adds the values of the series of name whose labels include want.
func sum(samples []sample, name string, want map[string]string) (float64, bool) {
	var total float64
	found := false
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		total += s.value
		found = true
	}
	return total, found
}

// dashboardQueries returns every PromQL expression of the Grafana
// dashboard: its panels' targets and its variables' label_values queries.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("metrics/grafana/karman.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			out = append(out, v.Definition)
		}
	}
	return out
}

var (
	metricNameRE = regexp.MustCompile(`\b((?:rocketmq|karman)_[a-z_]+)\b`)
	byRE         = regexp.MustCompile(`by \(([^)]*)\)`)
	matcherRE    = regexp.MustCompile(`([a-z_]+)\s*(?:=~|!~|!=|=)\s*"`)
	labelValRE   = regexp.MustCompile(`label_values\([^,]+,\s*([a-z_]+)\)`)
)

// targetLabels are added by Prometheus when it scrapes, not served.
var targetLabels = map[string]bool{"instance": true, "job": true}

// TestDashboardMetrics sends and consumes with the RocketMQ Go client,
// leaves a backlog, scrapes /metrics, and checks that every metric and
// label the Grafana dashboard queries is served, and that the RocketMQ
// metrics count the traffic.
func TestDashboardMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	err = opts.Flags.Parse([]string{
		"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0",
		"--broker-addr", "127.0.0.1:0", "--grpc-addr", "off", "--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off", "--broker-name", "broker-t", "--broker-cluster", "ClusterT",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	ns := srv.Addr("namesrv").String()
	metricsURL := "http://" + srv.Addr("http").String() + "/metrics"

	rlog.SetLogLevel("error")
	p, err := producer.NewDefaultProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("dash-producer"), producer.WithSendMsgTimeout(5*time.Second), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	send := func(n int) {
		t.Helper()
		for i := range n {
			m := primitive.NewMessage("dash", []byte(fmt.Sprintf("message %d", i)))
			if _, err := p.SendSync(ctx, m); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
	}
	const first, backlog = 20, 7
	send(first)

	c, err := consumer.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("dash-readers"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	all := make(chan struct{})
	err = c.Subscribe("dash", consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			if got.Add(int64(len(msgs))) == first {
				close(all)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Fatalf("the consumer got %d of %d messages", got.Load(), first)
	}
	// While online, the consumer is counted.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, _ := sum(scrape(t, metricsURL), "rocketmq_consumer_connections", map[string]string{"consumer_group": "dash-readers", "consume_mode": "push"}); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("rocketmq_consumer_connections never counted the consumer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Shutdown(); err != nil { // commits its offsets
		t.Fatal(err)
	}
	send(backlog)
	// A dead letter of group dash-failing, and a transaction committed and
	// one rolled back, through the engine.
	eng := srv.Engine()
	if err := eng.CreateTopic(meta.Topic{Name: "dash-other", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	failed, err := eng.Send(ctx, &message.Message{Topic: "dash-other", Body: []byte("poison")})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.SendBack(ctx, "dash-failing", failed.CommitLogOffset, engine.SendBackOptions{DelayLevel: -1}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []engine.Decision{engine.Commit, engine.Rollback} {
		res, err := eng.Send(ctx, &message.Message{Topic: "dash-other", Body: []byte("txn"),
			Properties: map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "dash-txn"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.EndTransaction(ctx, engine.EndTransactionRequest{ProducerGroup: "dash-txn", CommitLogOffset: res.CommitLogOffset, QueueOffset: -1, Decision: d}); err != nil {
			t.Fatal(err)
		}
	}

	// A half message left waiting for its producer's decision.
	if _, err := eng.Send(ctx, &message.Message{Topic: "dash-other", Body: []byte("txn"),
		Properties: map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "dash-txn"}}); err != nil {
		t.Fatal(err)
	}
	if err := eng.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}

	// The lag is the backlog (or more, if the consumer's last commits did
	// not reach the broker): the metric must match the engine's offsets.
	engineLag := func() int64 {
		eng := srv.Engine()
		offs, err := eng.ConsumerOffsets("dash-readers", "dash")
		if err != nil {
			return -1
		}
		tp, err := eng.Topic("dash")
		if err != nil {
			return -1
		}
		var lag int64
		for q := range tp.ReadQueues {
			end, _ := eng.MaxOffset("dash", q)
			lag += end - offs[q]
		}
		return lag
	}
	var samples []sample
	var lag float64
	for deadline := time.Now().Add(30 * time.Second); ; {
		samples = scrape(t, metricsURL)
		lag, _ = sum(samples, "rocketmq_consumer_lag_messages", map[string]string{"consumer_group": "dash-readers", "topic": "dash"})
		if want := engineLag(); lag >= backlog && int64(lag) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rocketmq_consumer_lag_messages of dash-readers in dash = %v, engine %d, want at least %d", lag, engineLag(), backlog)
		}
		time.Sleep(50 * time.Millisecond)
	}
	node := map[string]string{"cluster": "ClusterT", "node_type": "broker", "node_id": "broker-t", "topic": "dash"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		min    float64
		max    float64
	}{
		{"rocketmq_messages_in_total", map[string]string{"message_type": "Normal", "is_system": "false"}, first + backlog, first + backlog},
		{"rocketmq_throughput_in_total", nil, first*9 + 1, 1 << 20},
		// Deliveries: a push consumer may be handed a message twice
		// while its queues are rebalanced.
		{"rocketmq_messages_out_total", map[string]string{"consumer_group": "dash-readers", "is_retry": "false"}, first, 4 * first},
		{"rocketmq_throughput_out_total", map[string]string{"consumer_group": "dash-readers"}, first * 100, 1 << 20},
		{"rocketmq_consumer_inflight_messages", map[string]string{"consumer_group": "dash-readers"}, 0, 0},
		{"rocketmq_consumer_ready_messages", map[string]string{"consumer_group": "dash-readers"}, lag, lag},
		{"rocketmq_send_cost_time_count", map[string]string{"invocation_status": "success"}, first + backlog, first + backlog},
	} {
		want := map[string]string{}
		for k, v := range node {
			want[k] = v
		}
		for k, v := range tc.labels {
			want[k] = v
		}
		v, ok := sum(samples, tc.name, want)
		if !ok || v < tc.min || v > tc.max {
			t.Errorf("%s%v = %v (found %v), want %v to %v", tc.name, want, v, ok, tc.min, tc.max)
		}
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rocketmq_send_to_dlq_messages_total", map[string]string{"consumer_group": "dash-failing"}, 1},
		{"rocketmq_commit_messages_total", nil, 1},
		{"rocketmq_rollback_messages_total", nil, 1},
		{"rocketmq_half_messages", nil, 1},
		{"rocketmq_message_size_count", map[string]string{"topic": "dash"}, first + backlog},
		{"rocketmq_message_size_bucket", map[string]string{"topic": "dash", "le": "1024"}, first + backlog},
	} {
		tc.labels = maps.Clone(tc.labels)
		if tc.labels == nil {
			tc.labels = map[string]string{}
		}
		tc.labels["cluster"] = "ClusterT"
		if v, ok := sum(samples, tc.name, tc.labels); !ok || v != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, v, ok, tc.want)
		}
	}
	if v, ok := sum(samples, "rocketmq_storage_size", map[string]string{"cluster": "ClusterT"}); !ok || v != float64(eng.Stats().DiskBytes) {
		t.Errorf("rocketmq_storage_size = %v (%v), want the engine's %d", v, ok, eng.Stats().DiskBytes)
	}
	if v, ok := sum(samples, "rocketmq_storage_flush_behind_bytes", map[string]string{"cluster": "ClusterT"}); !ok || v < 0 || v > float64(eng.Stats().LogEndOffset) {
		t.Errorf("rocketmq_storage_flush_behind_bytes = %v (%v), want 0 to the log's end, %d", v, ok, eng.Stats().LogEndOffset)
	}
	// Each send of the Go producer answered, in rocketmq_rpc_latency.
	if n, ok := sum(samples, "rocketmq_rpc_latency_count", map[string]string{"cluster": "ClusterT", "protocol_type": "remoting", "response_code": "success"}); !ok || n < first+backlog {
		t.Errorf("rocketmq_rpc_latency_count of remoting successes = %v (%v), want at least the %d sends", n, ok, first+backlog)
	}
	if n, ok := sum(samples, "rocketmq_rpc_latency_count", map[string]string{"cluster": "ClusterT", "protocol_type": "remoting", "request_code": "send_message", "response_code": "success"}); !ok || n < first+backlog {
		t.Errorf("rocketmq_rpc_latency_count of send_message = %v (%v), want at least the %d sends", n, ok, first+backlog)
	}
	// The name server of the process: the broker registered, the
	// clients asked for routes.
	if n, ok := sum(samples, "rocketmq_rpc_latency_count", map[string]string{"cluster": "ClusterT", "node_type": "nameserver", "request_code": "register_broker", "response_code": "success"}); !ok || n < 1 {
		t.Errorf("rocketmq_rpc_latency_count of the name server's register_broker = %v (%v), want the broker's registration", n, ok)
	}
	if n, ok := sum(samples, "rocketmq_rpc_latency_count", map[string]string{"cluster": "ClusterT", "node_type": "nameserver", "request_code": "get_routeinfo_by_topic"}); !ok || n < 1 {
		t.Errorf("rocketmq_rpc_latency_count of the name server's get_routeinfo_by_topic = %v (%v), want the clients' route queries", n, ok)
	}
	if n, ok := sum(samples, "rocketmq_rpc_latency_count", map[string]string{"cluster": "ClusterT", "node_type": "broker", "request_code": "register_broker"}); ok && n > 0 {
		t.Errorf("register_broker counted as the broker's: %v", n)
	}
	if n, ok := sum(samples, "rocketmq_producer_connections", map[string]string{"cluster": "ClusterT"}); !ok || n < 1 {
		t.Errorf("rocketmq_producer_connections = %v (%v), want the producer", n, ok)
	}

	// Every metric and label the dashboard asks for is served.
	labelsOf := map[string]map[string]bool{} // metric name → labels seen
	for _, s := range samples {
		if labelsOf[s.name] == nil {
			labelsOf[s.name] = map[string]bool{}
		}
		for l := range s.labels {
			labelsOf[s.name][l] = true
		}
	}
	queries := dashboardQueries(t)
	if len(queries) < 15 {
		t.Fatalf("the dashboard has %d queries", len(queries))
	}
	for _, q := range queries {
		names := metricNameRE.FindAllString(q, -1)
		if len(names) == 0 {
			t.Errorf("query %q names no metric", q)
		}
		var labels []string
		for _, m := range byRE.FindAllStringSubmatch(q, -1) {
			for _, l := range strings.Split(m[1], ",") {
				labels = append(labels, strings.TrimSpace(l))
			}
		}
		for _, m := range matcherRE.FindAllStringSubmatch(q, -1) {
			labels = append(labels, m[1])
		}
		for _, m := range labelValRE.FindAllStringSubmatch(q, -1) {
			labels = append(labels, m[1])
		}
		for _, name := range names {
			have, ok := labelsOf[name]
			if !ok {
				t.Errorf("query %q: /metrics has no %s", q, name)
				continue
			}
			for _, l := range labels {
				if !have[l] && !targetLabels[l] {
					t.Errorf("query %q: %s has no label %s (it has %v)", q, name, l, have)
				}
			}
		}
	}
}
