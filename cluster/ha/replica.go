package ha

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/epoch"
)

// Store is what a replica copies the master's log into; *engine.Engine
// (opened with Options.Replica, or demoted) is one.
type Store interface {
	ApplyMetadata(engine.Metadata) error
	Epochs() []epoch.Entry
	LogRange() (first, end int64)
	Replicate(ep epoch.Entry, off int64, frames []byte) (int64, error)
	Truncate(off int64) error
}

// Errors a replica's session ends with.
var (
	// ErrRefused: the master refused the replica; the reason follows.
	ErrRefused = errors.New("ha: refused by the master")
	// ErrDiverged: the replica's log and the master's share no epoch,
	// so no prefix is known to be common; the replica copies nothing.
	ErrDiverged = errors.New("ha: the replica's log and the master's have diverged")
	// ErrStaleMaster: the master's newest epoch is older than the
	// replica's: it was deposed, and copying from it would lose records.
	ErrStaleMaster = errors.New("ha: the master's epoch is older than the replica's")
)

// ReplicaOptions configure a Replica. The zero value works.
type ReplicaOptions struct {
	// BrokerName is the broker group the replica belongs to; the master
	// refuses another.
	BrokerName string
	// ID names the replica to the master (its logs and ReplicaState).
	ID string
	// SegmentSize is the replica's commit-log segment size, which must
	// be the master's.
	SegmentSize int64
	// Timeout ends a session when the master sends nothing (not even a
	// heartbeat) for this long. Default 10s.
	Timeout time.Duration
	// Retry is the pause between sessions. Default 1s.
	Retry time.Duration
	// Logger gets session events. Default slog.Default().
	Logger *slog.Logger
}

