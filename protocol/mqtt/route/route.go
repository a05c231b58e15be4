package route

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
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
	filter string
	queue  string
	refs   int
}

// Router holds the subscribed filters.
type Router struct {
	mu      sync.RWMutex
	filters map[string]*filterEntry
	// byFirst indexes filters whose first level is literal by it; the
	// others (first level + or #) are in wild.
	byFirst map[string][]*filterEntry
	wild    []*filterEntry

	st *engine.State
}

var (
	_ engine.Router      = (*Router)(nil)
	_ engine.RouteLoader = (*Router)(nil)
)

// New returns an empty Router.
func New() *Router {
	return &Router{filters: map[string]*filterEntry{}, byFirst: map[string][]*filterEntry{}}
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
	f := &filterEntry{filter: filter, queue: QueueName(filter)}
	r.filters[filter] = f
	first, _, _ := strings.Cut(filter, "/")
	if first == "+" || first == "#" {
		r.wild = append(r.wild, f)
	} else {
		r.byFirst[first] = append(r.byFirst[first], f)
	}
	return f
}

func (r *Router) remove(f *filterEntry) {
	delete(r.filters, f.filter)
	first, _, _ := strings.Cut(f.filter, "/")
	drop := func(s []*filterEntry) []*filterEntry {
		for i, g := range s {
			if g == f {
				return append(s[:i], s[i+1:]...)
			}
		}
		return s
	}
	if first == "+" || first == "#" {
		r.wild = drop(r.wild)
	} else if s := drop(r.byFirst[first]); len(s) > 0 {
		r.byFirst[first] = s
	} else {
		delete(r.byFirst, first)
	}
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
	r.remove(f)
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
	for _, f := range r.filters {
		if f.refs == 0 {
			r.remove(f)
			ops = append(ops, engine.StateOp{Key: keyPrefix + f.filter, Delete: true})
		}
	}
	if r.st == nil || len(ops) == 0 {
		return nil
	}
	return r.st.Apply(ops...)
}

// Filters returns the number of filters routed to.
func (r *Router) Filters() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.filters)
}

// Route names the queues of the filters matching the record's MQTT name
// (engine.Router).
func (r *Router) Route(rec *engine.RouteRecord, dst []string) []string {
	if len(rec.Topic) == 0 || rec.Topic[0] == '%' || message.IsSystemTopic(string(rec.Topic)) {
		return dst
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.filters) == 0 {
		return dst
	}
	origin, _ := rec.Property(mapping.PropOriginTopic)
	name := mapping.Name(string(rec.Topic), string(rec.Tags), string(origin))
	first, _, _ := strings.Cut(name, "/")
	for _, f := range r.byFirst[first] {
		if Match(f.filter, name) {
			dst = append(dst, f.queue)
		}
	}
	for _, f := range r.wild {
		if Match(f.filter, name) {
			dst = append(dst, f.queue)
		}
	}
	return dst
}

// Match reports whether topic filter matches topic name: '+' one level,
// '#' the rest (the parent too), and a filter starting with a wildcard
// matches no name starting with '$'.
func Match(filter, name string) bool {
	if len(name) > 0 && name[0] == '$' && len(filter) > 0 && (filter[0] == '+' || filter[0] == '#') {
		return false
	}
	for {
		fl, frest, fmore := strings.Cut(filter, "/")
		if fl == "#" {
			return true
		}
		nl, nrest, nmore := strings.Cut(name, "/")
		if fl != "+" && fl != nl {
			return false
		}
		switch {
		case !fmore && !nmore:
			return true
		case !nmore:
			return frest == "#" // "a/#" matches "a"
		case !fmore:
			return false
		}
		filter, name = frest, nrest
	}
}
