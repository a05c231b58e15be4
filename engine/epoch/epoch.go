package epoch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Errors of the package. Each is wrapped with context; match with
// errors.Is.
var (
	// ErrCorrupt: the epoch file does not decode or fails its checksum.
	ErrCorrupt = errors.New("epoch: corrupt epoch file")
	// ErrOrder: an entry would not follow the last one (a lower epoch, or
	// a start before the last start).
	ErrOrder = errors.New("epoch: entry out of order")
)

// Entry is one epoch of a log: the records from Start up to the next
// entry's Start (or the log's end, for the last) were written by the
// master of epoch Epoch.
type Entry struct {
	Epoch uint32
	Start int64
}

const (
	magic     = 0x4b45504f
	version   = 1
	entrySize = 12
	// maxEntries bounds a file: an epoch file holding more has been
	// damaged, not written by this package (a group that fails over
	// every second for a year has fewer).
	maxEntries = 1 << 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns the file image of entries.
func Encode(entries []Entry) []byte {
	b := make([]byte, 12, 16+entrySize*len(entries))
	binary.BigEndian.PutUint32(b[0:], magic)
	binary.BigEndian.PutUint32(b[4:], version)
	binary.BigEndian.PutUint32(b[8:], uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, e.Epoch)
		b = binary.BigEndian.AppendUint64(b, uint64(e.Start))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// Decode reads a file image. Anything but an image Encode made from
// entries in order is an error matching ErrCorrupt. It never panics.
func Decode(b []byte) ([]Entry, error) {
	if len(b) < 16 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	if m := binary.BigEndian.Uint32(b); m != magic {
		return nil, fmt.Errorf("%w: bad magic %#x", ErrCorrupt, m)
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != version {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrCorrupt, v, version)
	}
	n := binary.BigEndian.Uint32(b[8:])
	if n > maxEntries || int64(len(b)) != 16+entrySize*int64(n) {
		return nil, fmt.Errorf("%w: %d bytes cannot hold %d entries", ErrCorrupt, len(b), n)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	out := make([]Entry, n)
	for i := range out {
		p := body[12+entrySize*i:]
		out[i] = Entry{Epoch: binary.BigEndian.Uint32(p), Start: int64(binary.BigEndian.Uint64(p[4:]))}
		if err := Check(out[:i], out[i]); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrCorrupt, i, err)
		}
		if i > 0 && out[i].Start == out[i-1].Start {
			return nil, fmt.Errorf("%w: entries %d and %d both start at %d", ErrCorrupt, i-1, i, out[i].Start)
		}
	}
	return out, nil
}

// Check returns nil if e may follow entries: a higher epoch than the
// last and a start at or after its start (at its start, e replaces it),
// with Start not negative.
func Check(entries []Entry, e Entry) error {
	if e.Start < 0 {
		return fmt.Errorf("%w: epoch %d starts at %d", ErrOrder, e.Epoch, e.Start)
	}
	if len(entries) == 0 {
		return nil
	}
	last := entries[len(entries)-1]
	if e.Epoch <= last.Epoch || e.Start < last.Start {
		return fmt.Errorf("%w: epoch %d at %d cannot follow epoch %d at %d", ErrOrder, e.Epoch, e.Start, last.Epoch, last.Start)
	}
	return nil
}

// Name is the file's name in its directory.
const Name = "epochs"

// File is the durable epoch list of one log.
type File struct {
	path    string
	mu      sync.Mutex
	entries []Entry
}

// Open reads the epoch file in dir (an empty list when there is none).
func Open(dir string) (*File, error) {
	f := &File{path: filepath.Join(dir, Name)}
	b, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("epoch: open: %w", err)
	}
	if f.entries, err = Decode(b); err != nil {
		return nil, fmt.Errorf("epoch: open %s: %w", f.path, err)
	}
	return f, nil
}

// Entries returns a copy of the list, oldest first.
func (f *File) Entries() []Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.entries)
}

// Last returns the newest entry, and false when there is none.
func (f *File) Last() (Entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.entries) == 0 {
		return Entry{}, false
	}
	return f.entries[len(f.entries)-1], true
}

// Append records e durably before it returns. An e that starts where
// the last entry starts replaces it (that epoch holds no record). It
// fails with ErrOrder unless Check allows e.
func (f *File) Append(e Entry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := Check(f.entries, e); err != nil {
		return err
	}
	next := slices.Clone(f.entries)
	if n := len(next); n > 0 && next[n-1].Start == e.Start {
		next = next[:n-1]
	}
	next = append(next, e)
	return f.write(next)
}

// TruncateFrom drops what a log cut at off no longer holds: the entries
// that start at or after off. It is durable before it returns.
func (f *File) TruncateFrom(off int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := len(f.entries)
	for i > 0 && f.entries[i-1].Start >= off {
		i--
	}
	if i == len(f.entries) {
		return nil
	}
	return f.write(slices.Clone(f.entries[:i]))
}

// write replaces the file with entries and, once that is durable, the
// list in memory. Called with mu held.
func (f *File) write(entries []Entry) error {
	tmp := f.path + ".tmp"
	err := writeSynced(tmp, Encode(entries))
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(f.path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("epoch: write %s: %w", f.path, err)
	}
	f.entries = entries
	return nil
}

func writeSynced(path string, b []byte) error {
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	if err == nil {
		err = w.Sync()
	}
	return errors.Join(err, w.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// EndOf returns where epoch i of entries ends in a log that ends at end:
// the next entry's start, or end for the last.
func EndOf(entries []Entry, i int, end int64) int64 {
	if i+1 < len(entries) {
		return entries[i+1].Start
	}
	return end
}

// ConsistentPoint returns the offset up to which a member's log (mine,
// ending at myEnd) agrees with its master's (theirs, ending at
// theirEnd): it walks the member's epochs newest first to the first
// that the master has with the same start, and returns the lower of the
// two ends of that epoch. Records of one epoch at one offset were
// written by one master, so both logs hold the same bytes below that
// point. A member with no epochs has nothing to compare and keeps its
// log (the point is myEnd); nor does a member whose epochs hold no
// record at all (a master promoted and stopped before its first write,
// which its successor never saw). ok is false when no epoch matches: the
// logs share no known prefix and the member must not copy the master's
// records onto its own.
func ConsistentPoint(mine []Entry, myEnd int64, theirs []Entry, theirEnd int64) (point int64, ok bool) {
	if len(mine) == 0 || myEnd <= mine[0].Start {
		return myEnd, true
	}
	for i := len(mine) - 1; i >= 0; i-- {
		j, found := slices.BinarySearchFunc(theirs, mine[i].Epoch, func(e Entry, n uint32) int {
			switch {
			case e.Epoch < n:
				return -1
			case e.Epoch > n:
				return 1
			}
			return 0
		})
		if !found || theirs[j].Start != mine[i].Start {
			continue
		}
		return min(EndOf(mine, i, myEnd), EndOf(theirs, j, theirEnd)), true
	}
	return 0, false
}
