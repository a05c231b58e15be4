package metrics

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/prometheus/client_golang/prometheus"
)

// RocketMQ 5's broker metrics (RIP-46), by the names and labels of the
// Java broker's BrokerMetricsConstant, so that dashboards made for
// RocketMQ work on Karman. Every series carries cluster, node_type
// ("broker") and node_id (the broker name).
const (
	labelCluster   = "cluster"
	labelNodeType  = "node_type"
	labelNodeID    = "node_id"
	labelTopic     = "topic"
	labelGroup     = "consumer_group"
	labelMsgType   = "message_type"
	labelIsRetry   = "is_retry"
	labelIsSystem  = "is_system"
	labelLanguage  = "language"
	labelVersion   = "version"
	labelMode      = "consume_mode"
	labelInvStatus = "invocation_status"
	// rocketmq_rpc_latency's
	labelProtocol     = "protocol_type"
	labelRequestCode  = "request_code"
	labelResponseCode = "response_code"
	nodeTypeBroker    = "broker"
	// the name server's node_type in rocketmq_rpc_latency
	nodeTypeNameServer = "nameserver"
)

// EngineFunc calls visit with the open engine and reports true, or
// reports false without calling it while no engine is open. The engine
// stays open until visit returns.
type EngineFunc func(visit func(*engine.Engine)) bool

// RocketMQCollector computes RocketMQ's broker metrics from the engine at
// scrape time.
type RocketMQCollector struct {
	eng EngineFunc

	messagesIn, throughputIn, messagesOut, throughputOut,
	lag, inflight, ready, consumerConns, producerConns,
	sendToDLQ, storageSize, dispatchBehind, flushBehind, halfMessages, commits, rollbacks *prometheus.Desc
}

// NewRocketMQCollector returns the collector of RocketMQ's broker metrics
// for the broker node of cluster.
func NewRocketMQCollector(eng EngineFunc, cluster, node string) *RocketMQCollector {
	c := prometheus.Labels{labelCluster: cluster, labelNodeType: nodeTypeBroker, labelNodeID: node}
	in := []string{labelTopic, labelMsgType, labelIsSystem}
	out := []string{labelTopic, labelGroup, labelIsRetry, labelIsSystem}
	return &RocketMQCollector{
		eng:           eng,
		messagesIn:    prometheus.NewDesc("rocketmq_messages_in_total", "Messages stored in the topic.", in, c),
		throughputIn:  prometheus.NewDesc("rocketmq_throughput_in_total", "Message body bytes stored in the topic.", in, c),
		messagesOut:   prometheus.NewDesc("rocketmq_messages_out_total", "Messages delivered from the topic to the consumer group (pulled or popped).", out, c),
		throughputOut: prometheus.NewDesc("rocketmq_throughput_out_total", "Stored record bytes delivered from the topic to the consumer group.", out, c),
		lag:           prometheus.NewDesc("rocketmq_consumer_lag_messages", "Messages of the topic stored after the group's committed offsets, over its queues.", out, c),
		inflight:      prometheus.NewDesc("rocketmq_consumer_inflight_messages", "Messages the group has popped and not yet acknowledged (pop and gRPC consumers; pulls are not tracked per message).", out, c),
		ready:         prometheus.NewDesc("rocketmq_consumer_ready_messages", "Messages of the topic ready for the group: its lag less those in flight.", out, c),
		consumerConns: prometheus.NewDesc("rocketmq_consumer_connections", "Online consumers of the group.", []string{labelGroup, labelIsRetry, labelIsSystem, labelLanguage, labelVersion, labelMode}, c),
		producerConns: prometheus.NewDesc("rocketmq_producer_connections", "Online producers.", []string{labelLanguage, labelVersion}, c),
		sendToDLQ: prometheus.NewDesc("rocketmq_send_to_dlq_messages_total",
			"Messages the consumer group's retries moved to its dead-letter topic (or that were resent there).", []string{labelGroup, labelIsSystem}, c),
		storageSize:    prometheus.NewDesc("rocketmq_storage_size", "Bytes of the commit-log segments on disk.", nil, c),
		dispatchBehind: prometheus.NewDesc("rocketmq_storage_dispatch_behind_bytes", "Bytes of the commit log not yet indexed into the consume queues.", nil, c),
		flushBehind:    prometheus.NewDesc("rocketmq_storage_flush_behind_bytes", "Bytes of the commit log written but not yet flushed to disk.", nil, c),
		halfMessages:   prometheus.NewDesc("rocketmq_half_messages", "Transactional half messages waiting for their producer's commit or rollback (RocketMQ labels them by topic; Karman counts them per broker, up to 1,000,000).", nil, c),
		commits:        prometheus.NewDesc("rocketmq_commit_messages_total", "Transactional messages committed (RocketMQ labels them by topic; Karman counts them per broker).", nil, c),
		rollbacks:      prometheus.NewDesc("rocketmq_rollback_messages_total", "Transactional messages rolled back (per broker).", nil, c),
	}
}

