// Package txn indexes transactional half messages that are still waiting
// for their producer's decision, and tracks how often each was checked.
//
// A half message is stored once, in the commit log, under
// RMQ_SYS_TRANS_HALF_TOPIC. The dispatcher adds it to this index; the record
// that resolves it (the committed message, a rollback marker, or a discard
// record after too many checks) carries the half message's commit-log
// offset in a property, and the dispatcher removes the index entry when it
// indexes that record. So the index is derived from the log like every
// other index and survives a crash. A half message resolved by a record
// of the same index batch is never added: the index holds the half
// messages that were pending when a batch was committed.
//
// Key of one pending half message (big-endian):
//
//	'h' | commit-log offset u64 → empty
//
// Check counts are kept in memory by Checks: after a restart every pending
// half message is checked again from its first check.
package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Prefix is the first byte of every key of the index.
const Prefix = 'h'

func key(dst []byte, off int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, Prefix), uint64(off))
}

// Writer adds and removes pending half messages in a batch, reusing one key
// buffer. It is not safe for concurrent use.
type Writer struct{ k []byte }

// Add records the half message at off as pending.
func (w *Writer) Add(b *pebble.Batch, off int64) error {
	w.k = key(w.k[:0], off)
	return b.Set(w.k, nil, nil)
}

// Resolve removes the half message at off.
func (w *Writer) Resolve(b *pebble.Batch, off int64) error {
	w.k = key(w.k[:0], off)
	return b.Delete(w.k, nil)
}

// Store reads the index.
type Store struct{ db *pebble.DB }

// New returns a Store over db.
func New(db *pebble.DB) *Store { return &Store{db: db} }

// Pending reports whether the half message at off waits for a decision.
func (s *Store) Pending(off int64) (bool, error) {
	_, closer, err := s.db.Get(key(nil, off))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("txn: read: %w", err)
	}
	closer.Close()
	return true, nil
}

// List appends to dst up to limit pending half messages from offset from
// on, oldest first.
func (s *Store) List(from int64, limit int, dst []int64) ([]int64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: key(nil, max(from, 0)), UpperBound: []byte{Prefix + 1}})
	if err != nil {
		return dst, fmt.Errorf("txn: read: %w", err)
	}
	defer it.Close()
	for valid := it.First(); valid && limit > 0; valid = it.Next() {
		if k := it.Key(); len(k) == 9 {
			dst = append(dst, int64(binary.BigEndian.Uint64(k[1:])))
			limit--
		}
	}
	return dst, it.Error()
}

// Count returns how many half messages are pending, counting up to limit.
func (s *Store) Count(limit int) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{Prefix}, UpperBound: []byte{Prefix + 1}})
	if err != nil {
		return 0, fmt.Errorf("txn: read: %w", err)
	}
	defer it.Close()
	n := 0
	for valid := it.First(); valid && n < limit; valid = it.Next() {
		if len(it.Key()) == 9 {
			n++
		}
	}
	return n, it.Error()
}

// Check is the check state of one pending half message.
type Check struct {
	Count int   // checks sent so far
	Next  int64 // ms since the epoch: when the next check is due
}

// Checks holds the check state of pending half messages, in memory. It is
// safe for concurrent use: the state of a half message lives in one of
// checkShards shards, picked by its offset, each with its own lock, so
// that concurrent decisions seldom wait for each other.
type Checks struct {
	shards [checkShards]checkShard
}

const checkShards = 16

type checkShard struct {
	mu sync.Mutex
	m  map[int64]*Check
	// resolving holds half messages whose resolving record was appended
	// but may not be indexed yet, with that record's offset, so a second
	// decision is refused even before the index catches up.
	resolving map[int64]int64
	// appended lists the decisions of resolving whose record offset is
	// known, in the order they were recorded (about log order), so that
	// BeginResolve forgets the indexed ones without visiting the rest.
	appended []decision
	head     int // appended[:head] are forgotten

	_ [64]byte // keeps shards off each other's cache lines
}

// decision is a half message and the offset of the record resolving it.
type decision struct{ half, rec int64 }

// NewChecks returns an empty Checks.
func NewChecks() *Checks {
	c := &Checks{}
	for i := range c.shards {
		c.shards[i].m = map[int64]*Check{}
		c.shards[i].resolving = map[int64]int64{}
	}
	return c
}

// shard returns the shard of the half message at off.
func (c *Checks) shard(off int64) *checkShard {
	return &c.shards[uint64(off)*0x9E3779B97F4A7C15>>60]
}

// Get returns the check state of off, calling init to create it.
func (c *Checks) Get(off int64, init func() Check) Check {
	sh := c.shard(off)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st, ok := sh.m[off]
	if !ok {
		v := init()
		st = &v
		sh.m[off] = st
	}
	return *st
}

// Peek returns the check state of off, if it has one.
func (c *Checks) Peek(off int64) (Check, bool) {
	sh := c.shard(off)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st, ok := sh.m[off]
	if !ok {
		return Check{}, false
	}
	return *st, true
}

// Set records the check state of off.
func (c *Checks) Set(off int64, st Check) {
	sh := c.shard(off)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.m[off] = &st
}

// BeginResolve claims off for resolution; it returns false when another
// decision for it is under way or was recorded at or after indexed (the
// dispatcher's position: records below it are indexed).
func (c *Checks) BeginResolve(off, indexed int64) bool {
	sh := c.shard(off)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.forget(indexed)
	if _, busy := sh.resolving[off]; busy {
		return false
	}
	sh.resolving[off] = -1
	return true
}

// Resolving reports whether a decision for off is under way, or was
// recorded at or after indexed (the dispatcher's position): the index may
// still list the half message as pending, but it must not be checked.
func (c *Checks) Resolving(off, indexed int64) bool {
	sh := c.shard(off)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.forget(indexed)
	_, busy := sh.resolving[off]
	return busy
}

// forget drops the decisions recorded below indexed, oldest first: the
// index answers for them now. It stops at the first one not indexed yet,
// so a decision recorded out of log order may be kept a little longer,
// which only delays forgetting it.
func (sh *checkShard) forget(indexed int64) {
	for sh.head < len(sh.appended) {
		d := sh.appended[sh.head]
		if d.rec >= indexed {
			break
		}
		if sh.resolving[d.half] == d.rec {
			delete(sh.resolving, d.half)
		}
		sh.head++
	}
	if sh.head == len(sh.appended) {
		sh.appended, sh.head = sh.appended[:0], 0
	} else if sh.head > 1024 && sh.head > len(sh.appended)/2 {
		n := copy(sh.appended, sh.appended[sh.head:])
		sh.appended, sh.head = sh.appended[:n], 0
	}
}

// EndResolve records that the decision for off was appended at rec (or
// failed, with rec < 0, which frees off again).
func (c *Checks) EndResolve(off, rec int64) {
	sh := c.shard(off)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if rec < 0 {
		delete(sh.resolving, off)
		return
	}
	sh.resolving[off] = rec
	sh.appended = append(sh.appended, decision{off, rec})
	delete(sh.m, off)
}
