package namesrv

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// MasterID is the broker id of a group's master.
const MasterID int64 = 0

// DefaultBrokerTimeout is how long a broker may stay silent before Expire
// drops it, unless its registration asks for another timeout.
const DefaultBrokerTimeout = 120 * time.Second

// Permission bits of a topic's queues.
const (
	PermInherit int32 = 1 << 0
	PermWrite   int32 = 1 << 1
	PermRead    int32 = 1 << 2
)

// Errors. Errors returned by Register match one of these under errors.Is.
var (
	// ErrInvalid: a required field of the registration is empty or out
	// of range.
	ErrInvalid = errors.New("namesrv: invalid registration")
	// ErrStale: another address holds the same broker id with a newer
	// state version; the registration was ignored.
	ErrStale = errors.New("namesrv: stale registration")
	// ErrNotRegistered: a partial registration came from a broker that
	// has not made a complete one yet.
	ErrNotRegistered = errors.New("namesrv: broker not registered")
)

// Options configure a Table. The zero value works.
type Options struct {
	// BrokerTimeout is the default silence after which Expire drops a
	// broker. Default DefaultBrokerTimeout (120 s).
	BrokerTimeout time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DataVersion identifies a version of a broker's topic configuration, as
// the broker numbers it.
type DataVersion struct {
	StateVersion int64
	Timestamp    int64 // unix milliseconds of the last change
	Counter      int64
}

// TopicConfig is one topic as a broker reports it.
type TopicConfig struct {
	Name        string
	ReadQueues  int32
	WriteQueues int32
	Perm        int32 // PermRead | PermWrite | PermInherit
	SysFlag     int32 // Java TopicSysFlag
	Order       bool
}

// BrokerRegistration is what one broker member reports when it registers.
type BrokerRegistration struct {
	Cluster    string // required
	BrokerName string // required
	BrokerID   int64  // MasterID (0) for the master; must not be negative
	Addr       string // required: the address clients dial, "ip:port"
	HAAddr     string // the address replicas replicate from
	ZoneName   string
	// EnableActingMaster lets the replica with the lowest id publish its
	// topics (read-only) while the group has no master.
	EnableActingMaster bool
	// Timeout overrides Options.BrokerTimeout for this member when > 0.
	Timeout     time.Duration
	DataVersion DataVersion
	// Topics is the member's topic set.
	Topics []TopicConfig
	// Partial marks Topics as an increment (new or changed topics only):
	// the group's other topics stay. Otherwise Topics is the complete set
	// and topics missing from it lose this group's queues.
	Partial bool
}

// RegisterResult tells a replica where its master is. Both fields are
// empty for a master, or while the group's master is not registered.
type RegisterResult struct {
	MasterAddr   string
	MasterHAAddr string
}

// BrokerStatus describes one registered broker member.
type BrokerStatus struct {
	Cluster     string
	BrokerName  string
	BrokerID    int64
	Addr        string
	HAAddr      string
	LastUpdate  time.Time
	Timeout     time.Duration
	DataVersion DataVersion
}

// QueueData is the queues one broker group serves for a topic.
type QueueData struct {
	BrokerName  string
	ReadQueues  int32
	WriteQueues int32
	Perm        int32
	SysFlag     int32
	Order       bool
}

// BrokerData is one broker group: its cluster and member addresses.
type BrokerData struct {
	Cluster            string
	BrokerName         string
	Addrs              map[int64]string // broker id → address; MasterID is the master
	ZoneName           string
	EnableActingMaster bool
}

func (b *BrokerData) clone() BrokerData {
	c := *b
	c.Addrs = maps.Clone(b.Addrs)
	return c
}

// Route is the answer to a route query: the queues of a topic and the
// groups that serve them, each sorted by broker name.
type Route struct {
	Queues  []QueueData
	Brokers []BrokerData
}

// ClusterInfo is every broker group and cluster.
type ClusterInfo struct {
	Brokers  map[string]BrokerData // broker name → group
	Clusters map[string][]string   // cluster → broker names, sorted
}

type addrKey struct{ cluster, addr string }

type liveInfo struct {
	brokerName string
	brokerID   int64
	haAddr     string
	last       time.Time
	timeout    time.Duration
	version    DataVersion
}

// Table is the route table. Create it with New.
type Table struct {
	opts Options

	mu       sync.RWMutex
	topics   map[string]map[string]QueueData // topic → broker name → queues
	brokers  map[string]*BrokerData          // broker name → group
	clusters map[string]map[string]struct{}  // cluster → broker names
	live     map[addrKey]*liveInfo
	noWrite  map[string]struct{} // broker names whose write permission was wiped
}

// New returns an empty Table.
func New(opts Options) *Table {
	if opts.BrokerTimeout <= 0 {
		opts.BrokerTimeout = DefaultBrokerTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Table{
		opts:     opts,
		topics:   map[string]map[string]QueueData{},
		brokers:  map[string]*BrokerData{},
		clusters: map[string]map[string]struct{}{},
		live:     map[addrKey]*liveInfo{},
		noWrite:  map[string]struct{}{},
	}
}

func (r *BrokerRegistration) validate() error {
	var missing []string
	if r.Cluster == "" {
		missing = append(missing, "cluster")
	}
	if r.BrokerName == "" {
		missing = append(missing, "broker name")
	}
	if r.Addr == "" {
		missing = append(missing, "broker address")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: empty %s", ErrInvalid, strings.Join(missing, ", "))
	}
	if r.BrokerID < 0 {
		return fmt.Errorf("%w: negative broker id %d", ErrInvalid, r.BrokerID)
	}
	for i := range r.Topics {
		if r.Topics[i].Name == "" {
			return fmt.Errorf("%w: topic %d of %s has no name", ErrInvalid, i, r.BrokerName)
		}
	}
	return nil
}

// Register records a registration of a broker member and returns where its
// master is. See the package comment for how topics are merged.
func (t *Table) Register(r BrokerRegistration) (RegisterResult, error) {
	if err := r.validate(); err != nil {
		return RegisterResult{}, err
	}
	now := t.opts.Now()
	t.mu.Lock()
	defer t.mu.Unlock()

	key := addrKey{r.Cluster, r.Addr}
	group := t.brokers[r.BrokerName]
	if group != nil {
		// A different address under the same id wins only with a state
		// version at least as new (Java: a restarted broker on another
		// host must not be replaced by a stale one).
		if old, ok := group.Addrs[r.BrokerID]; ok && old != r.Addr {
			if prev := t.live[addrKey{r.Cluster, old}]; prev != nil && prev.version.StateVersion > r.DataVersion.StateVersion {
				delete(t.live, key)
				return RegisterResult{}, fmt.Errorf("%w: %s id %d is held by %s with state version %d > %d",
					ErrStale, r.BrokerName, r.BrokerID, old, prev.version.StateVersion, r.DataVersion.StateVersion)
			}
		}
		if _, ok := group.Addrs[r.BrokerID]; !ok && r.Partial {
			return RegisterResult{}, fmt.Errorf("%w: %s id %d sent a partial registration first", ErrNotRegistered, r.BrokerName, r.BrokerID)
		}
	} else if r.Partial {
		return RegisterResult{}, fmt.Errorf("%w: %s id %d sent a partial registration first", ErrNotRegistered, r.BrokerName, r.BrokerID)
	}

	names := t.clusters[r.Cluster]
	if names == nil {
		names = map[string]struct{}{}
		t.clusters[r.Cluster] = names
	}
	names[r.BrokerName] = struct{}{}
	if group == nil {
		group = &BrokerData{Cluster: r.Cluster, BrokerName: r.BrokerName, Addrs: map[int64]string{}}
		t.brokers[r.BrokerName] = group
	}
	group.EnableActingMaster = r.EnableActingMaster
	group.ZoneName = r.ZoneName
	// One address holds one id: a replica promoted to master re-registers
	// under id 0 and its old id goes.
	for id, addr := range group.Addrs {
		if addr == r.Addr && id != r.BrokerID {
			delete(group.Addrs, id)
		}
	}
	group.Addrs[r.BrokerID] = r.Addr

	isMaster := r.BrokerID == MasterID
	actingMaster := !isMaster && r.EnableActingMaster && r.BrokerID == minID(group.Addrs)
	if isMaster || actingMaster {
		t.applyTopics(r, actingMaster)
	}

	timeout := r.Timeout
	if timeout <= 0 {
		timeout = t.opts.BrokerTimeout
	}
	t.live[key] = &liveInfo{
		brokerName: r.BrokerName,
		brokerID:   r.BrokerID,
		haAddr:     r.HAAddr,
		last:       now,
		timeout:    timeout,
		version:    r.DataVersion,
	}

	var res RegisterResult
	if !isMaster {
		if master, ok := group.Addrs[MasterID]; ok {
			if ml := t.live[addrKey{r.Cluster, master}]; ml != nil {
				res.MasterAddr = master
				res.MasterHAAddr = ml.haAddr
			}
		}
	}
	return res, nil
}

// applyTopics sets the queue data of r's group from r.Topics. Called with
// mu held.
func (t *Table) applyTopics(r BrokerRegistration, readOnly bool) {
	if !r.Partial {
		keep := make(map[string]struct{}, len(r.Topics))
		for i := range r.Topics {
			keep[r.Topics[i].Name] = struct{}{}
		}
		for topic, queues := range t.topics {
			if _, ok := keep[topic]; ok {
				continue
			}
			if _, ok := queues[r.BrokerName]; ok {
				delete(queues, r.BrokerName)
				if len(queues) == 0 {
					delete(t.topics, topic)
				}
			}
		}
	}
	_, wiped := t.noWrite[r.BrokerName]
	for _, tc := range r.Topics {
		perm := tc.Perm
		if readOnly || wiped {
			perm &^= PermWrite
		}
		queues := t.topics[tc.Name]
		if queues == nil {
			queues = map[string]QueueData{}
			t.topics[tc.Name] = queues
		}
		queues[r.BrokerName] = QueueData{
			BrokerName:  r.BrokerName,
			ReadQueues:  tc.ReadQueues,
			WriteQueues: tc.WriteQueues,
			Perm:        perm,
			SysFlag:     tc.SysFlag,
			Order:       tc.Order,
		}
	}
}

func minID(addrs map[int64]string) int64 {
	first := true
	var m int64
	for id := range addrs {
		if first || id < m {
			m, first = id, false
		}
	}
	return m
}

// Unregister removes the member at addr from the broker group brokerName
// of cluster, as a broker does when it shuts down. When the group has no
// member left, its queue data is dropped, and topics left without queues
// are forgotten. brokerID is informational: the address identifies the
// member. It reports whether anything was removed.
func (t *Table) Unregister(cluster, brokerName, addr string, brokerID int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unregister(cluster, brokerName, addr)
}

// unregister is Unregister with mu held.
func (t *Table) unregister(cluster, brokerName, addr string) bool {
	_, removed := t.live[addrKey{cluster, addr}]
	delete(t.live, addrKey{cluster, addr})

	group := t.brokers[brokerName]
	if group == nil {
		return removed
	}
	for id, a := range group.Addrs {
		if a == addr {
			delete(group.Addrs, id)
			removed = true
		}
	}
	if len(group.Addrs) > 0 {
		// An acting-master group that lost its master stops taking writes.
		if _, ok := group.Addrs[MasterID]; !ok && group.EnableActingMaster {
			for _, queues := range t.topics {
				if q, ok := queues[brokerName]; ok {
					q.Perm &^= PermWrite
					queues[brokerName] = q
				}
			}
		}
		return removed
	}
	delete(t.brokers, brokerName)
	delete(t.noWrite, brokerName) // a group that registers again writes again, as in Java
	if names := t.clusters[group.Cluster]; names != nil {
		delete(names, brokerName)
		if len(names) == 0 {
			delete(t.clusters, group.Cluster)
		}
	}
	for topic, queues := range t.topics {
		delete(queues, brokerName)
		if len(queues) == 0 {
			delete(t.topics, topic)
		}
	}
	return true
}

// WipeWritePerm takes the write permission of broker group brokerName
// away in every topic it serves, and keeps it away from the group's later
// registrations, so that producers stop sending to it while consumers
// drain it (before maintenance). It lasts until AddWritePerm, or until the
// group's last member is gone. It returns the number of topics changed.
func (t *Table) WipeWritePerm(brokerName string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.brokers[brokerName]; ok {
		t.noWrite[brokerName] = struct{}{}
	}
	return t.setPerm(brokerName, func(p int32) int32 { return p &^ PermWrite })
}

// AddWritePerm undoes WipeWritePerm: every topic of broker group
// brokerName becomes readable and writable again (as in Java, whatever
// its permission was), and later registrations keep their own. It returns
// the number of topics changed.
func (t *Table) AddWritePerm(brokerName string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.noWrite, brokerName)
	return t.setPerm(brokerName, func(int32) int32 { return PermRead | PermWrite })
}

// setPerm replaces the permission of every topic of brokerName with
// f(permission) and returns how many topics it found. Called with mu held.
func (t *Table) setPerm(brokerName string, f func(int32) int32) int {
	n := 0
	for _, queues := range t.topics {
		if q, ok := queues[brokerName]; ok {
			q.Perm = f(q.Perm)
			queues[brokerName] = q
			n++
		}
	}
	return n
}

// Expire drops every member whose last registration is older than its
// timeout at now, as Unregister would, and returns them sorted by cluster,
// broker name and id.
func (t *Table) Expire(now time.Time) []BrokerStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []BrokerStatus
	for key, li := range t.live {
		if !now.After(li.last.Add(li.timeout)) {
			continue
		}
		gone = append(gone, status(key, li))
		t.unregister(key.cluster, li.brokerName, key.addr)
	}
	sortStatus(gone)
	return gone
}

func status(key addrKey, li *liveInfo) BrokerStatus {
	return BrokerStatus{
		Cluster:     key.cluster,
		BrokerName:  li.brokerName,
		BrokerID:    li.brokerID,
		Addr:        key.addr,
		HAAddr:      li.haAddr,
		LastUpdate:  li.last,
		Timeout:     li.timeout,
		DataVersion: li.version,
	}
}

func sortStatus(s []BrokerStatus) {
	slices.SortFunc(s, func(a, b BrokerStatus) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
			return c
		}
		if a.BrokerID != b.BrokerID {
			if a.BrokerID < b.BrokerID {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Addr, b.Addr)
	})
}

// Brokers returns every registered member, sorted by cluster, broker name
// and id.
func (t *Table) Brokers() []BrokerStatus {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]BrokerStatus, 0, len(t.live))
	for key, li := range t.live {
		out = append(out, status(key, li))
	}
	sortStatus(out)
	return out
}