// Describe implements prometheus.Collector.
func (c *RocketMQCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.messagesIn, c.throughputIn, c.messagesOut, c.throughputOut, c.lag, c.inflight, c.ready, c.consumerConns, c.producerConns,
		c.sendToDLQ, c.storageSize, c.dispatchBehind, c.flushBehind, c.halfMessages, c.commits, c.rollbacks} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *RocketMQCollector) Collect(ch chan<- prometheus.Metric) {
	c.eng(func(e *engine.Engine) { c.collect(e, ch) })
}

type groupTopic struct{ group, topic string }

// maxHalfCount bounds the half messages a scrape counts: the count reads
// the index of pending ones.
const maxHalfCount = 1_000_000

func (c *RocketMQCollector) collect(e *engine.Engine, ch chan<- prometheus.Metric) {
	st := e.Stats()
	topics := map[string]meta.Topic{}
	for _, t := range e.Topics() {
		topics[t.Name] = t
	}
	ch <- prometheus.MustNewConstMetric(c.storageSize, prometheus.GaugeValue, float64(st.DiskBytes))
	ch <- prometheus.MustNewConstMetric(c.dispatchBehind, prometheus.GaugeValue, float64(max(st.LogEndOffset-st.DispatchedOffset, 0)))
	ch <- prometheus.MustNewConstMetric(c.flushBehind, prometheus.GaugeValue, float64(max(st.LogEndOffset-st.LogFlushedOffset, 0)))
	if n, err := e.HalfMessages(maxHalfCount); err == nil {
		ch <- prometheus.MustNewConstMetric(c.halfMessages, prometheus.GaugeValue, float64(n))
	}
	ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(st.TransactionsCommitted))
	ch <- prometheus.MustNewConstMetric(c.rollbacks, prometheus.CounterValue, float64(st.TransactionsRolledBack))
	inflight := map[groupTopic]int64{}
	for _, ts := range st.Topics {
		t := topics[ts.Topic]
		if message.IsDLQTopic(ts.Topic) {
			// What a dead-letter topic took in since the start is what its
			// group sent there.
			group := strings.TrimPrefix(ts.Topic, message.DLQTopicPrefix)
			ch <- prometheus.MustNewConstMetric(c.sendToDLQ, prometheus.CounterValue, float64(ts.MessagesIn), group, boolLabel(isSystemGroup(group)))
		}
		sys := boolLabel(isSystemTopic(t))
		typ := messageType(t)
		ch <- prometheus.MustNewConstMetric(c.messagesIn, prometheus.CounterValue, float64(ts.MessagesIn), ts.Topic, typ, sys)
		ch <- prometheus.MustNewConstMetric(c.throughputIn, prometheus.CounterValue, float64(ts.BytesIn), ts.Topic, typ, sys)
		retry := boolLabel(message.IsRetryTopic(ts.Topic))
		for _, g := range ts.Groups {
			if g.Group == "" {
				continue // pulls that named no group
			}
			ch <- prometheus.MustNewConstMetric(c.messagesOut, prometheus.CounterValue, float64(g.MessagesOut), ts.Topic, g.Group, retry, sys)
			ch <- prometheus.MustNewConstMetric(c.throughputOut, prometheus.CounterValue, float64(g.BytesOut), ts.Topic, g.Group, retry, sys)
			inflight[groupTopic{g.Group, ts.Topic}] = g.Inflight
		}
	}
	reg := e.Clients()
	groups := map[string]bool{}
	for _, g := range e.Groups() {
		groups[g.Name] = true
	}
	for _, g := range reg.ConsumerGroups() {
		groups[g] = true
	}
	for group := range groups {
		names, err := e.TopicsConsumedBy(group)
		if err != nil {
			continue
		}
		for _, topic := range names {
			t, ok := topics[topic]
			if !ok {
				continue
			}
			lag, ok := groupLag(e, group, t)
			if !ok {
				continue
			}
			fl := inflight[groupTopic{group, topic}]
			sys := boolLabel(isSystemTopic(t) || isSystemGroup(group))
			retry := boolLabel(message.IsRetryTopic(topic))
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(lag), topic, group, retry, sys)
			ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(fl), topic, group, retry, sys)
			ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(max(lag-fl, 0)), topic, group, retry, sys)
		}
	}
	// Connections by what the clients say they are (RocketMQ counts
	// them by language and version too).
	type connKey struct{ mode, language, version string }
	for _, group := range reg.ConsumerGroups() {
		conns := map[connKey]int{}
		for _, ci := range reg.Consumers(group) {
			conns[connKey{consumeMode(ci.Type), ci.Language, ci.Version}]++
		}
		sys := boolLabel(isSystemGroup(group))
		for k, n := range conns {
			ch <- prometheus.MustNewConstMetric(c.consumerConns, prometheus.GaugeValue, float64(n), group, "false", sys, k.language, k.version, k.mode)
		}
	}
	producers := map[registry.ClientID]connKey{}
	for _, group := range reg.ProducerGroups() {
		for _, ci := range reg.Producers(group) {
			producers[ci.ID] = connKey{language: ci.Language, version: ci.Version}
		}
	}
	byKind := map[connKey]int{}
	for _, k := range producers {
		byKind[k]++
	}
	if len(byKind) == 0 {
		byKind[connKey{}] = 0
	}
	for k, n := range byKind {
		ch <- prometheus.MustNewConstMetric(c.producerConns, prometheus.GaugeValue, float64(n), k.language, k.version)
	}
}

