package metrics

import (
	"runtime"

	"github.com/karmanmq/karman/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// StatsFunc returns the engine's current statistics, or false while no
// engine is open (starting up or shutting down).
type StatsFunc func() (engine.Stats, bool)

// Collector turns engine statistics into metrics at scrape time.
type Collector struct {
	stats StatsFunc

	up, messagesIn, bytesIn, messagesOut, bytesOut, depth,
	topics, disk, diskFull, logMin, logEnd, dispatched, dispatchLag, corrupt, unconsumedDeleted *prometheus.Desc
}

// NewCollector returns a collector reading stats at every scrape.
func NewCollector(stats StatsFunc) *Collector {
	topic := []string{"topic"}
	return &Collector{
		stats:       stats,
		up:          prometheus.NewDesc("karman_engine_up", "1 while the engine is open and serving, 0 while starting or stopping.", nil, nil),
		messagesIn:  prometheus.NewDesc("karman_topic_messages_in_total", "Messages appended to the topic.", topic, nil),
		bytesIn:     prometheus.NewDesc("karman_topic_bytes_in_total", "Message body bytes appended to the topic.", topic, nil),
		messagesOut: prometheus.NewDesc("karman_topic_messages_out_total", "Messages delivered from the topic to consumers.", topic, nil),
		bytesOut:    prometheus.NewDesc("karman_topic_bytes_out_total", "Stored record bytes delivered from the topic to consumers, counted per pull.", topic, nil),
		depth:       prometheus.NewDesc("karman_topic_depth_messages", "Messages held in the topic, over all its queues.", topic, nil),
		topics:      prometheus.NewDesc("karman_topics", "Number of topics.", nil, nil),
		disk:        prometheus.NewDesc("karman_disk_bytes", "Size of the commit-log segment files.", nil, nil),
		diskFull:    prometheus.NewDesc("karman_disk_full", "1 while the engine refuses writes because its disk is full or failed (see /healthz for why), else 0.", nil, nil),
		logMin:      prometheus.NewDesc("karman_commitlog_min_offset_bytes", "Smallest commit-log offset still stored.", nil, nil),
		logEnd:      prometheus.NewDesc("karman_commitlog_end_offset_bytes", "Commit-log offset the next append goes to.", nil, nil),
		dispatched:  prometheus.NewDesc("karman_commitlog_dispatched_offset_bytes", "Commit-log offset up to which messages are indexed and pullable.", nil, nil),
		dispatchLag: prometheus.NewDesc("karman_dispatch_lag_bytes", "Appended commit-log bytes not yet indexed.", nil, nil),
		corrupt:     prometheus.NewDesc("karman_corrupt_records_total", "Stored records skipped because they failed their checks.", nil, nil),
		unconsumedDeleted: prometheus.NewDesc("karman_retention_unconsumed_deleted_messages_total",
			"Messages retention deleted before a consumer group had consumed them (by its committed offset), counted once per group that had not.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.messagesIn, c.bytesIn, c.messagesOut, c.bytesOut, c.depth, c.topics, c.disk, c.diskFull, c.logMin, c.logEnd, c.dispatched, c.dispatchLag, c.corrupt, c.unconsumedDeleted} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.stats()
	if !ok {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, t := range s.Topics {
		ch <- prometheus.MustNewConstMetric(c.messagesIn, prometheus.CounterValue, float64(t.MessagesIn), t.Topic)
		ch <- prometheus.MustNewConstMetric(c.bytesIn, prometheus.CounterValue, float64(t.BytesIn), t.Topic)
		ch <- prometheus.MustNewConstMetric(c.messagesOut, prometheus.CounterValue, float64(t.MessagesOut), t.Topic)
		ch <- prometheus.MustNewConstMetric(c.bytesOut, prometheus.CounterValue, float64(t.BytesOut), t.Topic)
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(t.Depth), t.Topic)
	}
	ch <- prometheus.MustNewConstMetric(c.topics, prometheus.GaugeValue, float64(len(s.Topics)))
	ch <- prometheus.MustNewConstMetric(c.disk, prometheus.GaugeValue, float64(s.DiskBytes))
	full := 0.0
	if s.Health.Disk != engine.DiskOK {
		full = 1
	}
	ch <- prometheus.MustNewConstMetric(c.diskFull, prometheus.GaugeValue, full)
	ch <- prometheus.MustNewConstMetric(c.logMin, prometheus.GaugeValue, float64(s.LogMinOffset))
	ch <- prometheus.MustNewConstMetric(c.logEnd, prometheus.GaugeValue, float64(s.LogEndOffset))
	ch <- prometheus.MustNewConstMetric(c.dispatched, prometheus.GaugeValue, float64(s.DispatchedOffset))
	ch <- prometheus.MustNewConstMetric(c.dispatchLag, prometheus.GaugeValue, float64(max(s.LogEndOffset-s.DispatchedOffset, 0)))
	ch <- prometheus.MustNewConstMetric(c.corrupt, prometheus.CounterValue, float64(s.CorruptRecords))
	ch <- prometheus.MustNewConstMetric(c.unconsumedDeleted, prometheus.CounterValue, float64(s.RetentionUnconsumedDeleted))
}

// NewAppendLatency returns the histogram of commit-log append durations
// (one observation per Send or SendBatch), from 5µs to about 2.6s.
func NewAppendLatency() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "karman_append_duration_seconds",
		Help:    "Time to append one send (a message or a batch) to the commit log, including the flush under sync flush.",
		Buckets: prometheus.ExponentialBuckets(5e-6, 2, 20),
	})
}

// Set is the registry serve exposes and the engine hook that feeds it.
type Set struct {
	Registry *prometheus.Registry
	// AppendLatency is meant for engine.Options.AppendLatency.
	AppendLatency prometheus.Histogram
	// SendCost is rocketmq_send_cost_time, fed by
	// engine.Options.SendLatency through ObserveSend.
	SendCost *prometheus.HistogramVec
	// MessageSize is rocketmq_message_size, fed by
	// engine.Options.MessageSize.
	MessageSize *prometheus.HistogramVec
	// RPCLatency is rocketmq_rpc_latency, fed by the front-ends; nil
	// without the RocketMQ metrics.
	RPCLatency *RPCLatency
}

// New builds the registry with the engine collector reading stats, the
// append latency histogram, karman_build_info and the Go and process
// collectors; with eng, also RocketMQ's broker metrics (see
// RocketMQCollector) labelled with cluster and node, and the send cost
// histogram.
func New(stats StatsFunc, version string, eng EngineFunc, cluster, node string) *Set {
	reg := prometheus.NewRegistry()
	lat := NewAppendLatency()
	cost := NewSendCost(cluster, node)
	size := NewMessageSize(cluster, node)
	var rpc *RPCLatency
	if eng != nil {
		rpc = NewRPCLatency(cluster, node)
		reg.MustRegister(NewRocketMQCollector(eng, cluster, node), cost, size, rpc)
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "karman_build_info",
		Help:        "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	info.Set(1)
	reg.MustRegister(
		NewCollector(stats),
		lat,
		info,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return &Set{Registry: reg, AppendLatency: lat, SendCost: cost, MessageSize: size, RPCLatency: rpc}
}
