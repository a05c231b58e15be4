package meta

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kv"
)

// PopRecord is the persisted pop state of one (group, topic, queue), with
// the consumer offset it implies.
type PopRecord struct {
	Group, Topic string
	Queue        int32
	State        []byte // opaque to this package
	Offset       int64  // committed offset to store with it; negative for none
}

func popGroupPrefix(group string) []byte {
	k := make([]byte, 0, 8+len(group))
	k = append(k, 'p', byte(len(group)))
	return append(k, group...)
}

func popTopicPrefix(group, topic string) []byte {
	k := append(popGroupPrefix(group), byte(len(topic)))
	return append(k, topic...)
}

func popKey(group, topic string, queue int32) []byte {
	return binary.BigEndian.AppendUint32(popTopicPrefix(group, topic), uint32(queue))
}

// PopState returns the stored pop state of (group, topic, queue); ok is
// false when there is none.
func (s *Store) PopState(group, topic string, queue int32) (state []byte, ok bool, err error) {
	v, closer, err := s.db.Get(popKey(group, topic, queue))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("meta: read pop state: %w", err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), true, nil
}

// SavePopStates writes pop states and their offsets in one batch. With
// sync false it does not wait for the disk, and a crash within
// lazySyncInterval may lose it: pop state then falls back to an earlier
// point and messages are delivered again (at least once).
func (s *Store) SavePopStates(recs []PopRecord, sync bool) error {
	return s.write("save pop states", func() error { return s.savePopStates(recs, sync) })
}

func (s *Store) savePopStates(recs []PopRecord, sync bool) error {
	b := s.db.NewBatch()
	defer b.Close()
	var v [8]byte
	for _, r := range recs {
		if err := b.Set(popKey(r.Group, r.Topic, r.Queue), r.State, nil); err != nil {
			return err
		}
		if r.Offset >= 0 {
			binary.BigEndian.PutUint64(v[:], uint64(r.Offset))
			if err := b.Set(offsetKey(r.Group, r.Topic, r.Queue), v[:], nil); err != nil {
				return err
			}
		}
	}
	opt := pebble.NoSync
	if sync {
		opt = pebble.Sync
	}
	if err := b.Commit(opt); err != nil {
		return fmt.Errorf("meta: save pop states: %w", err)
	}
	if !sync {
		s.lazy.wrote()
	}
	return nil
}

// DeletePopStates removes the pop states of group in topic.
func (s *Store) DeletePopStates(group, topic string) error {
	return s.write("delete pop states", func() error {
		p := popTopicPrefix(group, topic)
		if err := s.db.DeleteRange(p, kv.PrefixEnd(p), pebble.Sync); err != nil {
			return fmt.Errorf("meta: delete pop states: %w", err)
		}
		return nil
	})
}

// AllPopStates calls fn with every stored pop state (Offset is -1: the
// committed offsets are read with AllOffsets) until fn returns false.
func (s *Store) AllPopStates(fn func(PopRecord) bool) error {
	prefix := []byte{'p'}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: kv.PrefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("meta: read pop states: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		// 'p', len(group), group, len(topic), topic, queue (4 bytes).
		if len(k) < 2 {
			continue
		}
		g := int(k[1])
		if len(k) < 2+g+1 {
			continue
		}
		t := int(k[2+g])
		if len(k) != 2+g+1+t+4 {
			continue
		}
		r := PopRecord{Group: string(k[2 : 2+g]), Topic: string(k[3+g : 3+g+t]),
			Queue: int32(binary.BigEndian.Uint32(k[len(k)-4:])), State: append([]byte(nil), it.Value()...), Offset: -1}
		if !fn(r) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("meta: read pop states: %w", err)
	}
	return nil
}
