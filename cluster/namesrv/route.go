package namesrv

import (
	"slices"
	"strings"
)

// Route returns the route of topic: its queue data and the broker groups
// serving it, both sorted by broker name. ok is false when no live group
// serves the topic.
func (t *Table) Route(topic string) (r Route, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	queues := t.topics[topic]
	if len(queues) == 0 {
		return Route{}, false
	}
	r.Queues = make([]QueueData, 0, len(queues))
	r.Brokers = make([]BrokerData, 0, len(queues))
	for name, q := range queues {
		r.Queues = append(r.Queues, q)
		if g := t.brokers[name]; g != nil {
			r.Brokers = append(r.Brokers, g.clone())
		}
	}
	if len(r.Brokers) == 0 {
		return Route{}, false
	}
	slices.SortFunc(r.Queues, func(a, b QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	slices.SortFunc(r.Brokers, func(a, b BrokerData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	return r, true
}

// ClusterInfo returns every broker group and the broker names of every
// cluster.
func (t *Table) ClusterInfo() ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ci := ClusterInfo{
		Brokers:  make(map[string]BrokerData, len(t.brokers)),
		Clusters: make(map[string][]string, len(t.clusters)),
	}
	for name, g := range t.brokers {
		ci.Brokers[name] = g.clone()
	}
	for cluster, names := range t.clusters {
		ci.Clusters[cluster] = sortedKeys(names)
	}
	return ci
}

// Topics returns the name of every routable topic, sorted.
func (t *Table) Topics() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return sortedKeys(t.topics)
}

// TopicsByCluster returns the sorted names of the topics that some broker
// group of cluster serves; none for an unknown cluster.
func (t *Table) TopicsByCluster(cluster string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := t.clusters[cluster]
	out := []string{}
	for topic, queues := range t.topics {
		for name := range queues {
			if _, ok := names[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// DeleteTopic forgets topic until a broker registers it again. It reports
// whether the topic was known.
func (t *Table) DeleteTopic(topic string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.topics[topic]
	delete(t.topics, topic)
	return ok
}

// DeleteTopicInCluster removes the queues of topic on the broker groups
// of cluster, and the topic itself if no other group serves it. It
// reports whether any queues were removed.
func (t *Table) DeleteTopicInCluster(topic, cluster string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	queues := t.topics[topic]
	removed := false
	for name := range t.clusters[cluster] {
		if _, ok := queues[name]; ok {
			delete(queues, name)
			removed = true
		}
	}
	if queues != nil && len(queues) == 0 {
		delete(t.topics, topic)
	}
	return removed
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
