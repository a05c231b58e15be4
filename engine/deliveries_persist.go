package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The delivery history survives a restart: the engine writes it to one
// file in its directory when it closes and, while records come in, every
// deliverySaveInterval, and reads it back when it opens. The file is
// written whole to a temporary name and renamed over the last one, with a
// CRC over its content, so a crash leaves the last complete snapshot: what
// was recorded after it is lost, the history is never torn. A file that
// does not decode is logged and left out (the history starts empty).
const (
	deliveryFile  = "deliveries"
	deliveryMagic = "KDH1"
	// deliveryMaxString bounds each string of a record in the file; the
	// engine's own names are far shorter.
	deliveryMaxString = 4096
)

// deliverySaveInterval is how often a changed history is saved; a
// variable for the crash test's child, which saves far more often.
var deliverySaveInterval = 30 * time.Second

// ErrBadDeliveries is the error of a delivery-history file that does not
// decode.
var ErrBadDeliveries = errors.New("bad delivery history file")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// snapshot returns every group's records, oldest first, and marks the
// groups clean; changed is false when no group had a record since the
// last snapshot.
func (d *deliveries) snapshot() (groups map[string][]Delivery, changed bool) {
	groups = map[string][]Delivery{}
	d.groups.Range(func(k, v any) bool {
		g := v.(*groupDeliveries)
		g.mu.Lock()
		changed = changed || g.dirty
		g.dirty = false
		recs := make([]Delivery, 0, len(g.recs))
		recs = append(recs, g.recs[g.next:]...)
		recs = append(recs, g.recs[:g.next]...)
		g.mu.Unlock()
		if len(recs) > 0 {
			groups[k.(string)] = recs
		}
		return true
	})
	return groups, changed
}

// restore puts groups' records (oldest first, as decodeDeliveries gives
// them, within the bounds) into the empty history.
func (d *deliveries) restore(groups map[string][]Delivery) {
	for name, recs := range groups {
		g := d.ring(name)
		if g == nil {
			return
		}
		g.mu.Lock()
		for _, r := range recs {
			if r.Kind == DeliveryCommit {
				if g.commits == nil {
					g.commits = map[queueRef]int64{}
				}
				g.commits[queueRef{r.Topic, r.Queue}] = r.To
			}
			g.put(r)
		}
		g.dirty = false
		g.mu.Unlock()
	}
}

