package standard_test

import (
	"strings"
	"testing"

	"github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

// TestStartOrder checks that the standard set resolves to the name
// server and the process plugins, then the broker that registers with
// the one and runs the hooks of the other, then gRPC, by their declared
// dependencies; replication (cluster.ha) before the broker.
func TestStartOrder(t *testing.T) {
	infos, err := server.Default.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mi := range infos {
		ids = append(ids, string(mi.ID))
	}
	if got, want := strings.Join(ids, " "), "frontend.namesrv plugin.process cluster.ha frontend.remoting frontend.grpc"; got != want {
		t.Errorf("start order %q, want %q", got, want)
	}
	o, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"namesrv-addr", "broker-addr", "broker-advertise-addr", "broker-namesrv", "broker-name",
		"broker-cluster", "broker-max-inflight-bytes", "grpc-addr", "grpc-advertise-addr", "grpc-tls-cert", "grpc-tls-key", "plugin", "plugin-call-timeout", "plugin-on-failure",
		"ha-role", "ha-addr", "ha-master", "ha-replication", "ha-min-insync-replicas", "ha-ack-timeout"} {
		if o.Flags.Lookup(flag) == nil {
			t.Errorf("no --%s", flag)
		}
	}
}
