package meta

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/karmanmq/karman/engine/internal/disk"
	"github.com/karmanmq/karman/engine/internal/kv"
)

// Errors returned by the store. They are wrapped with context; match them
// with errors.Is.
var (
	ErrTopicNotFound = errors.New("meta: topic not found")
	ErrGroupNotFound = errors.New("meta: consumer group not found")
	ErrTopicExists   = errors.New("meta: topic already exists")
	ErrInvalid       = errors.New("meta: invalid configuration")
	ErrNoOffset      = errors.New("meta: no committed offset")
)

// Store holds topics, groups and consumer offsets.
type Store struct {
	db   *pebble.DB
	lazy *lazySync     // syncs after the writes that do not wait for the disk
	disk *disk.Monitor // nil: writes are not gated
	fs   *kv.DiskFS    // with disk: pebble's files

	// fatal records pebble's fatal error: it could not write or sync its
	// log (its commit pipeline cannot go on after that) or its MANIFEST.
	// The store then takes no more writes.
	fatal *kv.Fatal

	wmu    sync.Mutex   // serializes writers of topics and groups
	mu     sync.RWMutex // guards the maps
	topics map[string]Topic
	groups map[string]Group
}

// Options configure a Store. The zero value works.
type Options struct {
	// Logger receives pebble's log lines. Default discards them.
	Logger *slog.Logger
	// Disk, when set, gates writes: they are refused while it says the
	// disk has no space or failed, and pebble's files go through
	// kv.DiskFS, so that a write that finds the disk full waits for space
	// instead of breaking the database.
	Disk *disk.Monitor
	// FS is the file system the database lives in. Default the
	// operating system's.
	FS vfs.FS
}

// Open opens (creating if needed) the metadata store in dir; nil options
// are the zero Options.
func Open(dir string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	fs := o.FS
	s := &Store{disk: o.Disk, topics: map[string]Topic{}, groups: map[string]Group{}}
	if o.Disk != nil {
		s.fs = kv.NewDiskFS(fs, o.Disk)
		fs = s.fs
	}
	s.fatal = kv.NewFatal(s.failed)
	var db *pebble.DB
	err := s.fatal.Run(func() (err error) {
		db, err = pebble.Open(dir, &pebble.Options{
			Logger:        kv.Logger{L: o.Logger, Fatal: s.fatal},
			EventListener: kv.NewBackgroundErrors(o.Logger).Listener(),
			FS:            fs,
		})
		return err
	})
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("meta: %s is in use by another process; is another karman running on this data directory? (%w)", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("meta: open %s: %w", dir, err)
	}
	s.db = db
	if err := s.load(); err != nil {
		db.Close()
		return nil, err
	}
	s.lazy = startLazySync(db, o.Logger, s.fatal)
	return s, nil
}

func (s *Store) load() error {
	if err := loadJSON(s.db, 't', func(t Topic) { s.topics[t.Name] = t }); err != nil {
		return err
	}
	return loadJSON(s.db, 'g', func(g Group) { s.groups[g.Name] = g })
}

func loadJSON[T any](db *pebble.DB, prefix byte, put func(T)) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefix}, UpperBound: []byte{prefix + 1}})
	if err != nil {
		return fmt.Errorf("meta: load: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		var v T
		if err := json.Unmarshal(it.Value(), &v); err != nil {
			return fmt.Errorf("meta: corrupt record %q: %w", it.Key(), err)
		}
		put(v)
	}
	return it.Error()
}

// Close closes the store; what was written is then on disk. With a disk
// monitor, close the monitor first.
//
// After a fatal error, or when a write is paused for good (the disk
// failed, or was out of space when the monitor closed), the database is
// left open, since pebble's Close would wait for the paused work, and
// Close returns an error saying so: what was written since the last sync
// that reached the disk is lost (at most lazySyncInterval of offset
// commits and pop states, as with a crash).
func (s *Store) Close() error {
	s.lazy.close(s.stuck)
	if err := s.Failure(); err != nil {
		return fmt.Errorf("meta: close: %w", err)
	}
	// Pebble's Close waits for flushes and compactions, which may find
	// the disk failing meanwhile.
	done := make(chan error, 1)
	go func() { done <- s.db.Close() }()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
		}
		if err := s.Failure(); err != nil {
			return fmt.Errorf("meta: close: %w", err)
		}
		if s.stuck() {
			err := s.disk.Refuse(disk.OK)
			if err == nil {
				err = disk.ErrFull
			}
			return fmt.Errorf("meta: close: a write waits on the disk, the store is left as its last sync wrote it: %w", err)
		}
	}
}

