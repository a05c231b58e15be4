//go:build !race && unix

package compat

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// noMQTT turns the MQTT listeners off for tests that do not use them.
var noMQTT = []string{"--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off"}

// clusterList is "karman admin cluster list --json" as the tests read it.
type clusterList struct {
	Brokers []struct {
		Cluster string `json:"cluster"`
		Name    string `json:"brokerName"`
		ID      int64  `json:"brokerId"`
		Addr    string `json:"address"`
		Status  *struct {
			Replication *struct {
				Role            string           `json:"role"`
				BrokerID        string           `json:"brokerId"`
				Controlled      bool             `json:"controlled"`
				MasterEpoch     int64            `json:"masterEpoch"`
				InSync          []string         `json:"inSync"`
				LagBytes        *int64           `json:"lagBytes"`
				ReplicaLagBytes map[string]int64 `json:"replicaLagBytes"`
				Master          string           `json:"master"`
			} `json:"replication"`
		} `json:"status"`
	} `json:"brokers"`
}

// A master and two replicas without a controller, each a karman binary:
// the replicas register with the name server under their own ids (one
// given with --ha-broker-id, one derived from its address), and "admin
// cluster list" shows each broker's role, the master epoch, the master's
// in-sync set and every replica's lag.
func TestClusterListReplicasWithoutController(t *testing.T) {
	t.Parallel()
	ha := freeAddr(t)
	a := startBinary(t, slices.Concat(noMQTT, []string{"--ha-role", "master", "--ha-addr", ha, "--ha-replication", "async"})...)
	b := startBinary(t, slices.Concat(noMQTT, []string{"--ha-role", "replica", "--ha-master", ha, "--broker-namesrv", a.namesrv, "--ha-broker-id", "2"})...)
	c := startBinary(t, slices.Concat(noMQTT, []string{"--ha-role", "replica", "--ha-master", ha, "--broker-namesrv", a.namesrv})...)
	a.createTopic("ClusterListTopic", 2)
	p := a.producer()
	for i := range 20 {
		p.send(primitive.NewMessage("ClusterListTopic", []byte(fmt.Sprint("m", i))))
	}

	var cl clusterList
	pollUntil(t, "three brokers in sync with no lag", 30*time.Second, func() bool {
		cl = clusterList{}
		a.adminCLI(&cl, "cluster", "list")
		if len(cl.Brokers) != 3 {
			return false
		}
		for _, br := range cl.Brokers {
			if br.Status == nil || br.Status.Replication == nil {
				return false
			}
			r := br.Status.Replication
			if r.Role == "master" && (len(r.InSync) != 3 || len(r.ReplicaLagBytes) != 2) {
				return false
			}
			if r.Role == "replica" && (r.LagBytes == nil || *r.LagBytes != 0) {
				return false
			}
		}
		return true
	})
	ids := map[int64]string{}
	var master []string
	for _, br := range cl.Brokers {
		r := br.Status.Replication
		if prev, dup := ids[br.ID]; dup {
			t.Fatalf("%s and %s share broker id %d: %+v", prev, br.Addr, br.ID, cl)
		}
		ids[br.ID] = br.Addr
		switch br.Addr {
		case a.broker:
			if br.ID != 0 || r.Role != "master" || r.MasterEpoch != 1 || r.Controlled {
				t.Errorf("master: id %d, %+v", br.ID, *r)
			}
			master = r.InSync
			for id, lag := range r.ReplicaLagBytes {
				if lag != 0 {
					t.Errorf("the master sees replica %s %d bytes behind", id, lag)
				}
			}
		case b.broker:
			if br.ID != 2 || r.Role != "replica" || r.BrokerID != "2" || r.Master != ha || r.MasterEpoch != 1 {
				t.Errorf("replica with --ha-broker-id 2: id %d, %+v", br.ID, *r)
			}
		case c.broker:
			if br.ID < 1 || br.ID == 2 || r.Role != "replica" || r.BrokerID != strconv.FormatInt(br.ID, 10) {
				t.Errorf("replica with a derived id: id %d, %+v", br.ID, *r)
			}
		default:
			t.Errorf("unknown broker %s", br.Addr)
		}
	}
	slices.Sort(master)
	want := []string{"0", "2"}
	for id := range ids {
		if id != 0 && id != 2 {
			want = append(want, strconv.FormatInt(id, 10))
		}
	}
	slices.Sort(want)
	if !slices.Equal(master, want) {
		t.Errorf("in-sync set %v, want %v (the master and both replicas by their name-server ids)", master, want)
	}

	// The table shows the same.
	out := a.adminTable("cluster", "list")
	for _, s := range []string{"ROLE", "EPOCH", "IN SYNC", "LAG", "replica(2)"} {
		if !strings.Contains(out, s) {
			t.Errorf("cluster list table lacks %q:\n%s", s, out)
		}
	}
}

// adminTable runs "karman admin ARGS" (the binary, table output) against
// k's name server and returns what it printed.
func (k *karman) adminTable(args ...string) string {
	k.t.Helper()
	out, err := exec.Command(karmanBinary(k.t), slices.Concat([]string{"admin", "--namesrv", k.namesrv, "--timeout", "10s"}, args)...).CombinedOutput()
	if err != nil {
		k.t.Fatalf("karman admin %v: %v\n%s", args, err, out)
	}
	return string(out)
}