// encodeDeliveries encodes groups for the history file: the magic, the
// groups (sorted by name, for a stable file) with their records, and a
// CRC-32C of all that.
func encodeDeliveries(groups map[string][]Delivery) []byte {
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	slices.Sort(names)
	b := []byte(deliveryMagic)
	b = binary.AppendUvarint(b, uint64(len(names)))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, n := range names {
		recs := groups[n]
		str(n)
		b = binary.AppendUvarint(b, uint64(len(recs)))
		for _, r := range recs {
			b = binary.AppendVarint(b, r.At)
			b = append(b, byte(r.Kind))
			str(r.Topic)
			b = binary.AppendVarint(b, int64(r.Queue))
			b = binary.AppendVarint(b, r.From)
			b = binary.AppendVarint(b, r.To)
			str(r.ID)
			b = binary.AppendVarint(b, int64(r.Attempt))
			b = binary.AppendVarint(b, int64(r.Delay))
			str(r.Protocol)
			str(r.Client)
			addr := ""
			if r.Addr.IsValid() {
				addr = r.Addr.String()
			}
			str(addr)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// decodeDeliveries decodes a history file, refusing with ErrBadDeliveries
// what encodeDeliveries does not make: a wrong magic or CRC, a count past
// the history's bounds, a string longer than deliveryMaxString, an
// unknown kind, trailing bytes.
func decodeDeliveries(b []byte) (map[string][]Delivery, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadDeliveries, fmt.Sprintf(format, args...))
	}
	if len(b) < len(deliveryMagic)+4 || string(b[:len(deliveryMagic)]) != deliveryMagic {
		return nil, bad("no %s header", deliveryMagic)
	}
	body := b[:len(b)-4]
	if got, want := crc32.Checksum(body, crcTable), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return nil, bad("checksum %08x, want %08x", got, want)
	}
	p := body[len(deliveryMagic):]
	var err error
	uv := func(max uint64) uint64 {
		if err != nil {
			return 0
		}
		v, n := binary.Uvarint(p)
		if n <= 0 || v > max {
			err = bad("count out of bounds")
			return 0
		}
		p = p[n:]
		return v
	}
	sv := func(min, max int64) int64 {
		if err != nil {
			return 0
		}
		v, n := binary.Varint(p)
		if n <= 0 || v < min || v > max {
			err = bad("number out of bounds")
			return 0
		}
		p = p[n:]
		return v
	}
	str := func() string {
		l := uv(deliveryMaxString)
		if err != nil {
			return ""
		}
		if uint64(len(p)) < l {
			err = bad("string past the end")
			return ""
		}
		s := string(p[:l])
		p = p[l:]
		return s
	}
	const i32 = 1<<31 - 1
	groups := map[string][]Delivery{}
	total := 0
	for range uv(deliveryGroups) {
		name := str()
		n := uv(deliveryRing)
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, bad("a group without a name")
		}
		if _, dup := groups[name]; dup {
			return nil, bad("group %q twice", name)
		}
		if total += int(n); total > deliveryRecords {
			return nil, bad("more than %d records", deliveryRecords)
		}
		recs := make([]Delivery, 0, min(n, uint64(len(p))))
		for range n {
			var r Delivery
			r.At = sv(-1<<62, 1<<62)
			if err == nil {
				if len(p) == 0 || p[0] == 0 || int(p[0]) >= len(deliveryKinds) {
					return nil, bad("unknown kind")
				}
				r.Kind = DeliveryKind(p[0])
				p = p[1:]
			}
			r.Topic = str()
			r.Queue = int32(sv(-i32-1, i32))
			r.From = sv(-1<<63, 1<<63-1)
			r.To = sv(-1<<63, 1<<63-1)
			r.ID = str()
			r.Attempt = int32(sv(-i32-1, i32))
			r.Delay = time.Duration(sv(-1<<63, 1<<63-1))
			r.Protocol = str()
			r.Client = str()
			if a := str(); a != "" && err == nil {
				if r.Addr, err = netip.ParseAddrPort(a); err != nil {
					return nil, bad("address %q", a)
				}
			}
			if err != nil {
				return nil, err
			}
			recs = append(recs, r)
		}
		groups[name] = recs
	}
	if err != nil {
		return nil, err
	}
	if len(p) != 0 {
		return nil, bad("%d bytes after the last group", len(p))
	}
	return groups, nil
}

// loadDeliveries reads the history file into the empty history; a file
// that does not decode is logged and left out.
func (e *Engine) loadDeliveries() {
	path := filepath.Join(e.dir, deliveryFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var groups map[string][]Delivery
	if err == nil {
		groups, err = decodeDeliveries(b)
	}
	if err != nil {
		e.opts.Logger.Warn("the delivery history of the last run is lost", "file", path, "err", err)
		return
	}
	e.history.restore(groups)
}

// saveDeliveries writes the history file when a group recorded anything
// since the last write (always when force), unless the disk refuses
// writes.
func (e *Engine) saveDeliveries(force bool) {
	groups, changed := e.history.snapshot()
	if !changed && !force {
		return
	}
	if e.Health().Disk != DiskOK {
		return
	}
	path := filepath.Join(e.dir, deliveryFile)
	if err := writeFileSynced(path, encodeDeliveries(groups)); err != nil {
		e.opts.Logger.Warn("the delivery history was not saved", "file", path, "err", err)
	}
}

// writeFileSynced replaces path by b: written to a temporary file, synced,
// renamed over path, and the directory synced.
func writeFileSynced(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// deliverySaveLoop writes the history every deliverySaveInterval while
// records come in, until the engine closes (Close writes it last).
func (e *Engine) deliverySaveLoop() {
	defer e.wg.Done()
	t := time.NewTicker(deliverySaveInterval)
	defer t.Stop()
	for {
		select {
		case <-e.closing:
			return
		case <-t.C:
			e.saveDeliveries(false)
		}
	}
}
