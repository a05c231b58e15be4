// Package index maps message keys and client message ids to the commit-log
// offsets of the messages that carry them, in the engine's index pebble
// database. Like the consume queues it is derived from the commit log and
// rebuilt from it after a crash.
//
// Keys (integers big-endian):
//
//	key index: 'k' | len(topic) u8 | topic | len(key) u16 | key | store time ms u64 | commit-log offset u64 → empty
//	id index:  'i' | len(id) u16 | client message id (UNIQ_KEY) | topic                         → commit-log offset u64
//
// The id index holds, for each topic a client message id was stored in,
// the last message that carried it there: a message that was retried or
// dead-lettered is still found in its own topic, as RocketMQ's index of
// unique keys finds it. Stores written before the id index named topics
// used the prefix 'u' (PrefixLegacyID); the engine rebuilds those indexes.
//
// A Writer adds entries to a batch and is not safe for concurrent use; the
// read methods are.
package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kv"
)

// Key prefixes.
const (
	PrefixKey = 'k'
	PrefixID  = 'i'
	// PrefixLegacyID is the id index of earlier stores, keyed by the id
	// alone: an index holding it must be rebuilt.
	PrefixLegacyID = 'u'
)

// MaxIDLen is the longest client message id that is indexed; longer ids
// are skipped.
const MaxIDLen = math.MaxUint16

// MaxKeyLen is the longest key that is indexed; longer keys are skipped.
const MaxKeyLen = math.MaxUint16

// Index reads the key and id indexes of db.
type Index struct{ db *pebble.DB }

// New returns an Index over db.
func New(db *pebble.DB) *Index { return &Index{db: db} }

// Writer adds index entries to a pebble batch, reusing one key buffer.
type Writer struct {
	key []byte
	val [8]byte
}

// AddKey indexes one business key of a message of topic.
func (w *Writer) AddKey(b *pebble.Batch, topic, key []byte, storeTime, commitLogOffset int64) error {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return nil
	}
	w.key = appendKeyPrefix(w.key[:0], topic, key)
	w.key = binary.BigEndian.AppendUint64(w.key, uint64(storeTime))
	w.key = binary.BigEndian.AppendUint64(w.key, uint64(commitLogOffset))
	return b.Set(w.key, nil, nil)
}

// AddID indexes a client message id of a message stored in topic in b (a
// *pebble.Batch, or a buffer that sets it in a batch later).
func (w *Writer) AddID(b interface {
	Set(key, value []byte, opts *pebble.WriteOptions) error
}, id, topic []byte, commitLogOffset int64) error {
	if len(id) == 0 || len(id) > MaxIDLen {
		return nil
	}
	w.key = appendIDPrefix(w.key[:0], id)
	w.key = append(w.key, topic...)
	binary.BigEndian.PutUint64(w.val[:], uint64(commitLogOffset))
	return b.Set(w.key, w.val[:], nil)
}

func appendIDPrefix[S ~string | ~[]byte](dst []byte, id S) []byte {
	dst = append(dst, PrefixID)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(id)))
	return append(dst, id...)
}

func appendKeyPrefix[S ~string | ~[]byte](dst []byte, topic, key S) []byte {
	dst = append(dst, PrefixKey, byte(len(topic)))
	dst = append(dst, topic...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(key)))
	return append(dst, key...)
}

// ByKey returns the commit-log offsets of up to limit messages of topic
// carrying key and stored within [begin, end] (ms since the epoch), oldest
// first.
func (ix *Index) ByKey(topic, key string, begin, end int64, limit int) ([]int64, error) {
	p := appendKeyPrefix(nil, topic, key)
	lower := binary.BigEndian.AppendUint64(append([]byte(nil), p...), uint64(max(begin, 0)))
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: kv.PrefixEnd(p)})
	if err != nil {
		return nil, fmt.Errorf("index: key %q: %w", key, err)
	}
	defer it.Close()
	var out []int64
	for valid := it.First(); valid && len(out) < limit; valid = it.Next() {
		k := it.Key()
		if len(k) != len(p)+16 {
			continue
		}
		if int64(binary.BigEndian.Uint64(k[len(p):])) > end {
			break
		}
		out = append(out, int64(binary.BigEndian.Uint64(k[len(p)+8:])))
	}
	return out, it.Error()
}

// ByID returns the commit-log offset of the last message stored with
// client message id id, in any topic; ok is false when none is indexed.
func (ix *Index) ByID(id string) (offset int64, ok bool, err error) {
	if len(id) == 0 || len(id) > MaxIDLen {
		return 0, false, nil
	}
	p := appendIDPrefix(nil, id)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: kv.PrefixEnd(p)})
	if err != nil {
		return 0, false, fmt.Errorf("index: id %q: %w", id, err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		off, err := idOffset(id, it.Value())
		if err != nil {
			return 0, false, err
		}
		if !ok || off > offset {
			offset, ok = off, true
		}
	}
	return offset, ok, it.Error()
}

// ByIDInTopic returns the commit-log offset of the last message stored in
// topic with client message id id; ok is false when none is indexed.
func (ix *Index) ByIDInTopic(id, topic string) (offset int64, ok bool, err error) {
	if len(id) == 0 || len(id) > MaxIDLen {
		return 0, false, nil
	}
	v, closer, err := ix.db.Get(append(appendIDPrefix(nil, id), topic...))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("index: id %q in %s: %w", id, topic, err)
	}
	defer closer.Close()
	off, err := idOffset(id, v)
	return off, err == nil, err
}

// HasLegacyIDs reports whether the index holds id entries of the earlier
// layout, keyed by the id alone.
func (ix *Index) HasLegacyIDs() (bool, error) {
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: []byte{PrefixLegacyID}, UpperBound: []byte{PrefixLegacyID + 1}})
	if err != nil {
		return false, fmt.Errorf("index: look for legacy ids: %w", err)
	}
	defer it.Close()
	found := it.First()
	return found, it.Error()
}

func idOffset(id string, v []byte) (int64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("index: corrupt id entry %q", id)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// DeleteTopic removes the key index of topic. Its entries in the id
// index, which is keyed by id first, stay until the messages are gone.
func (ix *Index) DeleteTopic(topic string) error {
	p := append([]byte{PrefixKey, byte(len(topic))}, topic...)
	return ix.db.DeleteRange(p, kv.PrefixEnd(p), pebble.NoSync)
}
