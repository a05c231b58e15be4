package consoletest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/remotingtest"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/console"
)

// startBroker starts a server with the broker and the name server, and
// no MQTT.
func startBroker(t *testing.T) *server.Server {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	err = opts.Flags.Parse([]string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "127.0.0.1:0",
		"--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--log-level", "error",
		"--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(*opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	return srv
}

// TestHistoryOfDeliveries: a Go push consumer fails one message once and
// then consumes it, and fails another until it is a dead letter; the
// history the API answers for each holds every delivery, with the
// consumer, and its outcome.
func TestHistoryOfDeliveries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and RocketMQ clients")
	}
	srv := startBroker(t)
	eng := srv.Engine()
	if err := eng.CreateTopic(meta.Topic{Name: "jobs", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	if err := eng.CreateGroup(meta.Group{Name: "flaky", MaxAttempts: 2, RetryBackoff: []time.Duration{100 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	ns := []string{srv.Addr("namesrv").String()}
	remotingtest.WaitRoute(t, ns[0], "jobs")
	rlog.SetLogLevel("error")
	ctx := context.Background()
	p, err := producer.NewDefaultProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(ns)),
		producer.WithGroupName("jobs-producer"), producer.WithSendMsgTimeout(5*time.Second), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	var ids []string
	for _, body := range []string{"fails once", "always fails"} {
		res, err := p.SendSync(ctx, primitive.NewMessage("jobs", []byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MsgID)
	}
	once, always := ids[0], ids[1]

	c, err := consumer.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(ns)),
		consumer.WithGroupName("flaky"), consumer.WithInstance("history-test"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithMaxReconsumeTimes(1))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	consumed := make(chan struct{})
	err = c.Subscribe("jobs", consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			result := consumer.ConsumeSuccess
			for _, m := range msgs {
				id := m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
				seen[id]++
				switch {
				case id == always, id == once && seen[id] == 1:
					result = consumer.ConsumeRetryLater
				case id == once:
					close(consumed)
				}
			}
			return result, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	select {
	case <-consumed:
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the message failed once was not consumed again: deliveries %v", seen)
	}
	api := "http://" + srv.Addr("http").String() + "/api/v1"
	history := func(id string) console.History {
		t.Helper()
		resp, err := http.Get(api + "/messages/" + url.PathEscape(id) + "/history?topic=jobs")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h console.History
		if resp.StatusCode != 200 {
			t.Fatalf("history of %s: %s", id, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	// kinds lists the events of group flaky, in order.
	kinds := func(h console.History) []string {
		var out []string
		for _, e := range h.Events {
			if e.Group == "flaky" && e.Kind != "consumed" && e.Kind != "pending" {
				out = append(out, e.Kind)
			}
		}
		return out
	}
	// startsWith reports whether got begins with want, commits left out
	// (the client commits when it pleases).
	startsWith := func(got []string, want ...string) bool {
		var moves []string
		for _, k := range got {
			if k != "commit" {
				moves = append(moves, k)
			}
		}
		return len(moves) >= len(want) && strings.Join(moves[:len(want)], " ") == strings.Join(want, " ")
	}

	h := history(once)
	if k := kinds(h); !startsWith(k, "pull", "retry", "pull") {
		t.Errorf("history of the message failed once: %v\n%+v", k, h.Events)
	}
	for _, e := range h.Events {
		if e.Kind == "pull" && !strings.Contains(e.Client, "remoting") {
			t.Errorf("a pull without its consumer: %+v", e)
		}
		if e.Kind == "retry" && (e.Attempt != 2 || e.Topic != "%RETRY%flaky" || !strings.Contains(e.Detail, "100ms")) {
			t.Errorf("retry event: %+v", e)
		}
	}
	// The dead letter: delivered twice, sent back after each.
	waitFor(t, "the dead letter", func() bool {
		return startsWith(kinds(history(always)), "pull", "retry", "pull", "dead-letter")
	}, func() string { return strings.Join(kinds(history(always)), " ") })
	for _, e := range history(always).Events {
		if e.Kind == "dead-letter" && (e.Topic != "%DLQ%flaky" || e.Attempt != 2) {
			t.Errorf("dead-letter event: %+v", e)
		}
	}
	// The message consumed: once its commit reaches the broker, the
	// history has one past it in the retry topic.
	waitFor(t, "the commit of the redelivery", func() bool {
		for _, e := range history(once).Events {
			if e.Kind == "commit" && e.Topic == "%RETRY%flaky" {
				return true
			}
		}
		return false
	}, func() string { return strings.Join(kinds(history(once)), " ") })
	for _, e := range history(once).Events {
		t.Logf("%s %-11s %-14s %s", time.UnixMilli(e.At).Format("15:04:05.000"), e.Kind, e.Topic, e.Detail)
	}
}

// The API gives a group's lag as the server sampled it over the last
// minutes, up to its lag now.
func TestLagHistoryAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	f := newFixture(t)
	api := f.base + "/api/v1/groups/readers"
	var g console.Group
	waitFor(t, "a few samples of readers' lag", func() bool {
		resp, err := http.Get(api)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
			t.Fatal(err)
		}
		n := len(g.LagHistory)
		return n >= 3 && g.LagHistory[n-1].Lag == f.lag(t)
	}, func() string { return fmt.Sprintf("%+v, engine lag %d", g.LagHistory, f.lag(t)) })
	for i := 1; i < len(g.LagHistory); i++ {
		if g.LagHistory[i].At < g.LagHistory[i-1].At {
			t.Fatalf("samples out of order: %+v", g.LagHistory)
		}
	}
}

// TestHistoryOfTracedMessage: a Go producer and push consumer with message
// tracing on send their trace records to the trace topic; the history of
// the message shows them decoded, beside the engine's own records.
func TestHistoryOfTracedMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and RocketMQ clients")
	}
	srv := startBroker(t)
	eng := srv.Engine()
	if err := eng.CreateTopic(meta.Topic{Name: "traced", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	if err := eng.CreateGroup(meta.Group{Name: "tracers"}); err != nil {
		t.Fatal(err)
	}
	ns := []string{srv.Addr("namesrv").String()}
	remotingtest.WaitRoute(t, ns[0], "traced")
	rlog.SetLogLevel("error")
	trace := func(group string) *primitive.TraceConfig {
		return &primitive.TraceConfig{GroupName: group, Access: primitive.Local, Resolver: primitive.NewPassthroughResolver(ns)}
	}
	p, err := producer.NewDefaultProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(ns)),
		producer.WithGroupName("traced-producer"), producer.WithSendMsgTimeout(5*time.Second), producer.WithTrace(trace("traced-producer")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	res, err := p.SendSync(context.Background(), primitive.NewMessage("traced", []byte("follow me")).WithKeys([]string{"order-7"}))
	if err != nil {
		t.Fatal(err)
	}
	id := res.MsgID
	c, err := consumer.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(ns)),
		consumer.WithGroupName("tracers"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithTrace(trace("tracers")))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe("traced", consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()

	api := "http://" + srv.Addr("http").String() + "/api/v1/messages/" + url.PathEscape(id) + "/history?topic=traced"
	traced := func() map[string]console.Event {
		resp, err := http.Get(api)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h console.History
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		out := map[string]console.Event{}
		for _, e := range h.Events {
			if e.Trace != nil {
				out[e.Trace.Type] = e
			}
		}
		return out
	}
	var got map[string]console.Event
	waitFor(t, "the producer's and the consumer's trace records", func() bool {
		got = traced()
		return len(got) == 3
	}, func() string { return fmt.Sprintf("%+v", got) })
	if pub := got["Pub"]; pub.Group != "traced-producer" || pub.Trace.Topic != "traced" || pub.Trace.Keys != "order-7" || !pub.Trace.Success || pub.Trace.BodyLength != 9 {
		t.Errorf("Pub: %+v %+v", pub, pub.Trace)
	}
	if sb := got["SubBefore"]; sb.Group != "tracers" || sb.Trace.RetryTimes != 0 {
		t.Errorf("SubBefore: %+v %+v", sb, sb.Trace)
	}
	if sa := got["SubAfter"]; sa.Group != "tracers" || !sa.Trace.Success || !strings.Contains(sa.Detail, "succeeded") {
		t.Errorf("SubAfter: %+v %+v", sa, sa.Trace)
	}
}
