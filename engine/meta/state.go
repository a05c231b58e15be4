package meta

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kv"
)

// statePrefix starts the keys of front-end state:
//
//	'f' len(namespace) namespace key → value
//
// The store gives the bytes no meaning; a front-end (MQTT sessions,
// retained messages) owns its namespace and its encoding.
const statePrefix = 'f'

// MaxStateNamespace is the longest state namespace.
const MaxStateNamespace = 255

// StateOp is one change of a state batch: Put Value under Key, or delete
// Key when Delete is set.
type StateOp struct {
	Key    string
	Value  []byte
	Delete bool
}

func stateKey(ns, key string) []byte {
	k := make([]byte, 0, 2+len(ns)+len(key))
	k = append(k, statePrefix, byte(len(ns)))
	k = append(k, ns...)
	return append(k, key...)
}

func checkNamespace(ns string) error {
	if ns == "" || len(ns) > MaxStateNamespace {
		return fmt.Errorf("%w: state namespace %q (want 1..%d bytes)", ErrInvalid, ns, MaxStateNamespace)
	}
	return nil
}

// State returns the value of key in namespace ns; ok is false when it is
// not set.
func (s *Store) State(ns, key string) (value []byte, ok bool, err error) {
	if err := checkNamespace(ns); err != nil {
		return nil, false, err
	}
	v, closer, err := s.db.Get(stateKey(ns, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("meta: read state %s/%q: %w", ns, key, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), true, nil
}

// ApplyState applies ops to namespace ns atomically. With sync the call
// returns once the change is on disk; without, once it is in the store's
// log (it survives the process, not the machine) and the store syncs it
// within 50 ms, as it does consumer offsets.
func (s *Store) ApplyState(ns string, ops []StateOp, sync bool) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	return s.write("write state "+ns, func() error {
		b := s.db.NewBatch()
		defer b.Close()
		for _, op := range ops {
			var err error
			if op.Delete {
				err = b.Delete(stateKey(ns, op.Key), nil)
			} else {
				err = b.Set(stateKey(ns, op.Key), op.Value, nil)
			}
			if err != nil {
				return fmt.Errorf("meta: write state %s: %w", ns, err)
			}
		}
		wo := pebble.NoSync
		if sync {
			wo = pebble.Sync
		}
		if err := b.Commit(wo); err != nil {
			return fmt.Errorf("meta: write state %s: %w", ns, err)
		}
		if !sync {
			s.lazy.wrote()
		}
		return nil
	})
}

// DeleteStatePrefix deletes every key of namespace ns that starts with
// prefix (all of them when prefix is empty).
func (s *Store) DeleteStatePrefix(ns, prefix string, sync bool) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	return s.write("delete state "+ns, func() error {
		lo := stateKey(ns, prefix)
		wo := pebble.NoSync
		if sync {
			wo = pebble.Sync
		}
		if err := s.db.DeleteRange(lo, kv.PrefixEnd(lo), wo); err != nil {
			return fmt.Errorf("meta: delete state %s/%q: %w", ns, prefix, err)
		}
		if !sync {
			s.lazy.wrote()
		}
		return nil
	})
}

// ScanState calls fn, in key order, with each key of namespace ns that
// starts with prefix and its value (valid only during the call). An error
// from fn stops the scan and is returned.
func (s *Store) ScanState(ns, prefix string, fn func(key string, value []byte) error) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	lo := stateKey(ns, prefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: kv.PrefixEnd(lo)})
	if err != nil {
		return fmt.Errorf("meta: scan state %s: %w", ns, err)
	}
	defer it.Close()
	skip := 2 + len(ns)
	for it.First(); it.Valid(); it.Next() {
		if err := fn(string(it.Key()[skip:]), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}
