package route

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
	"github.com/karmanmq/karman/protocol/mqtt/topic"
)

// Namespace is the engine state namespace of the MQTT front-end.
const Namespace = "mqtt"

const keyPrefix = "r/"

// QueueName returns the light queue of a topic filter.
func QueueName(filter string) string {
	sum := sha256.Sum256([]byte(filter))
	return engine.LightQueuePrefix + "mqtt_" + hex.EncodeToString(sum[:16])
}

type filterEntry struct {
	queue string
	refs  int
}

// Router holds the subscribed filters.
type Router struct {
	mu      sync.Mutex // writers
	filters map[string]*filterEntry
	tree    topic.Tree[struct{}, string]  // filter → its queue
	matches []topic.Sub[struct{}, string] // Route's buffer (one dispatcher)

	// gen counts the filters' comings and goings: Route's cache holds
	// while it stays.
	gen atomic.Uint64
	// cache holds, for Route alone, the queues of the MQTT names routed
	// since gen was cacheGen.
	cache    map[string][]string
	cacheGen uint64

	st *engine.State
}

var (
	_ engine.Router      = (*Router)(nil)
	_ engine.RouteLoader = (*Router)(nil)
)

// New returns an empty Router.
func New() *Router {
	return &Router{filters: map[string]*filterEntry{}}
}

// LoadRoutes reads the filters of the last run (engine.RouteLoader).
func (r *Router) LoadRoutes(e *engine.Engine) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st = e.State(Namespace)
	return r.st.Scan(keyPrefix, func(k string, _ []byte) error {
		r.insert(strings.TrimPrefix(k, keyPrefix))
		return nil
	})
}

func (r *Router) insert(filter string) *filterEntry {
	if f, ok := r.filters[filter]; ok {
		return f
	}
	f := &filterEntry{queue: QueueName(filter)}
	r.filters[filter] = f
	r.tree.Add(filter, struct{}{}, f.queue)
	r.gen.Add(1) // after the tree has it: a Route that sees gen sees it
	return f
}

func (r *Router) remove(filter string) {
	delete(r.filters, filter)
	r.tree.Remove(filter, struct{}{})
	r.gen.Add(1)
}

// Add counts one more holder of filter and returns its queue. A filter
// new to the router is stored before Add returns, so every record indexed
// from then on is routed to it.
func (r *Router) Add(filter string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.filters[filter]
	if !ok {
		if r.st != nil {
			if err := r.st.Put(keyPrefix+filter, nil); err != nil {
				return "", fmt.Errorf("route: add %q: %w", filter, err)
			}
		}
		f = r.insert(filter)
	}
	f.refs++
	return f.queue, nil
}

// Release counts one holder of filter less; the last one removes it.
func (r *Router) Release(filter string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.filters[filter]
	if !ok {
		return nil
	}
	if f.refs--; f.refs > 0 {
		return nil
	}
	r.remove(filter)
	if r.st != nil {
		if err := r.st.Delete(keyPrefix + filter); err != nil {
			return fmt.Errorf("route: release %q: %w", filter, err)
		}
	}
	return nil
}

// Sweep removes the filters nobody holds (loaded from the last run and
// not added since).
func (r *Router) Sweep() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ops []engine.StateOp
	for filter, f := range r.filters {
		if f.refs == 0 {
			r.remove(filter)
			ops = append(ops, engine.StateOp{Key: keyPrefix + filter, Delete: true})
		}
	}
	if r.st == nil || len(ops) == 0 {
		return nil
	}
	return r.st.Apply(ops...)
}

// maxRouteCache bounds how many MQTT topics Route remembers the queues of.
const maxRouteCache = 4096

// Filters returns the number of filters routed to.
func (r *Router) Filters() int {
	return r.tree.Len()
}

// Route names the queues of the filters matching the record's MQTT name
// (engine.Router).
func (r *Router) Route(rec *engine.RouteRecord, dst []string) []string {
	if len(rec.Topic) == 0 || rec.Topic[0] == '%' || message.IsSystemTopic(string(rec.Topic)) {
		return dst
	}
	if r.tree.Len() == 0 {
		return dst
	}
	origin, _ := rec.Property(mapping.PropOriginTopic)
	// A record from MQTT is routed by its MQTT topic alone: its queues
	// are those of the last record of the topic while no filter came or
	// went, read before the tree is.
	gen := r.gen.Load()
	if gen != r.cacheGen || len(r.cache) >= maxRouteCache {
		clear(r.cache)
		r.cacheGen = gen
	}
	if len(origin) > 0 {
		if queues, ok := r.cache[string(origin)]; ok {
			return append(dst, queues...)
		}
	}
	name := mapping.Name(string(rec.Topic), string(rec.Tags), string(origin))
	r.matches = r.tree.Match(name, r.matches[:0])
	start := len(dst)
	for _, m := range r.matches {
		dst = append(dst, m.Value)
	}
	clear(r.matches)
	if len(origin) > 0 {
		if r.cache == nil {
			r.cache = map[string][]string{}
		}
		r.cache[name] = slices.Clone(dst[start:len(dst):len(dst)])
	}
	return dst
}
