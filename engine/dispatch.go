package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/commitlog"
	"github.com/karmanmq/karman/engine/index"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/queue"
	"github.com/karmanmq/karman/engine/timer"
	"github.com/karmanmq/karman/engine/txn"
	"github.com/karmanmq/karman/filter"
)

// checkpointKey holds, in the index database, the commit-log offset up to
// which every record has been dispatched. It is written in the same batch
// as the entries it covers, so the index is always a consistent prefix of
// the log.
var checkpointKey = []byte{'c'}

// dispatchBatch bounds how many records go into one index batch.
const dispatchBatch = 4096

// dispatcher follows the commit log and builds the consume queues, light
// queues and key index from it, like RocketMQ's reput service. One
// goroutine runs it; waitFor may be called from any goroutine.
type dispatcher struct {
	e    *Engine
	wake chan struct{}

	pos atomic.Int64 // every record below is indexed

	// runMu is held while the dispatcher indexes, so that Truncate can
	// change the log and the index under it.
	runMu sync.Mutex

	mu     sync.Mutex
	moved  chan struct{} // closed when pos advances; nil while nobody waits
	failed error         // set when dispatching stopped on an error

	// Used only by the dispatching goroutine.
	batch   *pebble.Batch
	qw      queue.Writer
	iw      index.Writer
	tw      timer.Writer
	xw      txn.Writer
	minDue  int64                 // earliest due time scheduled in the current batch
	touched map[*queueState]int64 // queue → new end, published after commit
	topics  map[string]*topicState
	gen     int64

	// sorted holds the batch's consume-queue and id entries until it
	// commits, to set them in key order: the index inserts runs of
	// neighbouring keys much faster than keys in log order.
	sorted sortedSets

	// Half messages of the current batch, whose entries wait for the
	// batch's end: a decision later in the same batch makes them
	// unnecessary (see deferHalf).
	halves  []batchHalf
	halfIDs map[string]int // id → index in halves
	idBuf   []byte         // the ids of halves, back to back

	rec     RouteRecord // the record shown to the router
	routes  []string    // the router's answer, reused
	nameBuf []byte      // a routed queue's name
}

// batchHalf is a half message indexed in the current batch.
type batchHalf struct {
	entry    queue.Entry // in the half topic's queue
	queue    int32
	id       [2]int // its id: idBuf[id[0]:id[1]]
	resolved bool   // a record of the batch resolves it: it is not pending
	idLater  bool   // a later record of the batch carries the same id
}

func newDispatcher(e *Engine) *dispatcher {
	return &dispatcher{
		e:       e,
		wake:    make(chan struct{}, 1),
		touched: map[*queueState]int64{},
		minDue:  math.MaxInt64,
		topics:  map[string]*topicState{},
		halfIDs: map[string]int{},
	}
}

// notify tells the dispatcher the log has grown.
func (d *dispatcher) notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// recover brings the index up to date with the log before the engine
// serves anything.
func (d *dispatcher) recover() error {
	log := d.e.log
	from := log.MinOffset()
	v, closer, err := d.e.idx.Get(checkpointKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("engine: read index checkpoint: %w", err)
	default:
		cp := int64(binary.BigEndian.Uint64(v))
		closer.Close()
		switch {
		case cp > log.EndOffset():
			// The index knows records the log lost (the machine crashed
			// before the log was flushed): rebuild it from scratch.
			d.e.opts.Logger.Warn("index is ahead of the commit log; rebuilding it", "index", cp, "log_end", log.EndOffset())
			if err := d.wipe(); err != nil {
				return err
			}
		case cp > from:
			from = cp
		}
	}
	if err := d.migrateLegacyIDs(from); err != nil {
		return err
	}
	d.pos.Store(from)
	if err := d.dispatch(); err != nil {
		return err
	}
	d.e.opts.Logger.Info("engine recovered", "log_min", log.MinOffset(), "log_end", log.EndOffset(), "replayed_from", from)
	return nil
}

// errScanned stops a scan of the log at the offset it was asked to end.
var errScanned = errors.New("engine: scanned to the end asked for")

