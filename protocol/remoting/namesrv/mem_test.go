package namesrv

import (
	"maps"
	"slices"
	"sync"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// memRoutes is a small in-memory route table for the processor tests. It
// keeps the last registration of every member and derives routes from the
// masters' topics, merging partial registrations.
type memRoutes struct {
	mu      sync.Mutex
	members map[string]Registration // addr → last registration
	topics  map[string]map[string]TopicConfig
	log     []Registration // every registration, in order
	refuse  error          // Register fails with it when set
}

func newMemRoutes() *memRoutes {
	return &memRoutes{members: map[string]Registration{}, topics: map[string]map[string]TopicConfig{}}
}

func (m *memRoutes) Register(r Registration) (RegisterResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refuse != nil {
		return RegisterResult{}, m.refuse
	}
	m.log = append(m.log, r)
	m.members[r.Addr] = r
	if r.BrokerID == 0 {
		if !r.Partial {
			for _, ts := range m.topics {
				delete(ts, r.BrokerName)
			}
		}
		for _, t := range r.Topics {
			if m.topics[t.TopicName] == nil {
				m.topics[t.TopicName] = map[string]TopicConfig{}
			}
			m.topics[t.TopicName][r.BrokerName] = t
		}
		return RegisterResult{}, nil
	}
	for _, o := range m.members {
		if o.BrokerName == r.BrokerName && o.BrokerID == 0 {
			return RegisterResult{MasterAddr: o.Addr, MasterHAAddr: o.HAAddr}, nil
		}
	}
	return RegisterResult{}, nil
}

func (m *memRoutes) Unregister(cluster, brokerName, addr string, brokerID int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.members[addr]
	if !ok || r.Cluster != cluster {
		return false
	}
	delete(m.members, addr)
	for _, o := range m.members {
		if o.BrokerName == brokerName {
			return true
		}
	}
	for _, ts := range m.topics {
		delete(ts, brokerName)
	}
	return true
}

func (m *memRoutes) brokerData(name string) (wire.BrokerData, bool) {
	bd := wire.BrokerData{BrokerName: name, BrokerAddrs: wire.BrokerAddrs{}}
	for _, r := range m.members {
		if r.BrokerName == name {
			bd.Cluster = r.Cluster
			bd.BrokerAddrs[r.BrokerID] = r.Addr
		}
	}
	return bd, len(bd.BrokerAddrs) > 0
}

func (m *memRoutes) Route(topic string) (wire.TopicRouteData, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rd wire.TopicRouteData
	for _, name := range slices.Sorted(maps.Keys(m.topics[topic])) {
		t := m.topics[topic][name]
		rd.QueueDatas = append(rd.QueueDatas, wire.QueueData{BrokerName: name, ReadQueueNums: t.ReadQueueNums,
			WriteQueueNums: t.WriteQueueNums, Perm: t.Perm, TopicSysFlag: t.TopicSysFlag})
		if bd, ok := m.brokerData(name); ok {
			rd.BrokerDatas = append(rd.BrokerDatas, bd)
		}
	}
	return rd, len(rd.BrokerDatas) > 0
}

func (m *memRoutes) ClusterInfo() ClusterInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	ci := ClusterInfo{BrokerAddrTable: map[string]wire.BrokerData{}, ClusterAddrTable: map[string][]string{}}
	for _, r := range m.members {
		bd, _ := m.brokerData(r.BrokerName)
		ci.BrokerAddrTable[r.BrokerName] = bd
		if !slices.Contains(ci.ClusterAddrTable[r.Cluster], r.BrokerName) {
			ci.ClusterAddrTable[r.Cluster] = append(ci.ClusterAddrTable[r.Cluster], r.BrokerName)
			slices.Sort(ci.ClusterAddrTable[r.Cluster])
		}
	}
	return ci
}

func (m *memRoutes) Topics() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for t, bs := range m.topics {
		if len(bs) > 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

func (m *memRoutes) TopicsByCluster(cluster string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for t, bs := range m.topics {
		for name := range bs {
			if bd, _ := m.brokerData(name); bd.Cluster == cluster {
				out = append(out, t)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func (m *memRoutes) DeleteTopic(topic, cluster string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	bs, ok := m.topics[topic]
	if !ok {
		return false
	}
	if cluster == "" {
		delete(m.topics, topic)
		return true
	}
	for name := range bs {
		if bd, _ := m.brokerData(name); bd.Cluster == cluster {
			delete(bs, name)
		}
	}
	return true
}

func (m *memRoutes) registrations() []Registration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.log)
}

// memKV is a KVConfig in a map.
type memKV struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

func newMemKV() *memKV { return &memKV{m: map[string]map[string]string{}} }

func (k *memKV) Put(ns, key, value string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m[ns] == nil {
		k.m[ns] = map[string]string{}
	}
	k.m[ns][key] = value
}

func (k *memKV) Get(ns, key string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[ns][key]
	return v, ok
}

func (k *memKV) Delete(ns, key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.m[ns][key]
	delete(k.m[ns], key)
	if len(k.m[ns]) == 0 {
		delete(k.m, ns)
	}
	return ok
}

func (k *memKV) List(ns string) (map[string]string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m, ok := k.m[ns]
	return maps.Clone(m), ok
}

var (
	_ Routes   = (*memRoutes)(nil)
	_ KVConfig = (*memKV)(nil)
)

func (m *memRoutes) WipeWritePerm(brokerName string) int {
	return m.setPerm(brokerName, func(p int32) int32 { return p &^ 2 })
}

func (m *memRoutes) AddWritePerm(brokerName string) int {
	return m.setPerm(brokerName, func(int32) int32 { return 6 })
}

func (m *memRoutes) setPerm(brokerName string, f func(int32) int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, ts := range m.topics {
		if t, ok := ts[brokerName]; ok {
			t.Perm = f(t.Perm)
			ts[brokerName] = t
			n++
		}
	}
	return n
}
