package engine

import (
	"strings"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/queue"
)

// A Router names, for each record the engine indexes, extra light queues
// to index it into, beside those of its INNER_MULTI_DISPATCH property: a
// front-end whose subscriptions are light queues (MQTT topic filters)
// routes every message to the filters that match it, whichever protocol
// sent it, and stores it once.
//
// Route runs on the dispatcher's goroutine, once per record of a user
// topic (not for half messages or scheduled messages until they are
// stored in their own topic), in log order, also when the log is replayed
// at Open. It must be quick and must not call the engine. It appends the
// names (each starting with LightQueuePrefix; others are ignored) to dst
// and returns it; rec and its slices are valid only during the call.
// Records replayed after a crash are routed by the routes of the moment,
// not those in force when they were appended.
//
// Without a router (Options.Router nil) the hook point is a nil check.
type Router interface {
	Route(rec *RouteRecord, dst []string) []string
}

// RouteLoader is implemented by a Router that reads its routes from the
// engine's State: Open calls LoadRoutes once the metadata store is open
// and before the commit log is replayed, so that records appended before
// a crash but not yet indexed are routed as they would have been. Only
// State may be used during the call.
type RouteLoader interface {
	LoadRoutes(e *Engine) error
}

// RouteRecord is what a Router sees of a record.
type RouteRecord struct {
	Topic      []byte // the topic it is stored in
	Tags       []byte // its TAGS property, nil when untagged
	Properties []byte // its encoded properties
}

// Property returns the value of property name, and whether it is set.
func (r *RouteRecord) Property(name string) ([]byte, bool) {
	props := r.Properties
	for len(props) > 0 {
		var k, v []byte
		var ok bool
		if k, v, props, ok = message.NextProperty(props); ok && string(k) == name {
			return v, true
		}
	}
	return nil, false
}

// route indexes the record into the light queues the router names.
func (d *dispatcher) route(topic []byte, p *recordProps, props []byte, entry queue.Entry) error {
	d.rec = RouteRecord{Topic: topic, Tags: p.tags, Properties: props}
	d.routes = d.e.opts.Router.Route(&d.rec, d.routes[:0])
	d.rec = RouteRecord{}
	for _, name := range d.routes {
		if !IsLightQueue(name) || len(name) > 255 || strings.IndexByte(name, ',') >= 0 {
			continue
		}
		d.nameBuf = append(d.nameBuf[:0], name...)
		if err := d.indexLightQueue(name, d.nameBuf, entry); err != nil {
			return err
		}
	}
	return nil
}