// migrateLegacyIDs rewrites an id index of the earlier layout, keyed by
// the id alone, in the current one, keyed by id and topic: it indexes the
// id of every record the index covers (from the log's start up to until)
// under its topic, then deletes the old entries. The rest of the index
// stays as it is. A crash part way leaves the old entries, and the next
// recovery starts again.
func (d *dispatcher) migrateLegacyIDs(until int64) error {
	legacy, err := d.e.keys.HasLegacyIDs()
	if err != nil || !legacy {
		return err
	}
	log := d.e.log
	d.e.opts.Logger.Warn("rewriting the index of message ids in its new layout", "log_min", log.MinOffset(), "indexed_to", until)
	b := d.e.idx.NewBatch()
	defer b.Close()
	var (
		w index.Writer
		p recordProps
	)
	_, err = log.Scan(log.MinOffset(), func(off, _ int64, payload []byte) error {
		if off >= until {
			return errScanned
		}
		h, err := message.PeekStored(payload)
		if err != nil {
			return nil // the dispatcher skipped it too
		}
		p.read(h.Properties)
		if err := w.AddID(b, p.uniq, h.Topic, off); err != nil {
			return err
		}
		if b.Len() < 4<<20 {
			return nil
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		b.Reset()
		return nil
	})
	if err != nil && !errors.Is(err, errScanned) {
		return fmt.Errorf("engine: rewrite the id index: %w", err)
	}
	if err := b.DeleteRange([]byte{index.PrefixLegacyID}, []byte{index.PrefixLegacyID + 1}, nil); err != nil {
		return err
	}
	// Like every index write, without a WAL: a crash before pebble
	// flushes loses the rewrite with the deletion of the old entries (it
	// flushes in order), and the next recovery rewrites again.
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("engine: rewrite the id index: %w", err)
	}
	return nil
}

// wipe deletes every derived index entry.
func (d *dispatcher) wipe() error {
	for _, p := range []byte{queue.Prefix, index.PrefixKey, index.PrefixID, index.PrefixLegacyID, timer.Prefix, txn.Prefix, checkpointKey[0]} {
		if err := d.e.idx.DeleteRange([]byte{p}, []byte{p + 1}, pebble.NoSync); err != nil {
			return fmt.Errorf("engine: wipe index: %w", err)
		}
	}
	return nil
}

// quietGap is how long the log must have had no dispatch (at least, and
// no shorter than DispatchDelay) for an append to be indexed at once,
// without waiting for others: at low rates there are no others to wait
// for, and consumers would only see the message later.
const quietGap = time.Millisecond

// replicaDispatchDelay is the least a replica's dispatcher waits for
// more records (see Options.DispatchDelay): a replica's records come
// in transfers, not appends, and its index is read by few (pulls from
// the replica, a promotion, which waits for it), so it gathers several
// transfers in one index batch, each a wake-up and a commit fewer.
var replicaDispatchDelay = 2 * time.Millisecond

func (d *dispatcher) run() {
	defer d.e.wg.Done()
	var gather *time.Timer
	if delay := d.e.opts.DispatchDelay; delay > 0 {
		gather = time.NewTimer(delay)
		gather.Stop()
	}
	var lastDone time.Time // when the last dispatch ended
	quiet := max(quietGap, d.e.opts.DispatchDelay)
	for {
		select {
		case <-d.e.closing:
			if err := d.dispatchLocked(); err != nil {
				d.e.opts.Logger.Error("final dispatch failed", "err", err)
			}
			return
		case <-d.wake:
		}
		delay, quiet := d.e.opts.DispatchDelay, quiet
		if gather != nil && !d.e.repl.master.Load() {
			delay = max(delay, replicaDispatchDelay)
			quiet = max(quiet, delay)
		}
		if gather != nil && time.Since(lastDone) < quiet {
			// Let the appends of the next moments join this batch: the
			// index then sets their entries together, at a fraction of
			// the cost of one batch per record.
			gather.Reset(delay)
			select {
			case <-gather.C:
			case <-d.e.closing:
			}
			select {
			case <-d.wake: // covered by this dispatch
			default:
			}
		}
		if err := d.dispatchLocked(); err != nil {
			d.e.opts.Logger.Error("dispatch failed; pulls will not see new messages", "err", err)
			d.fail(err)
			return
		}
		lastDone = time.Now()
	}
}