// groupLag sums, over the topic's queues, the messages stored after the
// group's committed offset (from the queue's first stored message where
// it has none).
func groupLag(e *engine.Engine, group string, t meta.Topic) (int64, bool) {
	committed, err := e.ConsumerOffsets(group, t.Name)
	if err != nil && !errors.Is(err, engine.ErrNoOffset) {
		return 0, false
	}
	var lag int64
	for q := range t.ReadQueues {
		maxOff, err := e.MaxOffset(t.Name, q)
		if err != nil {
			return 0, false
		}
		off, ok := committed[q]
		if !ok {
			if off, err = e.MinOffset(t.Name, q); err != nil {
				return 0, false
			}
		}
		lag += max(maxOff-off, 0)
	}
	return lag, true
}

// isSystemGroup reports whether a group is one RocketMQ's tools use.
func isSystemGroup(g string) bool {
	return g == message.GroupTools || strings.HasPrefix(g, "CID_RMQ_SYS_")
}

func isSystemTopic(t meta.Topic) bool { return t.System || message.IsSystemTopic(t.Name) }

// messageType is the topic's message type as RocketMQ's metrics write it:
// Normal, FIFO, Delay, Transaction; topics of no type (or MIXED) count as
// Normal.
func messageType(t meta.Topic) string {
	switch t.MessageType {
	case meta.MessageTypeFIFO:
		return "FIFO"
	case meta.MessageTypeDelay:
		return "Delay"
	case meta.MessageTypeTransaction:
		return "Transaction"
	}
	return "Normal"
}

// consumeMode is the consume_mode label of a consumer: push, pull or pop.
func consumeMode(t registry.ConsumeType) string {
	switch t {
	case registry.ConsumePull:
		return "pull"
	case registry.ConsumeSimple:
		return "pop"
	}
	return "push"
}

func boolLabel(b bool) string { return strconv.FormatBool(b) }

// NewSendCost returns the histogram of send durations in milliseconds,
// rocketmq_send_cost_time, of the broker node of cluster, by topic and
// invocation_status (success or failure), with RocketMQ's buckets.
// RocketMQ's clients keep this histogram per client (client_id); a broker
// keeps it per topic, since a label per client would make series without
// end.
func NewSendCost(cluster, node string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "rocketmq_send_cost_time",
		ConstLabels: prometheus.Labels{labelCluster: cluster, labelNodeType: nodeTypeBroker, labelNodeID: node},
		Help:        "Time the broker took to answer a send (hooks, checks, append, and the flush under sync flush), in milliseconds.",
		Buckets:     []float64{1, 5, 10, 20, 50, 200, 500},
	}, []string{labelTopic, labelInvStatus})
}

