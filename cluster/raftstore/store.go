package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

var (
	// ErrKeyNotFound is returned by Get for a key never set. Its text is
	// "not found", which raft compares with.
	ErrKeyNotFound = errors.New("not found")
	// ErrCorrupt: a stored log entry does not decode.
	ErrCorrupt = errors.New("raftstore: corrupt log entry")
)

const (
	prefixLog    = 'l'
	prefixStable = 's'
)

// Store is a raft.LogStore and raft.StableStore on pebble.
type Store struct {
	db *pebble.DB
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// Open opens (creating if needed) the store in dir.
func Open(dir string) (*Store, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: logger{}})
	if err != nil {
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	return &Store{db: db}, nil
}

// logger passes pebble's errors to slog and drops its chatter.
type logger struct{}

func (logger) Infof(string, ...any) {}
func (logger) Errorf(format string, args ...any) {
	slog.Error("raftstore: pebble: " + fmt.Sprintf(format, args...))
}
func (logger) Fatalf(format string, args ...any) {
	panic("raftstore: pebble: " + fmt.Sprintf(format, args...))
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

func logKey(index uint64) []byte {
	var k [9]byte
	k[0] = prefixLog
	binary.BigEndian.PutUint64(k[1:], index)
	return k[:]
}

func stableKey(key []byte) []byte {
	return append([]byte{prefixStable}, key...)
}

// encodeLog appends the encoding of l to b.
func encodeLog(b []byte, l *raft.Log) []byte {
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	return append(b, l.Extensions...)
}

// decodeLog decodes b into l; the byte slices are copies. It never
// panics, whatever b holds.
func decodeLog(b []byte, l *raft.Log) error {
	if len(b) < 29 {
		return fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	l.Index = binary.BigEndian.Uint64(b)
	l.Term = binary.BigEndian.Uint64(b[8:])
	l.Type = raft.LogType(b[16])
	at := int64(binary.BigEndian.Uint64(b[17:]))
	l.AppendedAt = time.Time{}
	if at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	rest := b[25:]
	var err error
	if l.Data, rest, err = field(rest); err != nil {
		return err
	}
	if l.Extensions, rest, err = field(rest); err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: %d bytes after the entry", ErrCorrupt, len(rest))
	}
	return nil
}

// field reads a u32-length-prefixed byte string (nil when empty).
func field(b []byte) ([]byte, []byte, error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%w: length cut short", ErrCorrupt)
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: field of %d bytes in %d", ErrCorrupt, n, len(b))
	}
	if n == 0 {
		return nil, b, nil
	}
	return append([]byte(nil), b[:n]...), b[n:], nil
}

// FirstIndex returns the first index stored, or 0.
func (s *Store) FirstIndex() (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logKey(0), UpperBound: []byte{prefixLog + 1}})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.First() {
		return 0, it.Error()
	}
	return binary.BigEndian.Uint64(it.Key()[1:]), nil
}

// LastIndex returns the last index stored, or 0.
func (s *Store) LastIndex() (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logKey(0), UpperBound: []byte{prefixLog + 1}})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	return binary.BigEndian.Uint64(it.Key()[1:]), nil
}

// GetLog reads the entry at index into l, or returns raft.ErrLogNotFound.
func (s *Store) GetLog(index uint64, l *raft.Log) error {
	v, closer, err := s.db.Get(logKey(index))
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if err := decodeLog(v, l); err != nil {
		return fmt.Errorf("raftstore: log %d: %w", index, err)
	}
	return nil
}

// StoreLog stores one entry, durably.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries in one synced batch.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	b := s.db.NewBatch()
	defer b.Close()
	var buf []byte
	for _, l := range logs {
		buf = encodeLog(buf[:0], l)
		if err := b.Set(logKey(l.Index), buf, nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("raftstore: store logs: %w", err)
	}
	return nil
}

// DeleteRange deletes the entries from min to max, inclusive, durably.
func (s *Store) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	end := []byte{prefixLog + 1}
	if max < math.MaxUint64 {
		end = logKey(max + 1)
	}
	if err := s.db.DeleteRange(logKey(min), end, pebble.Sync); err != nil {
		return fmt.Errorf("raftstore: delete logs [%d, %d]: %w", min, max, err)
	}
	return nil
}

// Set stores a stable value, durably.
func (s *Store) Set(key, val []byte) error {
	if err := s.db.Set(stableKey(key), val, pebble.Sync); err != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	return nil
}

// Get returns a stable value, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(stableKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// SetUint64 stores a stable integer, durably.
func (s *Store) SetUint64(key []byte, val uint64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], val)
	return s.Set(key, b[:])
}

// GetUint64 returns a stable integer, or 0 when it was never set.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if errors.Is(err, ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: %q holds %d bytes, not an integer", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