// dispatchLocked is dispatch under runMu.
func (d *dispatcher) dispatchLocked() error {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	return d.dispatch()
}

// failure returns the error dispatching stopped on, if it did.
func (d *dispatcher) failure() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed
}

// dispatch indexes everything between pos and the end of the log.
func (d *dispatcher) dispatch() error {
	for {
		end := d.e.readableEnd(d.e.log.EndOffset())
		from := d.pos.Load()
		if from >= end {
			return nil
		}
		if g := d.e.topicsGen.Load(); g != d.gen {
			clear(d.topics)
			d.gen = g
		}
		d.batch = d.e.idx.NewBatch()
		d.sorted.reset()
		d.clearHalves()
		n := 0
		next, err := d.e.log.Scan(from, func(off, next int64, payload []byte) error {
			if n == dispatchBatch || next > end {
				return errBatchFull
			}
			n++
			return d.index(off, payload)
		})
		if errors.Is(err, commitlog.ErrOffsetGone) && n == 0 {
			// Retention deleted records before they were indexed: they are
			// gone, continue with what is left.
			d.batch.Close()
			d.pos.Store(max(from, d.e.log.MinOffset()))
			continue
		}
		if err != nil && !errors.Is(err, errBatchFull) {
			d.batch.Close()
			return fmt.Errorf("engine: dispatch from %d: %w", from, err)
		}
		if n == 0 && next == from {
			// Nothing below end to index (end is within a record only if
			// a Replicator confirms part of one; wait for the rest).
			d.batch.Close()
			d.batch = nil
			return nil
		}
		if err := d.commit(next); err != nil {
			return err
		}
	}
}

var errBatchFull = errors.New("engine: dispatch batch full")

func (d *dispatcher) commit(next int64) error {
	if err := d.flushHalves(); err != nil {
		d.batch.Close()
		d.batch = nil
		return err
	}
	if err := d.sorted.apply(d.batch); err != nil {
		d.batch.Close()
		d.batch = nil
		return err
	}
	var cp [8]byte
	binary.BigEndian.PutUint64(cp[:], uint64(next))
	if err := d.batch.Set(checkpointKey, cp[:], nil); err != nil {
		return err
	}
	err := d.batch.Commit(pebble.NoSync)
	d.batch.Close()
	d.batch = nil
	if err != nil {
		return fmt.Errorf("engine: commit index batch: %w", err)
	}
	for q, end := range d.touched {
		q.advance(end)
	}
	clear(d.touched)
	if d.minDue != math.MaxInt64 {
		if d.e.sched != nil {
			d.e.sched.Scheduled(d.minDue)
		}
		d.minDue = math.MaxInt64
	}
	d.pos.Store(next)
	d.mu.Lock()
	if d.moved != nil {
		close(d.moved)
		d.moved = nil
	}
	d.mu.Unlock()
	return nil
}

// recordProps are the properties the dispatcher indexes, read from a
// record in one pass. A has field says the property is present.
type recordProps struct {
	uniq, keys, tags, lmq, timerSrc, timerOut, tranSrc []byte
	hasTimerSrc, hasTimerOut, hasTranSrc               bool
}

func (p *recordProps) read(props []byte) {
	*p = recordProps{}
	for len(props) > 0 {
		var k, v []byte
		var ok bool
		if k, v, props, ok = message.NextProperty(props); !ok {
			continue
		}
		switch string(k) {
		case message.PropertyUniqKey:
			p.uniq = v
		case message.PropertyKeys:
			p.keys = v
		case message.PropertyTags:
			p.tags = v
		case message.PropertyInnerMultiDispatch:
			p.lmq = v
		case propertyTimerSource:
			p.timerSrc, p.hasTimerSrc = v, true
		case message.PropertyTimerOutMS:
			p.timerOut, p.hasTimerOut = v, true
		case propertyTransactionSource:
			p.tranSrc, p.hasTranSrc = v, true
		}
	}
}

