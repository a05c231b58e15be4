package engine

import (
	"slices"
	"strings"
)

// Stats is a snapshot of the engine's counters.
type Stats struct {
	Topics           []TopicStats
	DiskBytes        int64 // size of the commit-log segments
	LogMinOffset     int64
	LogEndOffset     int64
	LogFlushedOffset int64 // the log is on disk up to here
	DispatchedOffset int64 // the index covers the log up to here
	CorruptRecords   int64 // records skipped because they failed their checks
	// RetentionUnconsumedDeleted counts the messages retention deleted
	// before a consumer group had consumed them (by its committed offset),
	// once per group that had not, since the engine opened.
	RetentionUnconsumedDeleted int64
	// TransactionsCommitted and TransactionsRolledBack count the
	// transactional messages ended by a commit or a rollback (by the
	// producer or its answer to a check) since the engine opened.
	TransactionsCommitted, TransactionsRolledBack int64
	// FileSystemUsed and FileSystemTotal are the bytes used and in all of
	// the file system holding the commit log (both 0 when unknown).
	FileSystemUsed, FileSystemTotal uint64
	// Health is the state of the disk (see Engine.Health).
	Health Health
}

// TopicStats are one topic's counters since the engine opened.
type TopicStats struct {
	Topic                 string
	MessagesIn, BytesIn   int64 // body bytes
	MessagesOut, BytesOut int64 // stored record bytes, counted per pull
	Depth                 int64 // messages held over all queues
	// Groups are the topic's deliveries per consumer group, sorted by
	// group: pulls count under the group their context's hook.Client
	// names ("" when none), pops under theirs.
	Groups []GroupStats
}

// GroupStats are what one topic delivered to one consumer group since the
// engine opened, and what the group holds popped and unacknowledged.
type GroupStats struct {
	Group                 string
	MessagesOut, BytesOut int64
	// Inflight is how many messages the group has popped and not yet
	// acknowledged (nor let become visible again), over the topic's queues.
	Inflight int64
}

// DispatchLag is how many bytes of the commit log the index does not cover
// yet: what a front-end samples to tell whether the engine keeps up,
// without the per-topic work of Stats.
func (e *Engine) DispatchLag() int64 {
	return e.log.EndOffset() - e.disp.pos.Load()
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	s := Stats{
		DiskBytes:        e.log.DiskUsage(),
		LogMinOffset:     e.log.MinOffset(),
		LogEndOffset:     e.log.EndOffset(),
		LogFlushedOffset: e.log.FlushedOffset(),
		DispatchedOffset: e.disp.pos.Load(),
		CorruptRecords:   e.corrupt.Load(),

		RetentionUnconsumedDeleted: e.unconsumedDeleted.Load(),
		TransactionsCommitted:      e.txnCommits.Load(),
		TransactionsRolledBack:     e.txnRollbacks.Load(),
	}
	s.Health = e.Health()
	if used, total, err := e.log.FileSystemUsage(); err == nil {
		s.FileSystemUsed, s.FileSystemTotal = used, total
	}
	inflight := map[string]map[string]int64{} // topic → group → messages
	e.pops.Range(func(k, v any) bool {
		pq := v.(*popQueue)
		pq.mu.Lock()
		n := int64(len(pq.st.Inflight))
		pq.mu.Unlock()
		if n > 0 {
			key := k.(popKey)
			if inflight[key.topic] == nil {
				inflight[key.topic] = map[string]int64{}
			}
			inflight[key.topic][key.group] += n
		}
		return true
	})
	for _, cfg := range e.meta.Topics() {
		v, ok := e.topics.Load(cfg.Name)
		if !ok {
			s.Topics = append(s.Topics, TopicStats{Topic: cfg.Name})
			continue
		}
		t := v.(*topicState)
		ts := TopicStats{
			Topic:       cfg.Name,
			MessagesIn:  t.msgsIn.Load(),
			BytesIn:     t.bytesIn.Load(),
			MessagesOut: t.msgsOut.Load(),
			BytesOut:    t.bytesOut.Load(),
		}
		for _, q := range *t.queues.Load() {
			ts.Depth += q.end.Load() - q.min.Load()
		}
		t.out.Range(func(k, v any) bool {
			g := v.(*groupOut)
			ts.Groups = append(ts.Groups, GroupStats{Group: k.(string), MessagesOut: g.msgs.Load(), BytesOut: g.bytes.Load()})
			return true
		})
		for group, n := range inflight[cfg.Name] {
			i := slices.IndexFunc(ts.Groups, func(g GroupStats) bool { return g.Group == group })
			if i < 0 {
				ts.Groups = append(ts.Groups, GroupStats{Group: group})
				i = len(ts.Groups) - 1
			}
			ts.Groups[i].Inflight = n
		}
		slices.SortFunc(ts.Groups, func(a, b GroupStats) int { return strings.Compare(a.Group, b.Group) })
		s.Topics = append(s.Topics, ts)
	}
	return s
}
