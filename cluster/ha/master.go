package ha

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/epoch"
)

// Log is what the master streams from; *engine.Engine is one.
type Log interface {
	Metadata() (engine.Metadata, error)
	ReadFrames(off int64, dst []byte, max int) ([]byte, int64, error)
	Epochs() []epoch.Entry
	LogRange() (first, end int64)
	WaitAppended(ctx context.Context, off int64) error
	// ReplicasAcked is told when replicas acknowledge more of the log.
	ReplicasAcked()
}

// MasterOptions configure a Master. The zero value works.
type MasterOptions struct {
	// BrokerName is the broker group; a replica naming another is
	// refused. Default: any name is accepted.
	BrokerName string
	// SegmentSize is the commit log's segment size; a replica with
	// another is refused (its log could not be a copy). Default: not
	// checked.
	SegmentSize int64
	// Sync makes the master's sends wait for replicas (see
	// CheckWrite, WaitReplicated). Default false: async replication.
	Sync bool
	// MinInSync is how many members, the master included, must hold a
	// message before a sync send is acknowledged, and be in sync before
	// one is taken. Default 2 (the master and one replica).
	MinInSync int
	// AckTimeout bounds a sync send's wait for replicas; past it the
	// send gets engine.ErrReplicaTimeout. Default 3s (RocketMQ's
	// slaveTimeout).
	AckTimeout time.Duration
	// MaxLag is how long a replica may stay behind the master's end and
	// count as in sync. Default 15s (RocketMQ's
	// haMaxTimeSlaveNotCatchup).
	MaxLag time.Duration
	// Heartbeat is how often an idle master sends an empty transfer.
	// Default 1s.
	Heartbeat time.Duration
	// Timeout closes a link that said nothing for this long. Default 10s.
	Timeout time.Duration
	// BatchBytes bounds the log bytes of one transfer. Default 256 KiB.
	BatchBytes int
	// MetadataInterval is how often the master sends its topics, groups
	// and consumer offsets when they changed. Default 1s.
	MetadataInterval time.Duration
	// HoldBack bounds how long a transfer of less than BatchBytes waits
	// while the replica has not acknowledged the previous one: the
	// appends of that time go together in one transfer, acknowledged
	// once, instead of one transfer, one acknowledgement and one wake-up
	// of the replica each. An acknowledgement ends the wait. Default
	// 1ms; negative: no wait.
	HoldBack time.Duration
	// Logger gets connection events. Default slog.Default().
	Logger *slog.Logger
}

