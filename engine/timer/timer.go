// Package timer keeps scheduled messages until they are due: the index of
// delayed and timer messages, ordered by due time, and the Scheduler that
// hands due entries to the engine for delivery.
//
// A scheduled message is stored once, in the commit log, under the timer
// system topic; the index holds only (due time, commit-log offset) pairs in
// the engine's index database, built by the dispatcher like every other
// index and rebuilt from the log after a crash. Delivering a message appends
// it to its real topic carrying the source entry's identity, and the
// dispatcher deletes the index entry when it indexes that delivery, so a
// crash between the two never delivers a message twice: the delivery record
// in the log is the proof it happened.
//
// Key of one entry (integers big-endian):
//
//	'w' | due ms u64 | commit-log offset u64 → empty
//
// Memory does not grow with the number of pending messages: the Scheduler
// keeps only the next due time and reads due entries in bounded batches.
package timer

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// Prefix is the first byte of every timer key.
const Prefix = 'w'

const keySize = 17

// Entry is one scheduled message.
type Entry struct {
	Due    int64 // ms since the epoch
	Offset int64 // commit-log offset of the scheduled record
}

func appendKey(dst []byte, due, off int64) []byte {
	dst = append(dst, Prefix)
	dst = binary.BigEndian.AppendUint64(dst, uint64(due))
	return binary.BigEndian.AppendUint64(dst, uint64(off))
}

// Writer adds and removes entries in a batch, reusing one key buffer. It is
// not safe for concurrent use.
type Writer struct{ key []byte }

// Add schedules the record at off for due.
func (w *Writer) Add(b *pebble.Batch, e Entry) error {
	w.key = appendKey(w.key[:0], e.Due, e.Offset)
	return b.Set(w.key, nil, nil)
}

// Delete removes an entry (delivered or cancelled).
func (w *Writer) Delete(b *pebble.Batch, e Entry) error {
	w.key = appendKey(w.key[:0], e.Due, e.Offset)
	return b.Delete(w.key, nil)
}

// Store reads the timer index.
type Store struct{ db *pebble.DB }

// New returns a Store over db.
func New(db *pebble.DB) *Store { return &Store{db: db} }

// Range appends to dst up to limit entries due in [from, until], earliest
// first.
func (s *Store) Range(from, until int64, limit int, dst []Entry) ([]Entry, error) {
	return s.RangeFrom(Entry{Due: from}, until, limit, dst)
}

// RangeFrom is Range starting at entry start (inclusive) instead of at a
// due time, so a reader can resume after the entries it has handled
// without stepping over them again.
func (s *Store) RangeFrom(start Entry, until int64, limit int, dst []Entry) ([]Entry, error) {
	if until < 0 {
		return dst, nil // no entry is due before 0, and until would not encode as a bound
	}
	lower := appendKey(nil, max(start.Due, 0), max(start.Offset, 0))
	upper := appendKey(nil, until, math.MaxInt64)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: append(upper, 0)})
	if err != nil {
		return dst, fmt.Errorf("timer: read: %w", err)
	}
	defer it.Close()
	for valid := it.First(); valid && limit > 0; valid = it.Next() {
		k := it.Key()
		if len(k) != keySize {
			continue
		}
		dst = append(dst, Entry{Due: int64(binary.BigEndian.Uint64(k[1:])), Offset: int64(binary.BigEndian.Uint64(k[9:]))})
		limit--
	}
	return dst, it.Error()
}

// Next returns the earliest entry due at or after from; ok is false when
// none is pending.
func (s *Store) Next(from int64) (e Entry, ok bool, err error) {
	got, err := s.Range(from, math.MaxInt64, 1, nil)
	if err != nil || len(got) == 0 {
		return Entry{}, false, err
	}
	return got[0], true, nil
}

// Has reports whether e is pending.
func (s *Store) Has(e Entry) (bool, error) {
	_, closer, err := s.db.Get(appendKey(nil, e.Due, e.Offset))
	if err == pebble.ErrNotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("timer: read: %w", err)
	}
	closer.Close()
	return true, nil
}