// stuck reports whether a write of the database is paused for good.
func (s *Store) stuck() bool { return s.fs != nil && s.fs.Stuck() }

func (s *Store) putJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("meta: encode %q: %w", key, err)
	}
	if err := s.db.Set(key, b, pebble.Sync); err != nil {
		return fmt.Errorf("meta: write %q: %w", key, err)
	}
	return nil
}

// Topic returns the named topic.
func (s *Store) Topic(name string) (Topic, error) {
	s.mu.RLock()
	t, ok := s.topics[name]
	s.mu.RUnlock()
	if !ok {
		return Topic{}, fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	}
	return t, nil
}

// Topics returns every topic, sorted by name.
func (s *Store) Topics() []Topic {
	s.mu.RLock()
	out := make([]Topic, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// PutTopic creates or replaces a topic.
func (s *Store) PutTopic(t Topic) error {
	if t.ReadQueues <= 0 || t.WriteQueues <= 0 {
		return fmt.Errorf("%w: topic %s needs at least one read and one write queue", ErrInvalid, t.Name)
	}
	return s.write("put topic "+t.Name, func() error {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if err := s.putJSON(append([]byte{'t'}, t.Name...), t); err != nil {
			return err
		}
		s.mu.Lock()
		s.topics[t.Name] = t
		s.mu.Unlock()
		return nil
	})
}

// CreateTopic stores t unless a topic of that name exists; it returns the
// stored topic and whether it was created.
func (s *Store) CreateTopic(t Topic) (Topic, bool, error) {
	if old, err := s.Topic(t.Name); err == nil {
		return old, false, nil
	}
	if t.ReadQueues <= 0 || t.WriteQueues <= 0 {
		return Topic{}, false, fmt.Errorf("%w: topic %s needs at least one read and one write queue", ErrInvalid, t.Name)
	}
	var out Topic
	var created bool
	err := s.write("create topic "+t.Name, func() error {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if old, err := s.Topic(t.Name); err == nil {
			out = old
			return nil
		}
		if err := s.putJSON(append([]byte{'t'}, t.Name...), t); err != nil {
			return err
		}
		s.mu.Lock()
		s.topics[t.Name] = t
		s.mu.Unlock()
		out, created = t, true
		return nil
	})
	if err != nil {
		return Topic{}, false, err
	}
	return out, created, nil
}

// DeleteTopic removes a topic and every consumer offset stored for it.
func (s *Store) DeleteTopic(name string) error {
	return s.write("delete topic "+name, func() error { return s.deleteTopic(name) })
}

func (s *Store) deleteTopic(name string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.Topic(name); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Delete(append([]byte{'t'}, name...), nil); err != nil {
		return err
	}
	// Offsets and pop states are found by scanning their keys rather than
	// s.groups: a group commits offsets without being configured.
	if err := s.deleteTopicRecords(b, name); err != nil {
		return fmt.Errorf("meta: delete topic %s: %w", name, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("meta: delete topic %s: %w", name, err)
	}
	s.mu.Lock()
	delete(s.topics, name)
	s.mu.Unlock()
	return nil
}

// deleteTopicRecords adds to b the deletion of the offsets and pop states
// every group holds in topic. It visits each group's key range once,
// skipping from one group to the next.
func (s *Store) deleteTopicRecords(b *pebble.Batch, topic string) error {
	kinds := []struct {
		prefix byte
		group  func(group string) []byte
		topic  func(group, topic string) []byte
	}{
		{'o', groupOffsetPrefix, offsetPrefix},
		{'p', popGroupPrefix, popTopicPrefix},
	}
	for _, kind := range kinds {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kind.prefix}, UpperBound: []byte{kind.prefix + 1}})
		if err != nil {
			return err
		}
		for valid := it.First(); valid; {
			k := it.Key()[1:]
			if len(k) < 1 || len(k) < 1+int(k[0]) {
				valid = it.Next()
				continue
			}
			group := string(k[1 : 1+k[0]])
			p := kind.topic(group, topic)
			if err := b.DeleteRange(p, kv.PrefixEnd(p), nil); err != nil {
				it.Close()
				return err
			}
			valid = it.SeekGE(kv.PrefixEnd(kind.group(group)))
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}

// Group returns the named consumer group.
func (s *Store) Group(name string) (Group, error) {
	s.mu.RLock()
	g, ok := s.groups[name]
	s.mu.RUnlock()
	if !ok {
		return Group{}, fmt.Errorf("%w: %s", ErrGroupNotFound, name)
	}
	return g, nil
}

// Groups returns every consumer group, sorted by name.
func (s *Store) Groups() []Group {
	s.mu.RLock()
	out := make([]Group, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// PutGroup creates or replaces a consumer group.
func (s *Store) PutGroup(g Group) error {
	return s.write("put group "+g.Name, func() error {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if err := s.putJSON(append([]byte{'g'}, g.Name...), g); err != nil {
			return err
		}
		s.mu.Lock()
		s.groups[g.Name] = g
		s.mu.Unlock()
		return nil
	})
}

// CreateGroup stores g unless a group of that name exists; it returns the
// stored group and whether it was created.
func (s *Store) CreateGroup(g Group) (Group, bool, error) {
	if old, err := s.Group(g.Name); err == nil {
		return old, false, nil
	}
	var out Group
	var created bool
	err := s.write("create group "+g.Name, func() error {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if old, err := s.Group(g.Name); err == nil {
			out = old
			return nil
		}
		if err := s.putJSON(append([]byte{'g'}, g.Name...), g); err != nil {
			return err
		}
		s.mu.Lock()
		s.groups[g.Name] = g
		s.mu.Unlock()
		out, created = g, true
		return nil
	})
	if err != nil {
		return Group{}, false, err
	}
	return out, created, nil
}

// DeleteGroup removes a consumer group and all its offsets.
func (s *Store) DeleteGroup(name string) error {
	return s.write("delete group "+name, func() error { return s.deleteGroup(name) })
}

func (s *Store) deleteGroup(name string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.Group(name); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Delete(append([]byte{'g'}, name...), nil); err != nil {
		return err
	}
	for _, p := range [][]byte{groupOffsetPrefix(name), popGroupPrefix(name)} {
		if err := b.DeleteRange(p, kv.PrefixEnd(p), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("meta: delete group %s: %w", name, err)
	}
	s.mu.Lock()
	delete(s.groups, name)
	s.mu.Unlock()
	return nil
}

// CommitOffset stores the next offset group will consume in (topic, queue).
// The write goes to pebble's log without waiting for it to reach the disk
// (consumers commit on every pull); the store syncs the log within
// lazySyncInterval. A crash can lose the commits of that interval, and
// those messages are then delivered again, as with RocketMQ brokers,
// which persist offsets every few seconds.
func (s *Store) CommitOffset(group, topic string, queue int32, offset int64) error {
	return s.write("commit offset", func() error {
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], uint64(offset))
		if err := s.db.Set(offsetKey(group, topic, queue), v[:], pebble.NoSync); err != nil {
			return fmt.Errorf("meta: commit offset %s/%s/%d: %w", group, topic, queue, err)
		}
		s.lazy.wrote()
		return nil
	})
}

// Offset returns the committed offset of group in (topic, queue), or an
// error matching ErrNoOffset.
func (s *Store) Offset(group, topic string, queue int32) (int64, error) {
	v, closer, err := s.db.Get(offsetKey(group, topic, queue))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, fmt.Errorf("%w: group %s, topic %s, queue %d", ErrNoOffset, group, topic, queue)
	}
	if err != nil {
		return 0, fmt.Errorf("meta: read offset: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("meta: corrupt offset record for %s/%s/%d", group, topic, queue)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// Offsets returns every committed offset of group in topic, by queue id.
func (s *Store) Offsets(group, topic string) (map[int32]int64, error) {
	p := offsetPrefix(group, topic)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: kv.PrefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := map[int32]int64{}
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != len(p)+4 || len(v) != 8 {
			continue
		}
		out[int32(binary.BigEndian.Uint32(k[len(p):]))] = int64(binary.BigEndian.Uint64(v))
	}
	return out, it.Error()
}

// OffsetTopics lists the topics in which group has committed offsets.
func (s *Store) OffsetTopics(group string) ([]string, error) {
	p := groupOffsetPrefix(group)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: kv.PrefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []string
	for it.First(); it.Valid(); {
		_, topic, ok := parseOffsetKey(it.Key())
		if !ok {
			it.Next()
			continue
		}
		out = append(out, topic)
		next := kv.PrefixEnd(offsetPrefix(group, topic))
		it.SeekGE(next)
	}
	return out, it.Error()
}

// OffsetGroups returns, sorted, the groups that have committed an offset
// in topic. It reads every committed offset: it is for administration.
func (s *Store) OffsetGroups(topic string) ([]string, error) {
	var out []string
	err := s.scanOffsets(func(group, t string) {
		if t == topic && (len(out) == 0 || out[len(out)-1] != group) {
			out = append(out, group)
		}
	})
	return out, err
}

// scanOffsets calls fn with the group and topic of every committed offset,
// in key order (group, then topic).
func (s *Store) scanOffsets(fn func(group, topic string)) error {
	prefix := []byte{'o'}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: kv.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		group, topic, ok := parseOffsetKey(it.Key())
		if ok {
			fn(group, topic)
		}
	}
	return it.Error()
}

// parseOffsetKey splits an offset key (see offsetKey) into its group and
// topic.
func parseOffsetKey(k []byte) (group, topic string, ok bool) {
	if len(k) < 2 || k[0] != 'o' {
		return "", "", false
	}
	g := int(k[1])
	if len(k) < 2+g+1 {
		return "", "", false
	}
	t := int(k[2+g])
	if len(k) != 2+g+1+t+4 {
		return "", "", false
	}
	return string(k[2 : 2+g]), string(k[3+g : 3+g+t]), true
}

func groupOffsetPrefix(group string) []byte {
	k := make([]byte, 0, 2+len(group))
	k = append(k, 'o', byte(len(group)))
	return append(k, group...)
}

func offsetPrefix(group, topic string) []byte {
	k := groupOffsetPrefix(group)
	k = append(k, byte(len(topic)))
	return append(k, topic...)
}

func offsetKey(group, topic string, queue int32) []byte {
	return binary.BigEndian.AppendUint32(offsetPrefix(group, topic), uint32(queue))
}

// Secret returns a named secret of the broker (for example the key receipt
// handles are authenticated with); ok is false when it is not set.
func (s *Store) Secret(name string) (secret []byte, ok bool, err error) {
	v, closer, err := s.db.Get(append([]byte{'s'}, name...))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("meta: read secret %s: %w", name, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), true, nil
}

// PutSecret stores a named secret.
func (s *Store) PutSecret(name string, secret []byte) error {
	return s.write("put secret "+name, func() error {
		if err := s.db.Set(append([]byte{'s'}, name...), secret, pebble.Sync); err != nil {
			return fmt.Errorf("meta: write secret %s: %w", name, err)
		}
		return nil
	})
}

// AuthRecords returns every record of the access-control list (package
// acl), by name. The store keeps them opaque.
func (s *Store) AuthRecords() (map[string][]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{'u'}, UpperBound: []byte{'u' + 1}})
	if err != nil {
		return nil, fmt.Errorf("meta: read auth records: %w", err)
	}
	defer it.Close()
	out := map[string][]byte{}
	for it.First(); it.Valid(); it.Next() {
		out[string(it.Key()[1:])] = append([]byte(nil), it.Value()...)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("meta: read auth records: %w", err)
	}
	return out, nil
}

// PutAuthRecord stores the access-control record name, synced.
func (s *Store) PutAuthRecord(name string, rec []byte) error {
	if name == "" {
		return fmt.Errorf("%w: auth record without a name", ErrInvalid)
	}
	return s.write("put auth record", func() error {
		if err := s.db.Set(append([]byte{'u'}, name...), rec, pebble.Sync); err != nil {
			return fmt.Errorf("meta: write auth record: %w", err)
		}
		return nil
	})
}

// DeleteAuthRecord deletes the access-control record name, synced; a
// missing one is no error.
func (s *Store) DeleteAuthRecord(name string) error {
	return s.write("delete auth record", func() error {
		if err := s.db.Delete(append([]byte{'u'}, name...), pebble.Sync); err != nil {
			return fmt.Errorf("meta: delete auth record: %w", err)
		}
		return nil
	})
}
