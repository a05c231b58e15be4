package plugins

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the counters of plugins to Prometheus, labelled by
// plugin name: karman_plugin_calls_total, …_failures_total,
// …_timeouts_total, …_rejects_total, …_restarts_total and karman_plugin_up.
// It reads Stats at each scrape; Add the plugins as they are loaded.
type Collector struct {
	mu      sync.Mutex
	plugins []*Plugin
}

// NewCollector returns a Collector of ps.
func NewCollector(ps ...*Plugin) *Collector { return &Collector{plugins: ps} }

// Add adds plugins to the collector.
func (c *Collector) Add(ps ...*Plugin) {
	c.mu.Lock()
	c.plugins = append(c.plugins, ps...)
	c.mu.Unlock()
}

var (
	descCalls    = prometheus.NewDesc("karman_plugin_calls_total", "Calls of the plugin (hooks and connector calls).", []string{"plugin"}, nil)
	descFailures = prometheus.NewDesc("karman_plugin_failures_total", "Plugin calls that failed, timeouts included.", []string{"plugin"}, nil)
	descTimeouts = prometheus.NewDesc("karman_plugin_timeouts_total", "Plugin calls that outlived their deadline.", []string{"plugin"}, nil)
	descRejects  = prometheus.NewDesc("karman_plugin_rejects_total", "Batches or requests the plugin rejected or denied.", []string{"plugin"}, nil)
	descRestarts = prometheus.NewDesc("karman_plugin_restarts_total", "Restarts of the plugin's process attempted.", []string{"plugin"}, nil)
	descUp       = prometheus.NewDesc("karman_plugin_up", "1 when the plugin's process is running.", []string{"plugin"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descFailures, descTimeouts, descRejects, descRestarts, descUp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ps := append([]*Plugin(nil), c.plugins...)
	c.mu.Unlock()
	for _, p := range ps {
		s := p.Stats()
		up := 0.0
		if s.Up {
			up = 1
		}
		for _, m := range []struct {
			d *prometheus.Desc
			v uint64
		}{{descCalls, s.Calls}, {descFailures, s.Failures}, {descTimeouts, s.Timeouts}, {descRejects, s.Rejects}, {descRestarts, s.Restarts}} {
			ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v), s.Name)
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, s.Name)
	}
}
