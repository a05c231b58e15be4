package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollector(t *testing.T) {
	stats := engine.Stats{
		Topics: []engine.TopicStats{
			{Topic: "orders", MessagesIn: 10, BytesIn: 1000, MessagesOut: 4, BytesOut: 400, Depth: 10},
			{Topic: "audit", MessagesIn: 1, BytesIn: 7, Depth: 1},
		},
		DiskBytes:        1 << 20,
		LogMinOffset:     0,
		LogEndOffset:     5000,
		DispatchedOffset: 4000,
		CorruptRecords:   2,
		Health:           engine.Health{Disk: engine.DiskFull, Reason: "disk 91% full"},

		RetentionUnconsumedDeleted: 37,
	}
	c := NewCollector(func() (engine.Stats, bool) { return stats, true })
	want := `
# HELP karman_dispatch_lag_bytes Appended commit-log bytes not yet indexed.
# TYPE karman_dispatch_lag_bytes gauge
karman_dispatch_lag_bytes 1000
# HELP karman_disk_bytes Size of the commit-log segment files.
# TYPE karman_disk_bytes gauge
karman_disk_bytes 1.048576e+06
# HELP karman_disk_full 1 while the engine refuses writes because its disk is full or failed (see /healthz for why), else 0.
# TYPE karman_disk_full gauge
karman_disk_full 1
# HELP karman_corrupt_records_total Stored records skipped because they failed their checks.
# TYPE karman_corrupt_records_total counter
karman_corrupt_records_total 2
# HELP karman_retention_unconsumed_deleted_messages_total Messages retention deleted before a consumer group had consumed them (by its committed offset), counted once per group that had not.
# TYPE karman_retention_unconsumed_deleted_messages_total counter
karman_retention_unconsumed_deleted_messages_total 37
# HELP karman_engine_up 1 while the engine is open and serving, 0 while starting or stopping.
# TYPE karman_engine_up gauge
karman_engine_up 1
# HELP karman_topic_depth_messages Messages held in the topic, over all its queues.
# TYPE karman_topic_depth_messages gauge
karman_topic_depth_messages{topic="audit"} 1
karman_topic_depth_messages{topic="orders"} 10
# HELP karman_topic_messages_in_total Messages appended to the topic.
# TYPE karman_topic_messages_in_total counter
karman_topic_messages_in_total{topic="audit"} 1
karman_topic_messages_in_total{topic="orders"} 10
# HELP karman_topic_bytes_out_total Stored record bytes delivered from the topic to consumers, counted per pull.
# TYPE karman_topic_bytes_out_total counter
karman_topic_bytes_out_total{topic="audit"} 0
karman_topic_bytes_out_total{topic="orders"} 400
`
	err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"karman_dispatch_lag_bytes", "karman_disk_bytes", "karman_disk_full", "karman_corrupt_records_total", "karman_retention_unconsumed_deleted_messages_total", "karman_engine_up",
		"karman_topic_depth_messages", "karman_topic_messages_in_total", "karman_topic_bytes_out_total")
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 1+5*2+9 {
		t.Errorf("collected %d metrics, want %d", n, 1+5*2+9)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

func TestCollectorWithoutEngine(t *testing.T) {
	c := NewCollector(func() (engine.Stats, bool) { return engine.Stats{}, false })
	want := `
# HELP karman_engine_up 1 while the engine is open and serving, 0 while starting or stopping.
# TYPE karman_engine_up gauge
karman_engine_up 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestSet(t *testing.T) {
	s := New(func() (engine.Stats, bool) { return engine.Stats{}, true }, "test", func(func(*engine.Engine)) bool { return false }, "c", "n")
	s.AppendLatency.Observe((30 * time.Microsecond).Seconds())
	ObserveSend(s.SendCost, "orders", 3, nil)
	families, err := s.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, n := range []string{"karman_append_duration_seconds", "karman_build_info", "karman_disk_bytes", "go_goroutines", "rocketmq_send_cost_time"} {
		if !names[n] {
			t.Errorf("registry lacks %s", n)
		}
	}
}