// index adds the entries of one record.
func (d *dispatcher) index(off int64, payload []byte) error {
	h, err := message.PeekStored(payload)
	if err != nil {
		// The log checked the record's checksum, so this is a record the
		// engine did not write: skip it rather than stop indexing.
		d.e.opts.Logger.Error("skipping undecodable record", "offset", off, "err", err)
		d.e.corrupt.Add(1)
		return nil
	}
	var p recordProps
	p.read(h.Properties)
	entry := queue.Entry{
		Offset:          h.QueueOffset,
		CommitLogOffset: off,
		Size:            int32(len(payload)),
		StoreTimestamp:  h.StoreTimestamp,
		TagHash:         filter.TagHash(p.tags),
	}
	half := !p.hasTranSrc && bytes.Equal(h.Topic, halfTopic)
	if half {
		d.deferHalf(h.QueueID, entry, p.uniq)
	} else if err := d.addEntry(h.Topic, h.QueueID, entry); err != nil {
		return err
	}
	if err := d.indexKeys(off, &h, &p, half); err != nil {
		return err
	}
	if err := d.indexTimer(off, &h, &p); err != nil {
		return err
	}
	if err := d.resolveHalf(&p); err != nil {
		return err
	}
	if parked(h.Topic) {
		return nil
	}
	if len(p.lmq) > 0 {
		if err := d.indexLightQueues(p.lmq, entry); err != nil {
			return err
		}
	}
	if d.e.opts.Router != nil && !half {
		return d.route(h.Topic, &p, h.Properties, entry)
	}
	return nil
}

// parked reports whether topic is where the engine keeps messages that
// are not visible yet (half messages, timers) or any more (half messages
// out of checks). A parked message reaches its light queues when it is
// stored again in its own topic, committed or due.
func parked(topic []byte) bool {
	switch string(topic) {
	case message.TopicTransHalf, message.TopicTimer, message.TopicSchedule, message.TopicTransCheckMaxTime:
		return true
	}
	return false
}

var timerTopic = []byte(message.TopicTimer)

// indexTimer schedules a record stored under the timer topic, and retires
// the timer entry a delivered or cancelled record names.
func (d *dispatcher) indexTimer(off int64, h *message.Header, p *recordProps) error {
	if p.hasTimerSrc {
		en, ok := parseTimerSource(p.timerSrc)
		if !ok {
			return nil
		}
		return d.tw.Delete(d.batch, en)
	}
	if !p.hasTimerOut || !bytes.Equal(h.Topic, timerTopic) {
		return nil
	}
	due, valid := parseInt(p.timerOut)
	if !valid {
		return nil
	}
	d.minDue = min(d.minDue, due)
	return d.tw.Add(d.batch, timer.Entry{Due: due, Offset: off})
}

// addEntry adds a consume-queue entry and notes the queue's new end.
func (d *dispatcher) addEntry(topic []byte, queueID int32, entry queue.Entry) error {
	if err := d.qw.Add(&d.sorted, topic, queueID, entry); err != nil {
		return err
	}
	if q := d.queueOf(topic, queueID); q != nil {
		d.touched[q] = entry.Offset + 1
		q.tail.add(entry)
	}
	return nil
}

var halfTopic = []byte(message.TopicTransHalf)

// resolveHalf retires the half message a resolving record names.
func (d *dispatcher) resolveHalf(p *recordProps) error {
	if !p.hasTranSrc {
		return nil
	}
	src, ok := parseInt(p.tranSrc)
	if !ok {
		return nil
	}
	if i, ok := d.batchHalf(src); ok {
		d.halves[i].resolved = true // never indexed as pending
		return nil
	}
	return d.xw.Resolve(d.batch, src)
}

// A half message is usually decided within moments of being stored, so
// mostly within the same index batch. Its entries are therefore held back
// until the batch commits: a decision in the same batch means that none
// is needed. The pending entry and the entry in the half topic's consume
// queue exist for half messages still waiting for a decision (the checks
// and admin tools read them), and a later record with the same id (the
// decision carries it) makes the half message's id entry moot, as that
// record's entry would replace it anyway. What is left is written at the
// end of the batch, in log order. So the half topic's queue holds the half
// messages that were pending at the end of a batch, with gaps where others
// were decided at once; after a restart its next offset follows the last
// one it holds.

