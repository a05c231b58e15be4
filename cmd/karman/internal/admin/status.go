package admin

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/karmanmq/karman/cluster/ha"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// BrokerStatus is what a broker says about itself in
// GET_BROKER_RUNTIME_INFO, the figures mqadmin clusterList shows.
type BrokerStatus struct {
	Version string `json:"version"`
	// InTPS and OutTPS are the messages stored and pulled per second over
	// the last 10 seconds.
	InTPS  float64 `json:"inTps"`
	OutTPS float64 `json:"outTps"`
	// InToday and OutToday count the messages stored and pulled since
	// midnight (broker time), as far as the broker process has seen.
	InToday  int64 `json:"inToday"`
	OutToday int64 `json:"outToday"`
	// DiskRatio is how full the file system holding the commit log is,
	// between 0 and 1.
	DiskRatio float64   `json:"diskRatio"`
	Booted    time.Time `json:"booted"`
	// Replication is the broker's part in its group's replication; nil
	// for a broker that does not replicate.
	Replication *Replication `json:"replication,omitempty"`
}

// Replication is what a replicated broker reports of its group: its role,
// the master epoch, the in-sync set and how far behind the replicas are.
type Replication struct {
	Role string `json:"role"` // "master" or "replica"
	// BrokerID is the broker's id in its group: the controller's, or the
	// one a replica registers with.
	BrokerID string `json:"brokerId,omitempty"`
	// Controlled is true when the role comes from the controller quorum.
	Controlled  bool  `json:"controlled"`
	MasterEpoch int64 `json:"masterEpoch"`
	// InSync is the group's in-sync set by broker id: the controller's
	// record, or a master's own count ("0" is the master).
	InSync []string `json:"inSync,omitempty"`
	// LagBytes is a replica's distance behind its master.
	LagBytes *int64 `json:"lagBytes,omitempty"`
	// ReplicaLagBytes is each replica's distance as its master sees it.
	ReplicaLagBytes map[string]int64 `json:"replicaLagBytes,omitempty"`
	// Master is a replica's master (its replication address).
	Master string `json:"master,omitempty"`
}

// replicationOf reads the replication figures of a runtime-info table
// (the keys of package cluster/ha); nil without them.
func replicationOf(tab map[string]string) *Replication {
	role := tab[ha.InfoRole]
	if role == "" {
		return nil
	}
	r := &Replication{Role: role, BrokerID: tab[ha.InfoBrokerID], Controlled: tab[ha.InfoController] == "true", Master: tab[ha.InfoMaster]}
	r.MasterEpoch, _ = strconv.ParseInt(tab[ha.InfoMasterEpoch], 10, 64)
	if s := tab[ha.InfoInSync]; s != "" {
		r.InSync = strings.Split(s, ",")
	}
	if s, ok := tab[ha.InfoLag]; ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			r.LagBytes = &n
		}
	}
	if s := tab[ha.InfoReplicaLag]; s != "" {
		var m map[string]int64
		if json.Unmarshal([]byte(s), &m) == nil && len(m) > 0 {
			r.ReplicaLagBytes = m
		}
	}
	return r
}

// BrokerStatus asks broker b for its runtime figures.
func (c *Client) BrokerStatus(ctx context.Context, b Broker) (*BrokerStatus, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	var kv wire.KVTable
	if err := decodeBody(t, wire.GetBrokerRuntimeInfo, resp.Body, &kv); err != nil {
		return nil, err
	}
	tab := kv.Table
	first := func(k string) float64 { // the 10 s figure of "10s 1min 10min"
		f, _ := strconv.ParseFloat(strings.Fields(tab[k] + " 0")[0], 64)
		return f
	}
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(tab[k], 10, 64)
		return n
	}
	ratio, _ := strconv.ParseFloat(tab["commitLogDiskRatio"], 64)
	s := &BrokerStatus{
		Version:     tab["brokerVersionDesc"],
		InTPS:       first("putTps"),
		OutTPS:      first("getTransferredTps"),
		InToday:     num("msgPutTotalTodayNow") - num("msgPutTotalTodayMorning"),
		OutToday:    num("msgGetTotalTodayNow") - num("msgGetTotalTodayMorning"),
		DiskRatio:   ratio,
		Replication: replicationOf(tab),
	}
	if ms := num("bootTimestamp"); ms > 0 {
		s.Booted = time.UnixMilli(ms).UTC()
	}
	return s, nil
}
