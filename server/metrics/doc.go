// Package metrics exposes the engine to Prometheus.
//
// The Collector reads engine statistics when Prometheus scrapes, so the
// engine keeps plain counters and pays nothing between scrapes. The append
// latency histogram is fed by the engine's AppendLatency hook. New builds
// the registry serve puts on /metrics: these two, build information, and
// the Go runtime and process collectors.
//
// RocketMQCollector serves RocketMQ 5's broker metrics (RIP-46) under the
// Java broker's names and labels, computed from the engine at scrape time
// (Stats, committed offsets, the client registry); NewSendCost is the
// rocketmq_send_cost_time histogram the engine's SendLatency hook feeds;
// RPCLatency is rocketmq_rpc_latency, fed by the remoting and gRPC
// front-ends (Host.RPCLatency) with the time they take to answer each
// request, and by the name server through RPCLatency.NameServer
// (node_type "nameserver"). grafana/karman.json is a dashboard on both sets.
//
// Concurrency: the collector and the histogram are safe for concurrent use
// (Prometheus scrapes while the engine observes).
package metrics
