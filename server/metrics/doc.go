// Package metrics exposes the engine to Prometheus.
//
// The Collector reads engine statistics when Prometheus scrapes, so the
// engine keeps plain counters and pays nothing between scrapes. The append
// latency histogram is fed by the engine's AppendLatency hook. New builds
// the registry serve puts on /metrics: these two, build information, and
// the Go runtime and process collectors.
//
// Concurrency: the collector and the histogram are safe for concurrent use
// (Prometheus scrapes while the engine observes).
package metrics
