package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/karmanmq/karman/engine/internal/kv"
)

// CommittedOffset is one group's committed offset in one queue.
type CommittedOffset struct {
	Group, Topic string
	Queue        int32
	Offset       int64
}

// AllOffsets calls fn with every committed offset, in key order (group,
// topic, queue), until fn returns false. It reads them all: it is for
// maintenance, such as telling what a retention run deletes unconsumed.
func (s *Store) AllOffsets(fn func(CommittedOffset) bool) error {
	prefix := []byte{'o'}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: kv.PrefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("meta: read offsets: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		group, topic, ok := parseOffsetKey(k)
		if !ok || len(v) != 8 {
			continue
		}
		c := CommittedOffset{
			Group:  group,
			Topic:  topic,
			Queue:  int32(binary.BigEndian.Uint32(k[len(k)-4:])),
			Offset: int64(binary.BigEndian.Uint64(v)),
		}
		if !fn(c) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("meta: read offsets: %w", err)
	}
	return nil
}