// deferHalf holds back the entries of a half message of queue queueID of
// the half topic, with id.
func (d *dispatcher) deferHalf(queueID int32, entry queue.Entry, id []byte) {
	b := batchHalf{entry: entry, queue: queueID, id: [2]int{len(d.idBuf), len(d.idBuf) + len(id)}}
	d.idBuf = append(d.idBuf, id...)
	if len(id) > 0 {
		if i, ok := d.halfIDs[string(id)]; ok {
			d.halves[i].idLater = true
		}
		d.halfIDs[string(id)] = len(d.halves)
	}
	d.halves = append(d.halves, b)
}

// batchHalf finds the half message at off among those of the batch.
func (d *dispatcher) batchHalf(off int64) (int, bool) {
	hs := d.halves
	if len(hs) == 0 || off < hs[0].entry.CommitLogOffset || off > hs[len(hs)-1].entry.CommitLogOffset {
		return 0, false
	}
	i, ok := slices.BinarySearchFunc(hs, off, func(b batchHalf, off int64) int { return cmp.Compare(b.entry.CommitLogOffset, off) })
	return i, ok && !hs[i].resolved
}

// flushHalves writes the held-back entries of the batch's half messages.
func (d *dispatcher) flushHalves() error {
	for _, b := range d.halves {
		off := b.entry.CommitLogOffset
		if !b.resolved {
			if err := d.addEntry(halfTopic, b.queue, b.entry); err != nil {
				return err
			}
			if err := d.xw.Add(d.batch, off); err != nil {
				return err
			}
		}
		if !b.idLater {
			if err := d.iw.AddID(&d.sorted, d.idBuf[b.id[0]:b.id[1]], halfTopic, off); err != nil {
				return err
			}
		}
	}
	d.clearHalves()
	return nil
}

func (d *dispatcher) clearHalves() {
	d.halves = d.halves[:0]
	d.idBuf = d.idBuf[:0]
	clear(d.halfIDs)
}

// parseTimerSource reads "due,offset".
func parseTimerSource(b []byte) (timer.Entry, bool) {
	a, c, ok := bytes.Cut(b, []byte{','})
	due, ok1 := parseInt(a)
	off, ok2 := parseInt(c)
	return timer.Entry{Due: due, Offset: off}, ok && ok1 && ok2
}

// parseInt reads a non-negative decimal without allocating.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// indexKeys indexes the record's id and keys; the id of a half message is
// held back (see deferHalf).
func (d *dispatcher) indexKeys(off int64, h *message.Header, p *recordProps, half bool) error {
	if len(p.uniq) > 0 && !half {
		if len(d.halves) > 0 {
			if i, ok := d.halfIDs[string(p.uniq)]; ok {
				d.halves[i].idLater = true
			}
		}
		if err := d.iw.AddID(&d.sorted, p.uniq, h.Topic, off); err != nil {
			return err
		}
	}
	keys := p.keys
	for len(keys) > 0 {
		var key []byte
		key, keys, _ = bytes.Cut(keys, []byte{' '})
		if err := d.iw.AddKey(d.batch, h.Topic, key, h.StoreTimestamp, off); err != nil {
			return err
		}
	}
	return nil
}

// indexLightQueues appends the record to each light queue it names; light
// queue offsets are assigned here, in log order.
func (d *dispatcher) indexLightQueues(names []byte, entry queue.Entry) error {
	for len(names) > 0 {
		var name []byte
		name, names, _ = bytes.Cut(names, []byte{','})
		if len(name) == 0 {
			continue
		}
		if err := d.indexLightQueue(string(name), name, entry); err != nil {
			return err
		}
	}
	return nil
}

