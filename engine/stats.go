package engine

// Stats is a snapshot of the engine's counters.
type Stats struct {
	Topics           []TopicStats
	DiskBytes        int64 // size of the commit-log segments
	LogMinOffset     int64
	LogEndOffset     int64
	DispatchedOffset int64 // the index covers the log up to here
	CorruptRecords   int64 // records skipped because they failed their checks
	// RetentionUnconsumedDeleted counts the messages retention deleted
	// before a consumer group had consumed them (by its committed offset),
	// once per group that had not, since the engine opened.
	RetentionUnconsumedDeleted int64
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
		DispatchedOffset: e.disp.pos.Load(),
		CorruptRecords:   e.corrupt.Load(),

		RetentionUnconsumedDeleted: e.unconsumedDeleted.Load(),
	}
	s.Health = e.Health()
	if used, total, err := e.log.FileSystemUsage(); err == nil {
		s.FileSystemUsed, s.FileSystemTotal = used, total
	}
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
		s.Topics = append(s.Topics, ts)
	}
	return s
}