func (o *MasterOptions) ensureDefaults() {
	if o.MinInSync <= 0 {
		o.MinInSync = 2
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 3 * time.Second
	}
	if o.MaxLag <= 0 {
		o.MaxLag = 15 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MetadataInterval <= 0 {
		o.MetadataInterval = time.Second
	}
	if o.HoldBack == 0 {
		o.HoldBack = time.Millisecond
	}
	if o.BatchBytes <= 0 || o.BatchBytes > MaxFrames {
		o.BatchBytes = 256 << 10
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// ReplicaState is what the master knows of one connected replica.
type ReplicaState struct {
	ID       string // as the replica named itself
	Addr     string // its address
	Acked    int64  // the end of its log, as it last acknowledged
	Lag      int64  // the master's end less Acked, when last acknowledged
	InSync   bool
	Since    time.Time // when it connected
	CaughtUp time.Time // when it last held everything the master had
}

// Master streams a commit log to its replicas and counts their
// acknowledgements. It implements engine.Replicator.
type Master struct {
	opts MasterOptions

	mu       sync.Mutex
	replicas map[*link]struct{}
	// waiters are WaitReplicated's sends, oldest first, each woken (its
	// channel closed, and removed) once enough members hold its end:
	// an ack wakes only the sends it confirms. One timer (expiry), set
	// for the oldest waiter's deadline while armed, ends those that
	// waited AckTimeout, instead of a timer per send.
	waiters []*waiter
	expiry  *time.Timer
	armed   bool

	// leaseEnd, when not zero, is the time (Unix ns) past which writes
	// are refused: see ExtendLease.
	leaseEnd atomic.Int64
}

// ExtendLease lets the master take writes until the given time. A broker
// whose role comes from a controller extends it with each answered
// heartbeat; a master that cannot reach the controller for longer (a
// pause, a partition) refuses writes from the lease's end, at once, even
// before its next heartbeat fails, since the controller may elect
// another master from then on. Without a call, writes have no lease.
func (m *Master) ExtendLease(until time.Time) { m.leaseEnd.Store(until.UnixNano()) }

var _ engine.Replicator = (*Master)(nil)

// NewMaster returns a Master; Serve runs it.
func NewMaster(o MasterOptions) *Master {
	o.ensureDefaults()
	return &Master{opts: o, replicas: map[*link]struct{}{}}
}

// link is one replica's connection.
type link struct {
	id, addr string
	since    time.Time
	acked    int64 // under Master.mu
	lag      int64
	caughtUp time.Time
	// ackedEnd mirrors acked for the link's stream, which waits on
	// ackMoved (a token sent when acked moves) to send what was
	// appended while a transfer was unacknowledged.
	ackedEnd atomic.Int64
	ackMoved chan struct{}
}

// Serve accepts replicas on ln and streams log to each until ctx ends
// or ln fails. It closes ln and every link before it returns.
func (m *Master) Serve(ctx context.Context, ln net.Listener, log Log) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ha: accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.serveLink(ctx, c, log); err != nil && ctx.Err() == nil {
				m.opts.Logger.Warn("ha: replica link ended", "remote", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// refuse tells the replica why it is refused and returns the reason as
// an error.
func refuse(c net.Conn, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if len(reason) > maxText {
		reason = reason[:maxText]
	}
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write((&message{typ: typeRefuse, reason: reason}).encode(nil))
	return fmt.Errorf("ha: replica refused: %s", reason)
}

func (m *Master) serveLink(ctx context.Context, c net.Conn, log Log) error {
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-ctx.Done(); c.Close() }()
	r := bufio.NewReaderSize(c, 4096)
	c.SetReadDeadline(time.Now().Add(m.opts.Timeout))
	hello, _, err := readMessage(r, nil)
	if err != nil {
		return fmt.Errorf("ha: read hello: %w", err)
	}
	switch {
	case hello.typ != typeHello:
		return refuse(c, "expected a hello, got a message of type %d", hello.typ)
	case hello.version != Version:
		return refuse(c, "protocol version %d, this master speaks %d", hello.version, Version)
	case m.opts.BrokerName != "" && hello.brokerName != m.opts.BrokerName:
		return refuse(c, "broker name %q, this master is %q", hello.brokerName, m.opts.BrokerName)
	case m.opts.SegmentSize != 0 && hello.segmentSize != m.opts.SegmentSize:
		return refuse(c, "segment size %d, the master's is %d", hello.segmentSize, m.opts.SegmentSize)
	}
	first, end := log.LogRange()
	welcome := message{typ: typeWelcome, segmentSize: m.opts.SegmentSize, end: end, epochs: log.Epochs()}
	w := bufio.NewWriterSize(c, 64<<10)
	c.SetWriteDeadline(time.Now().Add(m.opts.Timeout))
	if _, err := w.Write(welcome.encode(nil)); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The replica answers with where it will take records from, after
	// cutting what the master does not have.
	c.SetReadDeadline(time.Now().Add(m.opts.Timeout))
	start, _, err := readMessage(r, nil)
	if err != nil {
		return fmt.Errorf("ha: read the replica's start: %w", err)
	}
	if start.typ != typeAck {
		return refuse(c, "expected an acknowledgement, got a message of type %d", start.typ)
	}
	off := start.offset
	first, end = log.LogRange()
	switch {
	case off < first:
		return refuse(c, "the replica asks from offset %d; the master's log starts at %d (retention deleted the rest): give the replica an empty data directory", off, first)
	case off > end:
		return refuse(c, "the replica's log ends at %d, past the master's end %d", off, end)
	}
	// Only from where a record starts (or the log's end): an offset
	// inside a record is a log that does not match the master's.
	if _, _, err := log.ReadFrames(off, nil, 1); err != nil && !errors.Is(err, engine.ErrClosed) {
		return refuse(c, "the replica asks from offset %d, not where a record starts in the master's log (%v): its log does not match the master's", off, err)
	}
	l := &link{id: hello.replicaID, addr: c.RemoteAddr().String(), since: time.Now(), acked: off, ackMoved: make(chan struct{}, 1)}
	l.ackedEnd.Store(off)
	m.add(l, end)
	defer m.remove(l)
	m.opts.Logger.Info("ha: replica connected", "replica", l.id, "remote", l.addr, "from", off, "master_end", end)

	errc := make(chan error, 1)
	go func() { errc <- m.readAcks(r, c, l, log) }()
	err = m.stream(ctx, w, c, l, log, off, errc)
	cancel()
	return err
}

// readAcks reads the replica's acknowledgements until the link fails.
func (m *Master) readAcks(r *bufio.Reader, c net.Conn, l *link, log Log) error {
	var buf []byte
	for {
		c.SetReadDeadline(time.Now().Add(m.opts.Timeout))
		var msg *message
		var err error
		msg, buf, err = readMessage(r, buf)
		if err != nil {
			return fmt.Errorf("ha: read acknowledgement: %w", err)
		}
		if msg.typ != typeAck {
			return fmt.Errorf("%w: message of type %d from a replica", ErrProtocol, msg.typ)
		}
		_, end := log.LogRange()
		if msg.offset > end {
			// An acknowledgement of what the master never wrote: a
			// confused or lying peer must not make sends look safe.
			return fmt.Errorf("%w: acknowledgement of %d, past the master's end %d", ErrProtocol, msg.offset, end)
		}
		// Only a master that waits holds back what its engine indexes
		// (Confirmed); the others' engines need no word of an ack.
		if m.ack(l, msg.offset, end) && m.Waits() {
			log.ReplicasAcked()
		}
	}
}

// stream sends the log from off until the link fails.
func (m *Master) stream(ctx context.Context, w *bufio.Writer, c net.Conn, l *link, log Log, off int64, errc <-chan error) error {
	var buf, out, lastMeta []byte
	var metaAt time.Time
	var hold *time.Timer
	sent := off // the end of the records sent
	if m.opts.HoldBack > 0 {
		hold = time.NewTimer(m.opts.HoldBack)
		hold.Stop()
		defer hold.Stop()
	}
	for {
		select {
		case err := <-errc:
			return err
		default:
		}
		if time.Since(metaAt) >= m.opts.MetadataInterval {
			metaAt = time.Now()
			var err error
			if lastMeta, err = m.sendMetadata(w, c, &out, log, lastMeta); err != nil {
				return err
			}
		}
		_, end := log.LogRange()
		if off >= end {
			wctx, cancel := context.WithTimeout(ctx, m.opts.Heartbeat)
			err := log.WaitAppended(wctx, off)
			cancel()
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			if err != nil { // idle: a heartbeat
				if err := m.send(w, c, &out, m.epochAt(log, off), off, end, nil); err != nil {
					return err
				}
				continue
			}
			_, end = log.LogRange()
		}
		if hold != nil && l.ackedEnd.Load() < sent && end-off < int64(m.opts.BatchBytes) {
			// The replica is still on the last transfer: let more appends
			// join the next until it acknowledges, for at most HoldBack.
			if err := m.holdBack(ctx, hold, l, sent, errc); err != nil {
				return err
			}
			_, end = log.LogRange()
		}
		frames, next, err := log.ReadFrames(off, buf[:0], m.opts.BatchBytes)
		if err != nil {
			return fmt.Errorf("ha: read the log at %d: %w", off, err)
		}
		buf = frames
		if len(frames) == 0 {
			off = next // the end of a segment: go on in the next
			continue
		}
		eps := log.Epochs()
		ep, stop := epochAt(eps, off, end)
		if next > stop { // a transfer never spans epochs
			frames, next = frames[:stop-off], stop
		}
		if err := m.send(w, c, &out, ep, off, max(end, next), frames); err != nil {
			return err
		}
		off, sent = next, next
	}
}

// holdBack waits until l's replica acknowledged the log below sent (all
// that was sent), or HoldBack passed, or the link failed.
func (m *Master) holdBack(ctx context.Context, hold *time.Timer, l *link, sent int64, errc <-chan error) error {
	hold.Reset(m.opts.HoldBack)
	defer hold.Stop()
	for l.ackedEnd.Load() < sent {
		select {
		case <-l.ackMoved:
		case <-hold.C:
			return nil
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// sendMetadata sends the log's metadata unless it is last, the
// metadata sent before, and returns what it sent.
func (m *Master) sendMetadata(w *bufio.Writer, c net.Conn, out *[]byte, log Log, last []byte) ([]byte, error) {
	md, err := log.Metadata()
	if err != nil {
		m.opts.Logger.Warn("ha: metadata not read; replicas get it later", "err", err)
		return last, nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return last, fmt.Errorf("ha: encode metadata: %w", err)
	}
	if bytes.Equal(b, last) {
		return last, nil
	}
	if len(b) > MaxMessage-1 {
		m.opts.Logger.Error("ha: metadata too large to send", "bytes", len(b))
		return last, nil
	}
	*out = (&message{typ: typeMetadata, body: b}).encode((*out)[:0])
	c.SetWriteDeadline(time.Now().Add(m.opts.Timeout))
	if _, err := w.Write(*out); err != nil {
		return last, fmt.Errorf("ha: send metadata: %w", err)
	}
	if err := w.Flush(); err != nil {
		return last, fmt.Errorf("ha: send metadata: %w", err)
	}
	return b, nil
}

func (m *Master) send(w *bufio.Writer, c net.Conn, out *[]byte, ep epoch.Entry, off, end int64, frames []byte) error {
	msg := message{typ: typeTransfer, epoch: ep, offset: off, end: end, frames: frames}
	*out = msg.encode((*out)[:0])
	c.SetWriteDeadline(time.Now().Add(m.opts.Timeout))
	if _, err := w.Write(*out); err != nil {
		return fmt.Errorf("ha: send: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("ha: send: %w", err)
	}
	return nil
}

func (m *Master) epochAt(log Log, off int64) epoch.Entry {
	ep, _ := epochAt(log.Epochs(), off, off)
	return ep
}

// epochAt returns the epoch holding off and where it ends. Records
// before the first epoch (a log written before its broker joined a
// group) go as epoch 0 from offset 0.
func epochAt(eps []epoch.Entry, off, end int64) (epoch.Entry, int64) {
	i := len(eps) - 1
	for i >= 0 && eps[i].Start > off {
		i--
	}
	if i < 0 {
		stop := end
		if len(eps) > 0 {
			stop = eps[0].Start
		}
		return epoch.Entry{}, stop
	}
	return eps[i], epoch.EndOf(eps, i, end)
}

func (m *Master) add(l *link, end int64) {
	m.mu.Lock()
	m.replicas[l] = struct{}{}
	l.lag = end - l.acked
	if l.lag == 0 {
		l.caughtUp = time.Now()
	}
	m.signal()
	m.mu.Unlock()
}

func (m *Master) remove(l *link) {
	m.mu.Lock()
	delete(m.replicas, l)
	m.signal()
	m.mu.Unlock()
	m.opts.Logger.Info("ha: replica disconnected", "replica", l.id, "remote", l.addr, "acked", l.acked)
}

// ack records that l holds the log below off (the master's ending at
// end) and reports whether l's acknowledged offset moved; only then are
// WaitReplicated's waiters woken.
func (m *Master) ack(l *link, off, end int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	moved := off > l.acked
	l.acked = max(l.acked, off)
	if moved {
		l.ackedEnd.Store(l.acked)
		select {
		case l.ackMoved <- struct{}{}:
		default:
		}
	}
	l.lag = end - l.acked
	if l.acked >= end {
		l.caughtUp = time.Now()
	}
	if moved {
		m.signal()
	}
	return moved
}

// waiter is one WaitReplicated call waiting for the log below end.
type waiter struct {
	end      int64
	deadline time.Time
	ch       chan struct{} // closed when the wait is over
	err      error         // why, when not held; set before ch closes
}

// expire ends the waits whose deadline passed with
// engine.ErrReplicaTimeout and sets the timer for the next one.
func (m *Master) expire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	n := 0
	for _, w := range m.waiters {
		if w.deadline.After(now) {
			break
		}
		w.err = m.timeoutLocked(w.end, fmt.Errorf("after %s", m.opts.AckTimeout))
		close(w.ch)
		n++
	}
	m.waiters = slices.Delete(m.waiters, 0, n)
	m.armed = len(m.waiters) > 0
	if m.armed {
		m.expiry.Reset(m.waiters[0].deadline.Sub(now))
	}
}

// timeoutLocked returns the error of a wait for end that ended for why.
// Called with mu held.
func (m *Master) timeoutLocked(end int64, why error) error {
	n := 1
	for l := range m.replicas {
		if l.acked >= end {
			n++
		}
	}
	return fmt.Errorf("%w: %d of the %d members required hold it: %w", engine.ErrReplicaTimeout, n, m.opts.MinInSync, why)
}

// signal wakes the WaitReplicated calls whose end enough members now
// hold. Called with mu held.
func (m *Master) signal() {
	if len(m.waiters) == 0 {
		return
	}
	held := m.heldLocked()
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if w.end <= held {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
}

// heldLocked returns the offset below which MinInSync members, the
// master included, hold the log (not capped at its end), or -1 when too
// few replicas are connected. Called with mu held.
func (m *Master) heldLocked() int64 {
	need := m.opts.MinInSync - 1
	if need <= 0 {
		return math.MaxInt64
	}
	var buf [8]int64
	acks := buf[:0]
	for l := range m.replicas {
		acks = append(acks, l.acked)
	}
	if len(acks) < need {
		return -1
	}
	slices.Sort(acks)
	return acks[len(acks)-need]
}

// dropWaiter removes w, if still there. Called with mu held.
func (m *Master) dropWaiter(w *waiter) {
	if i := slices.Index(m.waiters, w); i >= 0 {
		m.waiters = slices.Delete(m.waiters, i, i+1)
	}
}

// inSync reports whether l counts as in sync now. Called with mu held.
func (m *Master) inSync(l *link, now time.Time) bool {
	return l.lag == 0 || now.Sub(l.caughtUp) < m.opts.MaxLag
}

// Replicas returns the connected replicas, by id.
func (m *Master) Replicas() []ReplicaState {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	out := make([]ReplicaState, 0, len(m.replicas))
	for l := range m.replicas {
		out = append(out, ReplicaState{ID: l.id, Addr: l.addr, Acked: l.acked, Lag: l.lag, InSync: m.inSync(l, now), Since: l.since, CaughtUp: l.caughtUp})
	}
	slices.SortFunc(out, func(a, b ReplicaState) int {
		if a.ID != b.ID {
			if a.ID < b.ID {
				return -1
			}
			return 1
		}
		return a.Since.Compare(b.Since)
	})
	return out
}

// CheckWrite refuses a write with engine.ErrNotMaster once the lease
// (ExtendLease) ran out, and with engine.ErrInSyncReplicasNotEnough while
// fewer than MinInSync members (the master included) are in sync. It
// allows every other write with async replication.
func (m *Master) CheckWrite() error {
	if until := m.leaseEnd.Load(); until != 0 && time.Now().UnixNano() > until {
		return fmt.Errorf("%w: the lease from the controller ran out (another master may be elected); send to the group's current master", engine.ErrNotMaster)
	}
	if !m.opts.Sync {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	n := 1
	for l := range m.replicas {
		if m.inSync(l, now) {
			n++
		}
	}
	if n < m.opts.MinInSync {
		return fmt.Errorf("%w: %d in sync of the %d required (the master included)", engine.ErrInSyncReplicasNotEnough, n, m.opts.MinInSync)
	}
	return nil
}

// Confirmed returns the offset below which MinInSync members, the master
// included, hold the log, at most end: the MinInSync-1'th highest
// acknowledgement of the replicas. With async replication it is end: a
// master does not hold back what consumers read for replicas it does
// not wait for.
func (m *Master) Confirmed(end int64) int64 {
	if !m.opts.Sync || m.opts.MinInSync <= 1 {
		return end
	}
	m.mu.Lock()
	held := m.heldLocked()
	m.mu.Unlock()
	return max(0, min(end, held))
}

// Waits reports whether WaitReplicated may wait: with sync replication
// and more than one member required (engine.Waiter).
func (m *Master) Waits() bool { return m.opts.Sync && m.opts.MinInSync > 1 }

// WaitReplicated returns once MinInSync members, the master included,
// hold the log below end, or engine.ErrReplicaTimeout after AckTimeout.
// With async replication it returns at once.
func (m *Master) WaitReplicated(ctx context.Context, end int64) error {
	if !m.opts.Sync || m.opts.MinInSync <= 1 {
		return nil
	}
	m.mu.Lock()
	if m.heldLocked() >= end {
		m.mu.Unlock()
		return nil
	}
	w := &waiter{end: end, deadline: time.Now().Add(m.opts.AckTimeout), ch: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	if !m.armed {
		// Deadlines grow with the list: a timer armed for an older
		// waiter fires first, and expire sets it for the next.
		m.armed = true
		if m.expiry == nil {
			m.expiry = time.AfterFunc(m.opts.AckTimeout, m.expire)
		} else {
			m.expiry.Reset(m.opts.AckTimeout)
		}
	}
	m.mu.Unlock()
	select {
	case <-w.ch:
		return w.err
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-w.ch: // over as it gave up
		return w.err
	default:
	}
	m.dropWaiter(w)
	return m.timeoutLocked(end, ctx.Err())
}
