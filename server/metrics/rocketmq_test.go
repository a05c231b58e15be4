package metrics

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRocketMQCollector drives an engine (sends, a pull as a group, pops,
// a commit, a consumer online) and checks RocketMQ's metrics against it.
func TestRocketMQCollector(t *testing.T) {
	e, err := engine.Open(t.TempDir(), &engine.Options{SegmentSize: 1 << 20, AutoCreateGroups: true,
		FlushInterval: time.Hour}) // nothing is flushed while the test runs: all of the log is behind
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for _, tp := range []meta.Topic{
		{Name: "orders", ReadQueues: 2, WriteQueues: 2, Perm: meta.PermRW, MessageType: meta.MessageTypeFIFO},
		{Name: "plain", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW},
	} {
		if err := e.CreateTopic(tp); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		m := &message.Message{Topic: "orders", Body: []byte("0123456789"), Properties: map[string]string{message.PropertyShardingKey: "k"}}
		if _, err := e.SendToQueue(ctx, m, int32(i%2)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Send(ctx, &message.Message{Topic: "plain", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	// billing gives up on a message: a dead letter.
	if err := e.CreateTopic(meta.Topic{Name: "failing", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	dead, err := e.Send(ctx, &message.Message{Topic: "failing", Body: []byte("y")})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SendBack(ctx, "billing", dead.CommitLogOffset, engine.SendBackOptions{DelayLevel: -1}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	// billing pulls 2 of queue 0 and commits 2 there; poppers pops plain's one.
	res, err := e.Pull(hook.NewContext(ctx, &hook.Client{Group: "billing"}), "orders", 0, 0, 2, nil)
	if err != nil || len(res.Records) != 2 {
		t.Fatalf("pull: %v", err)
	}
	if err := e.CreateGroup(meta.Group{Name: "billing"}); err != nil {
		t.Fatal(err)
	}
	if err := e.CommitOffset("billing", "orders", 0, 2); err != nil {
		t.Fatal(err)
	}
	popped, err := e.Pop(ctx, engine.PopOptions{Group: "poppers", Topic: "plain", Max: 4})
	if err != nil || len(popped) != 1 {
		t.Fatalf("pop: %d, %v", len(popped), err)
	}
	// The engine saves a pop state, and with it the offset acknowledged
	// below (here 0), every few milliseconds: wait for it, so that the
	// series of poppers are there whatever the timing.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if offs, err := e.ConsumerOffsets("poppers", "plain"); err == nil && len(offs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pop state of poppers was not saved")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.Clients().Heartbeat(registry.Heartbeat{Client: "c1", Protocol: "remoting", Language: "GO", Version: "V4_5_2", Consumers: []registry.Consumer{{Group: "billing", Type: registry.ConsumePull}}})
	e.Clients().Heartbeat(registry.Heartbeat{Client: "c2", Protocol: "remoting", Language: "JAVA", Version: "V5_3_0", Consumers: []registry.Consumer{{Group: "billing", Type: registry.ConsumePull}}})
	e.Clients().Heartbeat(registry.Heartbeat{Client: "p1", Protocol: "grpc", Language: "NODE_JS", Version: "1.0.8", Producers: []string{"pg"}})
	e.Clients().Heartbeat(registry.Heartbeat{Client: "p2", Protocol: "grpc", Language: "NODE_JS", Version: "1.0.8", Producers: []string{"pg", "pg2"}})

	// Two transactions: one committed, one rolled back. (The engine counts
	// a half message in its real topic when it is stored, and the
	// committed copy again: failing takes in 4.)
	for i, d := range []engine.Decision{engine.Commit, engine.Rollback} {
		half := &message.Message{Topic: "failing", Body: []byte("t"), Properties: map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "txn"}}
		res, err := e.Send(ctx, half)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.EndTransaction(ctx, engine.EndTransactionRequest{ProducerGroup: "txn", CommitLogOffset: res.CommitLogOffset, QueueOffset: -1, Decision: d}); err != nil {
			t.Fatalf("end transaction %d: %v", i, err)
		}
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	disk := float64(e.Stats().DiskBytes)

	c := NewRocketMQCollector(func(visit func(*engine.Engine)) bool { visit(e); return true }, "DefaultCluster", "broker-a")
	k := func(name string, kv ...string) string {
		ls := []string{`cluster="DefaultCluster"`, `node_id="broker-a"`, `node_type="broker"`}
		for i := 0; i < len(kv); i += 2 {
			ls = append(ls, kv[i]+`="`+kv[i+1]+`"`)
		}
		slices.Sort(ls)
		return name + "{" + strings.Join(ls, ",") + "}"
	}
	orders := []string{"consumer_group", "billing", "is_retry", "false", "is_system", "false", "topic", "orders"}
	plain := []string{"consumer_group", "poppers", "is_retry", "false", "is_system", "false", "topic", "plain"}
	want := map[string]float64{
		k("rocketmq_messages_in_total", "is_system", "false", "message_type", "FIFO", "topic", "orders"):    6,
		k("rocketmq_messages_in_total", "is_system", "false", "message_type", "Normal", "topic", "plain"):   1,
		k("rocketmq_throughput_in_total", "is_system", "false", "message_type", "FIFO", "topic", "orders"):  60,
		k("rocketmq_throughput_in_total", "is_system", "false", "message_type", "Normal", "topic", "plain"): 1,
		k("rocketmq_messages_out_total", orders...):                                                         2,
		k("rocketmq_messages_out_total", plain...):                                                          1,
		k("rocketmq_throughput_out_total", orders...):                                                       float64(len(res.Records[0]) + len(res.Records[1])),
		k("rocketmq_throughput_out_total", plain...):                                                        float64(len(popped[0].Record)),
		k("rocketmq_consumer_lag_messages", orders...):                                                      4,
		k("rocketmq_consumer_inflight_messages", orders...):                                                 0,
		k("rocketmq_consumer_ready_messages", orders...):                                                    4,
		k("rocketmq_consumer_lag_messages", plain...):                                                       1,
		k("rocketmq_consumer_inflight_messages", plain...):                                                  1,
		k("rocketmq_consumer_ready_messages", plain...):                                                     0,
		k("rocketmq_consumer_connections", "consume_mode", "pull", "consumer_group", "billing", "is_retry", "false", "is_system", "false", "language", "GO", "version", "V4_5_2"):   1,
		k("rocketmq_consumer_connections", "consume_mode", "pull", "consumer_group", "billing", "is_retry", "false", "is_system", "false", "language", "JAVA", "version", "V5_3_0"): 1,
		k("rocketmq_producer_connections", "language", "NODE_JS", "version", "1.0.8"):                                                                                               2,
		k("rocketmq_send_to_dlq_messages_total", "consumer_group", "billing", "is_system", "false"):                                                                                 1,
		k("rocketmq_messages_in_total", "is_system", "true", "message_type", "Normal", "topic", "%DLQ%billing"):                                                                     1,
		k("rocketmq_throughput_in_total", "is_system", "true", "message_type", "Normal", "topic", "%DLQ%billing"):                                                                   1,
		k("rocketmq_messages_in_total", "is_system", "false", "message_type", "Normal", "topic", "failing"):                                                                         4,
		k("rocketmq_throughput_in_total", "is_system", "false", "message_type", "Normal", "topic", "failing"):                                                                       4,
		k("rocketmq_messages_in_total", "is_system", "true", "message_type", "Normal", "topic", "RMQ_SYS_TRANS_HALF_TOPIC"):                                                         0,
		k("rocketmq_throughput_in_total", "is_system", "true", "message_type", "Normal", "topic", "RMQ_SYS_TRANS_HALF_TOPIC"):                                                       0,
		k("rocketmq_messages_in_total", "is_system", "true", "message_type", "Normal", "topic", "RMQ_SYS_TRANS_OP_HALF_TOPIC"):                                                      0,
		k("rocketmq_throughput_in_total", "is_system", "true", "message_type", "Normal", "topic", "RMQ_SYS_TRANS_OP_HALF_TOPIC"):                                                    0,
		k("rocketmq_commit_messages_total"):         1,
		k("rocketmq_rollback_messages_total"):       1,
		k("rocketmq_storage_size"):                  disk,
		k("rocketmq_storage_dispatch_behind_bytes"): 0,
		k("rocketmq_storage_flush_behind_bytes"):    float64(e.Stats().LogEndOffset),
		k("rocketmq_half_messages"):                 0,
	}
	got := series(t, c)
	if !maps.Equal(got, want) {
		for k, v := range got {
			if w, ok := want[k]; !ok || w != v {
				t.Errorf("got %s %v (want %v, %v)", k, v, w, ok)
			}
		}
		for k, v := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("missing %s %v", k, v)
			}
		}
	}

	// A closed engine gives no series and no panic.
	closed := NewRocketMQCollector(func(func(*engine.Engine)) bool { return false }, "c", "n")
	if n := testutil.CollectAndCount(closed); n != 0 {
		t.Errorf("%d series without an engine", n)
	}
}

func TestObserveSend(t *testing.T) {
	h := NewSendCost("c", "n")
	ObserveSend(h, "orders", 3, nil)
	ObserveSend(h, "orders", 700, errors.New("disk full"))
	ObserveSend(h, "no-such-topic", 1, engine.ErrTopicNotFound)
	ObserveSend(h, "bad name!", 1, engine.ErrInvalidTopic)
	want := map[[2]string]uint64{{"orders", "success"}: 1, {"orders", "failure"}: 1, {"", "failure"}: 2}
	reg := prometheus.NewRegistry()
	reg.MustRegister(h)
	fams, err := reg.Gather()
	if err != nil || len(fams) != 1 {
		t.Fatalf("gather: %v, %d families", err, len(fams))
	}
	got := map[[2]string]uint64{}
	for _, m := range fams[0].GetMetric() {
		var k [2]string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "topic":
				k[0] = l.GetValue()
			case "invocation_status":
				k[1] = l.GetValue()
			}
		}
		got[k] = m.GetHistogram().GetSampleCount()
	}
	if !maps.Equal(got, want) {
		t.Errorf("send counts %v, want %v", got, want)
	}
}

// series collects c into "name{labels sorted}" → value.
func series(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"=\""+l.GetValue()+"\"")
			}
			slices.Sort(ls)
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[f.GetName()+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

// rocketmq_rpc_latency: observations by name and by code land in the
// series of their labels, in milliseconds.
func TestRPCLatency(t *testing.T) {
	l := NewRPCLatency("C", "n")
	names := 0
	observe := l.Coded("remoting", func(req, resp int32) (string, string) {
		names++
		return "code_" + strconv.Itoa(int(req)), "answer_" + strconv.Itoa(int(resp))
	})
	observe(10, 0, 2*time.Millisecond)
	observe(10, 0, 200*time.Millisecond)
	observe(10, 1, time.Millisecond)
	l.Observe("grpc", "SendMessage", "OK", 4*time.Millisecond)
	l.NameServer().Observe("remoting", "register_broker", "success", 20*time.Millisecond)
	if names != 2 {
		t.Errorf("codes named %d times, want once per pair", names)
	}
	want := `
# HELP rocketmq_rpc_latency Time the broker or name server took to answer a request, from its routing to its answer (long polls included), in milliseconds.
# TYPE rocketmq_rpc_latency histogram
`
	for _, s := range []struct {
		node, proto, req, resp string
		count                  int
		sum                    float64
		le                     [7]int // 1 3 5 10 100 1000 3000
	}{
		{"broker", "grpc", "SendMessage", "OK", 1, 4, [7]int{0, 0, 1, 1, 1, 1, 1}},
		{"broker", "remoting", "code_10", "answer_0", 2, 202, [7]int{0, 1, 1, 1, 1, 2, 2}},
		{"broker", "remoting", "code_10", "answer_1", 1, 1, [7]int{1, 1, 1, 1, 1, 1, 1}},
		{"nameserver", "remoting", "register_broker", "success", 1, 20, [7]int{0, 0, 0, 0, 1, 1, 1}},
	} {
		labels := fmt.Sprintf(`cluster="C",node_id="n",node_type="%s",protocol_type="%s",request_code="%s",response_code="%s"`, s.node, s.proto, s.req, s.resp)
		for i, le := range []string{"1", "3", "5", "10", "100", "1000", "3000"} {
			want += fmt.Sprintf("rocketmq_rpc_latency_bucket{%s,le=\"%s\"} %d\n", labels, le, s.le[i])
		}
		want += fmt.Sprintf("rocketmq_rpc_latency_bucket{%s,le=\"+Inf\"} %d\n", labels, s.count)
		want += fmt.Sprintf("rocketmq_rpc_latency_sum{%s} %g\n", labels, s.sum)
		want += fmt.Sprintf("rocketmq_rpc_latency_count{%s} %d\n", labels, s.count)
	}
	if err := testutil.CollectAndCompare(l, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
