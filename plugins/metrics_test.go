package plugins

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollector(t *testing.T) {
	p := load(t, "guard="+program("testplugin"), Options{})
	e := openEngine(t, t.TempDir(), p.Hooks())
	if _, err := e.Send(context.Background(), msg("a", "reject", "no")); err == nil {
		t.Fatal("send not rejected")
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(p))
	want := `
# HELP karman_plugin_calls_total Calls of the plugin (hooks and connector calls).
# TYPE karman_plugin_calls_total counter
karman_plugin_calls_total{plugin="guard"} 1
# HELP karman_plugin_rejects_total Batches or requests the plugin rejected or denied.
# TYPE karman_plugin_rejects_total counter
karman_plugin_rejects_total{plugin="guard"} 1
# HELP karman_plugin_up 1 when the plugin's process is running.
# TYPE karman_plugin_up gauge
karman_plugin_up{plugin="guard"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karman_plugin_calls_total", "karman_plugin_rejects_total", "karman_plugin_up"); err != nil {
		t.Fatal(err)
	}
}