// NewMessageSize returns the histogram of stored message body sizes in
// bytes, rocketmq_message_size, by topic, with RocketMQ's buckets (1 KiB
// to 4 MiB). RocketMQ also labels it with the message type.
func NewMessageSize(cluster, node string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "rocketmq_message_size",
		ConstLabels: prometheus.Labels{labelCluster: cluster, labelNodeType: nodeTypeBroker, labelNodeID: node},
		Help:        "Body sizes of the messages stored, in bytes.",
		Buckets:     []float64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20},
	}, []string{labelTopic})
}

// ObserveSend records one send in h. Sends to topics that do not exist or
// have invalid names count under topic "", so that bad requests cannot
// make series without end.
func ObserveSend(h *prometheus.HistogramVec, topic string, ms float64, err error) {
	status := "success"
	if err != nil {
		status = "failure"
		if errors.Is(err, engine.ErrTopicNotFound) || errors.Is(err, engine.ErrInvalidTopic) {
			topic = ""
		}
	}
	h.WithLabelValues(topic, status).Observe(ms)
}

// RPCLatency is rocketmq_rpc_latency: how long the node took to answer
// each request, in milliseconds, by protocol_type (remoting, grpc),
// request_code and response_code, with RocketMQ's buckets. Observing
// resolves a series once per label set and keeps it, so that an
// observation costs a map read and the histogram's own atomics.
//
// The broker's requests carry node_type "broker"; NameServer returns the
// histogram of the name server in the same process, node_type
// "nameserver", collected with it.
type RPCLatency struct {
	vec   *prometheus.HistogramVec
	named sync.Map // [3]string → prometheus.Observer
	ns    *RPCLatency
}

// NewRPCLatency returns the histogram of the node of cluster.
func NewRPCLatency(cluster, node string) *RPCLatency {
	l := newRPCLatency(cluster, nodeTypeBroker, node)
	l.ns = newRPCLatency(cluster, nodeTypeNameServer, node)
	return l
}

func newRPCLatency(cluster, nodeType, node string) *RPCLatency {
	return &RPCLatency{vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "rocketmq_rpc_latency",
		ConstLabels: prometheus.Labels{labelCluster: cluster, labelNodeType: nodeType, labelNodeID: node},
		Help:        "Time the broker or name server took to answer a request, from its routing to its answer (long polls included), in milliseconds.",
		Buckets:     []float64{1, 3, 5, 10, 100, 1000, 3000},
	}, []string{labelProtocol, labelRequestCode, labelResponseCode})}
}

// NameServer returns the histogram the name server's requests go to.
func (l *RPCLatency) NameServer() *RPCLatency { return l.ns }

// Describe implements prometheus.Collector.
func (l *RPCLatency) Describe(ch chan<- *prometheus.Desc) {
	l.vec.Describe(ch)
	if l.ns != nil {
		l.ns.vec.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (l *RPCLatency) Collect(ch chan<- prometheus.Metric) {
	l.vec.Collect(ch)
	if l.ns != nil {
		l.ns.vec.Collect(ch)
	}
}

// Observe records one request of protocol. request and response must come
// from bounded sets (the routes served, their answers' codes): each label
// set is a series kept for good.
func (l *RPCLatency) Observe(protocol, request, response string, d time.Duration) {
	k := [3]string{protocol, request, response}
	o, ok := l.named.Load(k)
	if !ok {
		o, _ = l.named.LoadOrStore(k, l.vec.WithLabelValues(protocol, request, response))
	}
	o.(prometheus.Observer).Observe(float64(d.Nanoseconds()) / 1e6)
}

// Coded returns what observes the requests of protocol whose request and
// response codes are numbers: name gives their labels the first time a
// pair is seen, later ones find its series by the numbers alone.
func (l *RPCLatency) Coded(protocol string, name func(request, response int32) (string, string)) func(request, response int32, d time.Duration) {
	var byCode sync.Map // uint64 → prometheus.Observer
	return func(request, response int32, d time.Duration) {
		k := uint64(uint32(request))<<32 | uint64(uint32(response))
		o, ok := byCode.Load(k)
		if !ok {
			req, resp := name(request, response)
			o, _ = byCode.LoadOrStore(k, l.vec.WithLabelValues(protocol, req, resp))
		}
		o.(prometheus.Observer).Observe(float64(d.Nanoseconds()) / 1e6)
	}
}
