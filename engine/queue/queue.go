// Package queue is the consume-queue index: for every (topic, queue id) the
// ordered list of messages stored in the commit log, one entry per queue
// offset. Light message queues (LMQ) are ordinary queues here, so one stored
// message can appear in many queues without being copied, and a queue costs
// no file of its own: entries live in a shared pebble database.
//
// Entries are derived from the commit log by the engine's dispatcher and can
// always be rebuilt from it, so the database runs without a write-ahead log.
//
// Key and value of one entry (integers big-endian):
//
//	key:   'q' | len(topic) u8 | topic | queue id u32 | queue offset u64
//	value: commit-log offset u64 | record size u32 | tag hash u64 | store time ms u64
//
// Writes go through a Writer into a pebble batch the caller commits; reads
// are safe for concurrent use with writes.
package queue

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kv"
)

// ErrCorrupt reports an entry that cannot be decoded.
var ErrCorrupt = errors.New("queue: corrupt entry")

// Prefix is the first byte of every consume-queue key.
const Prefix = 'q'

const valueSize = 28

// Entry locates one message of a queue in the commit log.
type Entry struct {
	Offset          int64 // queue offset
	CommitLogOffset int64
	Size            int32 // stored record size in bytes
	TagHash         int64
	StoreTimestamp  int64 // ms since the epoch
}

// Store reads and writes consume-queue entries in db.
type Store struct{ db *pebble.DB }

// New returns a Store over db.
func New(db *pebble.DB) *Store { return &Store{db: db} }

// Writer adds entries to a batch. It reuses its buffers; it is not safe for
// concurrent use.
type Writer struct {
	key []byte
	val [valueSize]byte
}

// Setter is where a Writer puts entries: a *pebble.Batch, or a buffer
// that sets them in a batch later.
type Setter interface {
	Set(key, value []byte, opts *pebble.WriteOptions) error
}

// Add records e as entry e.Offset of (topic, queue) in b.
func (w *Writer) Add(b Setter, topic []byte, queue int32, e Entry) error {
	w.key = appendKey(w.key[:0], topic, queue, e.Offset)
	binary.BigEndian.PutUint64(w.val[0:], uint64(e.CommitLogOffset))
	binary.BigEndian.PutUint32(w.val[8:], uint32(e.Size))
	binary.BigEndian.PutUint64(w.val[12:], uint64(e.TagHash))
	binary.BigEndian.PutUint64(w.val[20:], uint64(e.StoreTimestamp))
	return b.Set(w.key, w.val[:], nil)
}

func appendPrefix[S ~string | ~[]byte](dst []byte, topic S, queue int32) []byte {
	dst = append(dst, Prefix, byte(len(topic)))
	dst = append(dst, topic...)
	return binary.BigEndian.AppendUint32(dst, uint32(queue))
}

func appendKey[S ~string | ~[]byte](dst []byte, topic S, queue int32, offset int64) []byte {
	return binary.BigEndian.AppendUint64(appendPrefix(dst, topic, queue), uint64(offset))
}

func decode(key, val []byte) (Entry, error) {
	if len(val) != valueSize || len(key) < 8 {
		return Entry{}, fmt.Errorf("%w: key %x", ErrCorrupt, key)
	}
	return Entry{
		Offset:          int64(binary.BigEndian.Uint64(key[len(key)-8:])),
		CommitLogOffset: int64(binary.BigEndian.Uint64(val[0:])),
		Size:            int32(binary.BigEndian.Uint32(val[8:])),
		TagHash:         int64(binary.BigEndian.Uint64(val[12:])),
		StoreTimestamp:  int64(binary.BigEndian.Uint64(val[20:])),
	}, nil
}

// Entries appends to dst up to max entries of (topic, queue) starting at
// queue offset from, in order.
func (s *Store) Entries(topic string, queue int32, from int64, max int, dst []Entry) ([]Entry, error) {
	p := appendPrefix(nil, topic, queue)
	lower := binary.BigEndian.AppendUint64(append([]byte(nil), p...), uint64(from))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: kv.PrefixEnd(p)})
	if err != nil {
		return dst, fmt.Errorf("queue: read %s/%d: %w", topic, queue, err)
	}
	defer it.Close()
	for valid := it.First(); valid && max > 0; valid = it.Next() {
		e, err := decode(it.Key(), it.Value())
		if err != nil {
			return dst, err
		}
		dst = append(dst, e)
		max--
	}
	return dst, it.Error()
}

// Get returns the entry at offset of (topic, queue); ok is false if there is
// none.
func (s *Store) Get(topic string, queue int32, offset int64) (e Entry, ok bool, err error) {
	key := appendKey(nil, topic, queue, offset)
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("queue: read %s/%d@%d: %w", topic, queue, offset, err)
	}
	defer closer.Close()
	e, err = decode(key, v)
	return e, err == nil, err
}

// Bounds returns the first stored offset of (topic, queue) and one past the
// last; both are 0 for a queue with no entries.
func (s *Store) Bounds(topic string, queue int32) (first, end int64, err error) {
	p := appendPrefix(nil, topic, queue)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: kv.PrefixEnd(p)})
	if err != nil {
		return 0, 0, fmt.Errorf("queue: bounds %s/%d: %w", topic, queue, err)
	}
	defer it.Close()
	if !it.Last() {
		return 0, 0, it.Error()
	}
	last, err := decode(it.Key(), it.Value())
	if err != nil {
		return 0, 0, err
	}
	it.First()
	head, err := decode(it.Key(), it.Value())
	if err != nil {
		return 0, 0, err
	}
	return head.Offset, last.Offset + 1, nil
}

// DeleteBefore removes the entries of (topic, queue) below offset.
func (s *Store) DeleteBefore(topic string, queue int32, offset int64) error {
	p := appendPrefix(nil, topic, queue)
	if err := s.db.DeleteRange(p, appendKey(nil, topic, queue, offset), pebble.NoSync); err != nil {
		return fmt.Errorf("queue: trim %s/%d: %w", topic, queue, err)
	}
	return nil
}

// DeleteTopic removes every entry of every queue of topic.
func (s *Store) DeleteTopic(topic string) error {
	p := append([]byte{Prefix, byte(len(topic))}, topic...)
	if err := s.db.DeleteRange(p, kv.PrefixEnd(p), pebble.NoSync); err != nil {
		return fmt.Errorf("queue: delete %s: %w", topic, err)
	}
	return nil
}
