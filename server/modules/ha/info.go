package ha

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/karmanmq/karman/cluster/ha"
	"github.com/karmanmq/karman/engine"
)

// Keys of RuntimeInfo (package cluster/ha names them).
const (
	InfoRole        = ha.InfoRole
	InfoBrokerID    = ha.InfoBrokerID
	InfoMasterEpoch = ha.InfoMasterEpoch
	InfoInSync      = ha.InfoInSync
	InfoReplicaLag  = ha.InfoReplicaLag
	InfoLag         = ha.InfoLag
	InfoMaster      = ha.InfoMaster
	InfoController  = ha.InfoController
)

// ReplicaLag is one replica's lag as its master sees it.
type ReplicaLag struct {
	ID     string
	Bytes  int64
	InSync bool
	// Behind is how long the replica has not held the master's whole
	// log; 0 when it does.
	Behind time.Duration
}

// replicaLags returns a master's replicas, or nil when this broker is not
// serving as master.
func (m *Module) replicaLags() []ReplicaLag {
	if m.master == nil || m.eng == nil || m.eng.Role() != engine.RoleMaster {
		return nil
	}
	now := time.Now()
	var out []ReplicaLag
	for _, r := range m.master.Replicas() {
		l := ReplicaLag{ID: r.ID, Bytes: r.Lag, InSync: r.InSync}
		if r.Lag > 0 && !r.CaughtUp.IsZero() {
			l.Behind = now.Sub(r.CaughtUp)
		}
		out = append(out, l)
	}
	return out
}

// masterEpoch is the epoch of the group's master as this broker knows it:
// the controller's record, else the last epoch of its log.
func (m *Module) masterEpoch() int64 {
	if m.ctl != nil {
		if g, ok := m.ctl.group(); ok {
			return int64(g.MasterEpoch)
		}
	}
	if m.eng == nil {
		return 0
	}
	if eps := m.eng.Epochs(); len(eps) > 0 {
		return int64(eps[len(eps)-1].Epoch)
	}
	return 0
}

// inSyncSet is the group's in-sync set: the controller's record, else,
// on a master, the master ("0") and its replicas in sync.
func (m *Module) inSyncSet() []string {
	if m.ctl != nil {
		g, ok := m.ctl.group()
		if !ok {
			return nil
		}
		out := make([]string, len(g.SyncStateSet))
		for i, id := range g.SyncStateSet {
			out[i] = strconv.FormatInt(id, 10)
		}
		return out
	}
	if m.Config.Role != RoleMaster {
		return nil
	}
	set := []string{"0"}
	for _, r := range m.replicaLags() {
		if r.InSync && !slices.Contains(set, r.ID) {
			set = append(set, r.ID)
		}
	}
	return set
}

// ownLag is a replica's lag behind its master.
func (m *Module) ownLag() (int64, bool) {
	if m.ctl != nil {
		return m.ctl.replicaLag()
	}
	if m.replica != nil && m.running.Load() {
		return m.replica.Lag(), true
	}
	return 0, false
}

// RuntimeInfo describes the replication for the broker's runtime
// information (the Info* keys); nil without replication.
func (m *Module) RuntimeInfo() map[string]string {
	role := m.ReplicationRole()
	if role == RoleNone {
		return nil
	}
	info := map[string]string{
		InfoRole:        role,
		InfoMasterEpoch: strconv.FormatInt(m.masterEpoch(), 10),
	}
	if m.ctl != nil {
		info[InfoController] = "true"
		info[InfoBrokerID] = strconv.FormatInt(m.Config.BrokerID, 10)
		if g, ok := m.ctl.group(); ok && role == RoleReplica {
			if mm, ok := g.Master(); ok {
				info[InfoMaster] = mm.HAAddr
			}
		}
	} else if role == RoleReplica {
		info[InfoBrokerID] = m.replicaID
		info[InfoMaster] = m.Config.Master
	}
	if set := m.inSyncSet(); set != nil {
		info[InfoInSync] = strings.Join(set, ",")
	}
	if role == RoleMaster {
		lags := map[string]int64{}
		for _, r := range m.replicaLags() {
			lags[r.ID] = r.Bytes
		}
		b, _ := json.Marshal(lags)
		info[InfoReplicaLag] = string(b)
	} else if lag, ok := m.ownLag(); ok {
		info[InfoLag] = strconv.FormatInt(lag, 10)
	}
	return info
}
