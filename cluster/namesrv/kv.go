package namesrv

import (
	"maps"
	"sync"
)

// KV is the name server's configuration store: namespace → key → value,
// in memory. The zero value is ready to use.
//
// Java name servers keep order-topic settings in the namespace
// ORDER_TOPIC_CONFIG (topic → "brokerName:queues;…") and hand that
// namespace to brokers when they register.
type KV struct {
	mu sync.RWMutex
	m  map[string]map[string]string
}

// NewKV returns an empty store.
func NewKV() *KV { return &KV{} }

// Put sets the value of key in namespace.
func (k *KV) Put(namespace, key, value string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]map[string]string{}
	}
	ns := k.m[namespace]
	if ns == nil {
		ns = map[string]string{}
		k.m[namespace] = ns
	}
	ns[key] = value
}

// Get returns the value of key in namespace.
func (k *KV) Get(namespace, key string) (string, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	v, ok := k.m[namespace][key]
	return v, ok
}

// Delete removes key from namespace, and the namespace once it is empty.
// It reports whether the key existed.
func (k *KV) Delete(namespace, key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	ns := k.m[namespace]
	if _, ok := ns[key]; !ok {
		return false
	}
	delete(ns, key)
	if len(ns) == 0 {
		delete(k.m, namespace)
	}
	return true
}

// List returns a copy of namespace; ok is false when it holds no key.
func (k *KV) List(namespace string) (kv map[string]string, ok bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	ns, ok := k.m[namespace]
	if !ok {
		return nil, false
	}
	return maps.Clone(ns), true
}

// Namespaces returns the namespaces that hold at least one key, sorted.
func (k *KV) Namespaces() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return sortedKeys(k.m)
}
