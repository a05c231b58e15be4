package engine

import (
	"fmt"

	"github.com/karmanmq/karman/engine/meta"
)

// State is a namespace of durable key/value state that a front-end keeps
// in the engine's metadata store instead of a store of its own: MQTT
// sessions and retained messages, for example. Keys and values are bytes
// the engine gives no meaning. Writes are atomic per Apply; under
// FlushSync they are on disk when Apply returns, otherwise in the store's
// log (they survive a killed process, as the commit log's records do) and
// synced within 50 ms. A State is safe for concurrent use.
type State struct {
	e  *Engine
	ns string
}

// StateOp is one change of State.Apply: put Value under Key, or delete Key
// when Delete is set.
type StateOp = meta.StateOp

// State returns the state namespace ns (1 to 255 bytes). It can be used
// from the moment the metadata store is open, so also by a Router's
// LoadRoutes.
func (e *Engine) State(ns string) *State { return &State{e: e, ns: ns} }

// Get returns the value of key; ok is false when it is not set.
func (s *State) Get(key string) (value []byte, ok bool, err error) {
	if s.e.meta == nil {
		return nil, false, ErrClosed
	}
	return s.e.meta.State(s.ns, key)
}

// Put sets key to value.
func (s *State) Put(key string, value []byte) error {
	return s.Apply(StateOp{Key: key, Value: value})
}

// Delete deletes key; deleting a key that is not set is no error.
func (s *State) Delete(key string) error {
	return s.Apply(StateOp{Key: key, Delete: true})
}

// Apply applies ops atomically: all or none.
func (s *State) Apply(ops ...StateOp) error {
	if err := s.e.checkOpen(); err != nil {
		return err
	}
	if err := s.e.meta.ApplyState(s.ns, ops, s.e.opts.Flush == FlushSync); err != nil {
		return fmt.Errorf("engine: state %s: %w", s.ns, err)
	}
	return nil
}

// ApplySync is Apply that returns once the change is on disk, whatever
// the flush policy. With FlushAsync, Apply's change reaches the disk
// within 50 ms, and a kill -9 before that loses it; ApplySync is for
// state an exactly-once promise rests on (an MQTT QoS 2 exchange).
// Concurrent calls share their syncs.
func (s *State) ApplySync(ops ...StateOp) error {
	if err := s.e.checkOpen(); err != nil {
		return err
	}
	if err := s.e.meta.ApplyState(s.ns, ops, true); err != nil {
		return fmt.Errorf("engine: state %s: %w", s.ns, err)
	}
	return nil
}

// DeletePrefix deletes every key that starts with prefix.
func (s *State) DeletePrefix(prefix string) error {
	if err := s.e.checkOpen(); err != nil {
		return err
	}
	if err := s.e.meta.DeleteStatePrefix(s.ns, prefix, s.e.opts.Flush == FlushSync); err != nil {
		return fmt.Errorf("engine: state %s: %w", s.ns, err)
	}
	return nil
}

// Scan calls fn in key order with every key that starts with prefix and
// its value, which is valid only during the call. An error from fn stops
// the scan and is returned.
func (s *State) Scan(prefix string, fn func(key string, value []byte) error) error {
	if s.e.meta == nil {
		return ErrClosed
	}
	return s.e.meta.ScanState(s.ns, prefix, fn)
}
