package standard_test

import (
	"strings"
	"testing"

	"github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

// TestStartOrder checks that the standard set resolves to the ACL and
// the process plugins, whose hooks every front-end runs, then the name
// server, then replication (cluster.ha), then the broker that registers
// with the name server, then gRPC, by their declared dependencies; MQTT
// needs only the ACL and the plugins, and ties are broken by id.
func TestStartOrder(t *testing.T) {
	infos, err := server.Default.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mi := range infos {
		ids = append(ids, string(mi.ID))
	}
	if got, want := strings.Join(ids, " "), "auth.acl plugin.process cluster.ha frontend.mqtt frontend.namesrv frontend.remoting frontend.grpc"; got != want {
		t.Errorf("start order %q, want %q", got, want)
	}
	o, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"namesrv-addr", "broker-addr", "broker-advertise-addr", "broker-namesrv", "broker-name",
		"broker-cluster", "broker-max-inflight-bytes", "grpc-addr", "grpc-advertise-addr", "grpc-tls-cert", "grpc-tls-key", "plugin", "plugin-call-timeout", "plugin-on-failure",
		"auth", "auth-init-user", "auth-init-secret", "auth-clock-skew",
		"mqtt-addr", "mqtt-ws-addr", "mqtt-tls-addr", "mqtt-tls-cert", "mqtt-tls-key",
		"ha-role", "ha-addr", "ha-master", "ha-replication", "ha-min-insync-replicas", "ha-ack-timeout",
		"ha-controller", "ha-broker-id", "ha-advertise-addr", "ha-heartbeat-interval", "ha-controller-lease"} {
		if o.Flags.Lookup(flag) == nil {
			t.Errorf("no --%s", flag)
		}
	}
}