func (o *ReplicaOptions) ensureDefaults() {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Replica copies a master's log into a Store.
type Replica struct {
	opts  ReplicaOptions
	store Store
	// masterEnd is the master's end as the last transfer said.
	masterEnd atomic.Int64
}

// NewReplica returns a Replica of store; Run or Session drives it.
func NewReplica(store Store, o ReplicaOptions) *Replica {
	o.ensureDefaults()
	return &Replica{opts: o, store: store}
}

// Lag returns how many bytes of the master's log, as the master last
// reported it, the replica does not hold.
func (r *Replica) Lag() int64 {
	_, end := r.store.LogRange()
	return max(0, r.masterEnd.Load()-end)
}

// Run follows the master at addr (addr() is asked before each session,
// so the master may change) until ctx ends, starting a new session
// after each that ends.
func (r *Replica) Run(ctx context.Context, addr func() string) {
	for ctx.Err() == nil {
		if a := addr(); a != "" {
			err := r.Session(ctx, a)
			if ctx.Err() != nil {
				return
			}
			r.opts.Logger.Warn("ha: replication session ended", "master", a, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.opts.Retry):
		}
	}
}

// Session runs one replication session with the master at addr: hello,
// the master's epochs, a cut back to the consistent point when the
// replica holds records the master does not, then records until the
// link fails or ctx ends. It returns why it ended.
func (r *Replica) Session(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: r.opts.Timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("ha: dial the master: %w", err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-ctx.Done(); c.Close() }()

	_, end := r.store.LogRange()
	hello := message{typ: typeHello, version: Version, brokerName: r.opts.BrokerName, replicaID: r.opts.ID, segmentSize: r.opts.SegmentSize, end: end}
	c.SetWriteDeadline(time.Now().Add(r.opts.Timeout))
	if _, err := c.Write(hello.encode(nil)); err != nil {
		return fmt.Errorf("ha: send hello: %w", err)
	}
	br := bufio.NewReaderSize(c, 256<<10)
	c.SetReadDeadline(time.Now().Add(r.opts.Timeout))
	welcome, _, err := readMessage(br, nil)
	if err != nil {
		return fmt.Errorf("ha: read the master's welcome: %w", err)
	}
	switch welcome.typ {
	case typeRefuse:
		return fmt.Errorf("%w: %s", ErrRefused, welcome.reason)
	case typeWelcome:
	default:
		return fmt.Errorf("%w: expected a welcome, got a message of type %d", ErrProtocol, welcome.typ)
	}
	if r.opts.SegmentSize != 0 && welcome.segmentSize != 0 && welcome.segmentSize != r.opts.SegmentSize {
		return fmt.Errorf("%w: the master's segment size is %d, the replica's %d", ErrRefused, welcome.segmentSize, r.opts.SegmentSize)
	}
	if err := r.reconcile(welcome.epochs, welcome.end); err != nil {
		return err
	}
	r.masterEnd.Store(welcome.end)
	_, end = r.store.LogRange()
	w := bufio.NewWriterSize(c, 512)
	ack := func(off int64) error {
		c.SetWriteDeadline(time.Now().Add(r.opts.Timeout))
		if _, err := w.Write((&message{typ: typeAck, offset: off}).encode(nil)); err != nil {
			return fmt.Errorf("ha: acknowledge: %w", err)
		}
		return w.Flush()
	}
	if err := ack(end); err != nil {
		return err
	}
	r.opts.Logger.Info("ha: replicating", "master", addr, "from", end, "master_end", welcome.end)
	var buf []byte
	unacked := false // a transfer stored and not acknowledged yet
	for {
		c.SetReadDeadline(time.Now().Add(r.opts.Timeout))
		var m *message
		m, buf, err = readMessage(br, buf)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("ha: read a transfer: %w", err)
		}
		if m.typ == typeRefuse { // the start it asked for
			return fmt.Errorf("%w: %s", ErrRefused, m.reason)
		}
		if m.typ == typeMetadata {
			var md engine.Metadata
			if err := json.Unmarshal(m.body, &md); err != nil {
				return fmt.Errorf("%w: metadata: %w", ErrProtocol, err)
			}
			if err := r.store.ApplyMetadata(md); err != nil {
				r.opts.Logger.Warn("ha: metadata not all applied", "err", err)
			}
			if unacked && !wholeBuffered(br) {
				if err := ack(end); err != nil {
					return err
				}
				unacked = false
			}
			continue
		}
		if m.typ != typeTransfer {
			return fmt.Errorf("%w: expected a transfer, got a message of type %d", ErrProtocol, m.typ)
		}
		r.masterEnd.Store(m.end)
		if len(m.frames) > 0 {
			if end, err = r.store.Replicate(m.epoch, m.offset, m.frames); err != nil {
				return fmt.Errorf("ha: replicate %d bytes at %d: %w", len(m.frames), m.offset, err)
			}
		}
		// One ack for every transfer already read: when the next message
		// is whole in the buffer, it is handled before the master hears
		// of either, and nothing waits on the network meanwhile.
		if wholeBuffered(br) {
			unacked = true
			continue
		}
		if err := ack(end); err != nil {
			return err
		}
		unacked = false
	}
}

// wholeBuffered reports whether br holds a whole message, read from the
// connection already.
func wholeBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 4 {
		return false
	}
	b, err := br.Peek(4)
	if err != nil {
		return false
	}
	return uint64(br.Buffered()) >= 4+uint64(binary.BigEndian.Uint32(b))
}

// reconcile cuts the replica's log back to where it agrees with the
// master's (epochs theirs, ending at theirEnd).
func (r *Replica) reconcile(theirs []epoch.Entry, theirEnd int64) error {
	mine := r.store.Epochs()
	_, myEnd := r.store.LogRange()
	if len(mine) > 0 {
		last := mine[len(mine)-1]
		if len(theirs) == 0 || theirs[len(theirs)-1].Epoch < last.Epoch {
			return fmt.Errorf("%w: the replica is at epoch %d, the master's epochs are %v", ErrStaleMaster, last.Epoch, theirs)
		}
	}
	point, ok := epoch.ConsistentPoint(mine, myEnd, theirs, theirEnd)
	if !ok {
		return fmt.Errorf("%w: replica epochs %v, master epochs %v", ErrDiverged, mine, theirs)
	}
	if point < myEnd || (len(mine) > 0 && mine[len(mine)-1].Start >= point) {
		r.opts.Logger.Warn("ha: cutting the log back to the master's", "at", point, "end", myEnd)
		if err := r.store.Truncate(point); err != nil {
			return fmt.Errorf("ha: cut the log back to %d: %w", point, err)
		}
	}
	return nil
}