// indexLightQueue appends the record to light queue name (nameBytes is
// the same name).
func (d *dispatcher) indexLightQueue(name string, nameBytes []byte, entry queue.Entry) error {
	q, err := d.e.lightQueue(name)
	if err != nil {
		return err
	}
	entry.Offset = q.next
	q.next++
	if err := d.qw.Add(&d.sorted, nameBytes, 0, entry); err != nil {
		return err
	}
	d.touched[q] = q.next
	q.tail.add(entry)
	return nil
}

// queueOf returns the loaded state of (topic, id), or nil when the topic is
// not loaded (its state will read the index when it is).
func (d *dispatcher) queueOf(topic []byte, id int32) *queueState {
	t, ok := d.topics[string(topic)]
	if !ok {
		v, found := d.e.topics.Load(string(topic))
		if !found {
			return nil
		}
		t = v.(*topicState)
		d.topics[string(topic)] = t
	}
	qs := *t.queues.Load()
	if id < 0 || int(id) >= len(qs) {
		return nil
	}
	return qs[id]
}

func (d *dispatcher) fail(err error) {
	d.mu.Lock()
	d.failed = err
	if d.moved != nil {
		close(d.moved)
		d.moved = nil
	}
	d.mu.Unlock()
}

// waitFor returns once every record below off is indexed.
func (d *dispatcher) waitFor(ctx context.Context, off int64) error {
	return d.waitUntil(ctx, off, nil)
}

// wakeAll wakes every waiter without moving pos: the log was cut, and
// waiters with a stop condition look at it.
func (d *dispatcher) wakeAll() {
	d.mu.Lock()
	if d.moved != nil {
		close(d.moved)
		d.moved = nil
	}
	d.mu.Unlock()
}

// waitUntil is waitFor that also returns, with nil, once stop (when not
// nil) reports true; stop is checked at each wake-up.
func (d *dispatcher) waitUntil(ctx context.Context, off int64, stop func() bool) error {
	for {
		if d.pos.Load() >= off || (stop != nil && stop()) {
			return nil
		}
		d.mu.Lock()
		if d.failed != nil {
			d.mu.Unlock()
			return d.failed
		}
		// Checked under mu: wakeAll, which follows what makes stop
		// true, takes it.
		if d.pos.Load() >= off || (stop != nil && stop()) {
			d.mu.Unlock()
			return nil
		}
		if d.moved == nil {
			d.moved = make(chan struct{})
		}
		ch := d.moved
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.e.closing:
			if d.pos.Load() >= off {
				return nil
			}
			return ErrClosed
		}
	}
}

// sortedSets buffers key/value pairs and sets them in a batch in key
// order. Pairs with the same key keep their order, so the last one set
// wins, as in the batch itself.
type sortedSets struct {
	buf   []byte
	pairs []kvSpan
}

// kvSpan locates a pair in sortedSets.buf: the key is buf[at:at+klen],
// the value follows it up to end.
type kvSpan struct{ at, klen, end int32 }

func (s *sortedSets) key(p kvSpan) []byte { return s.buf[p.at : p.at+p.klen] }

// Set implements queue.Setter.
func (s *sortedSets) Set(key, value []byte, _ *pebble.WriteOptions) error {
	at := len(s.buf)
	s.buf = append(s.buf, key...)
	s.buf = append(s.buf, value...)
	s.pairs = append(s.pairs, kvSpan{at: int32(at), klen: int32(len(key)), end: int32(len(s.buf))})
	return nil
}

// apply sets the buffered pairs in b, in key order, and empties s.
func (s *sortedSets) apply(b *pebble.Batch) error {
	// Equal keys stay in the order they were set (at grows with it), as
	// a stable sort would keep them, at the cost of an unstable one.
	slices.SortFunc(s.pairs, func(x, y kvSpan) int {
		if c := bytes.Compare(s.key(x), s.key(y)); c != 0 {
			return c
		}
		return cmp.Compare(x.at, y.at)
	})
	for _, p := range s.pairs {
		if err := b.Set(s.key(p), s.buf[p.at+p.klen:p.end], nil); err != nil {
			return err
		}
	}
	s.reset()
	return nil
}

func (s *sortedSets) reset() {
	s.buf = s.buf[:0]
	s.pairs = s.pairs[:0]
}
