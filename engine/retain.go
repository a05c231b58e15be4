package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine/meta"
)

// ApplyRetention deletes the commit-log segments that retention allows to
// delete at time now and returns how many it removed. It runs by itself
// every RetentionInterval; messages in deleted segments are gone whether or
// not they were consumed. Those that a consumer group had not consumed yet
// (its committed offset lay below the queue's new first offset) are
// counted in Stats.RetentionUnconsumedDeleted, once per group, and a run
// that deletes any logs one warning with the totals and the groups that
// lost most.
func (e *Engine) ApplyRetention(now time.Time) (int, error) {
	e.retainMu.Lock()
	defer e.retainMu.Unlock()
	age, ratio := e.opts.RetentionAge, e.opts.RetentionDiskRatio
	n, _, err := e.log.Retainable(now, age, ratio)
	if err != nil || n == 0 {
		return 0, err
	}
	before := e.consumerPositions()
	n, err = e.log.Retain(now, age, ratio)
	if n > 0 {
		e.opts.Logger.Info("retention removed commit-log segments", "segments", n, "min_offset", e.log.MinOffset())
		e.noteUnconsumed(before)
	}
	return n, err
}

// consumerPosition is where a group stood in a queue before a retention
// run: its committed offset, and the queue's first stored offset.
type consumerPosition struct {
	meta.CommittedOffset
	q   *queueState
	min int64
}

// consumerPositions returns the position of every group that has
// something left to consume in a queue, by its committed offset.
func (e *Engine) consumerPositions() []consumerPosition {
	var out []consumerPosition
	err := e.meta.AllOffsets(func(c meta.CommittedOffset) bool {
		q, err := e.readQueue(c.Topic, c.Queue)
		if err != nil {
			return true // the topic or queue is gone
		}
		if c.Offset >= q.end.Load() {
			return true // consumed everything so far
		}
		first, err := e.queueMin(q)
		if err != nil {
			return true
		}
		out = append(out, consumerPosition{CommittedOffset: c, q: q, min: first})
		return true
	})
	if err != nil {
		e.opts.Logger.Warn("retention cannot tell what consumers lose", "err", err)
	}
	return out
}

// unconsumedLoss is what one group lost in one topic to a retention run.
type unconsumedLoss struct {
	group, topic string
	messages     int64
}

// noteUnconsumed counts, after a retention run, the messages each group
// had not consumed that the run deleted: those from the group's committed
// offset (or the queue's former start, if later) up to the queue's new
// start. It adds them to the engine's counter and logs one warning.
func (e *Engine) noteUnconsumed(before []consumerPosition) {
	losses := map[[2]string]int64{} // group, topic → messages
	var total int64
	for _, p := range before {
		first, err := e.queueMin(p.q)
		if err != nil {
			continue
		}
		lost := first - max(p.Offset, p.min)
		if lost <= 0 {
			continue
		}
		losses[[2]string{p.Group, p.Topic}] += lost
		total += lost
	}
	if total == 0 {
		return
	}
	e.unconsumedDeleted.Add(total)
	list := make([]unconsumedLoss, 0, len(losses))
	groups := map[string]bool{}
	for k, n := range losses {
		list = append(list, unconsumedLoss{group: k[0], topic: k[1], messages: n})
		groups[k[0]] = true
	}
	slices.SortFunc(list, func(a, b unconsumedLoss) int {
		return cmp.Or(cmp.Compare(b.messages, a.messages), strings.Compare(a.topic, b.topic), strings.Compare(a.group, b.group))
	})
	const worst = 5
	var b strings.Builder
	for i, l := range list[:min(len(list), worst)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s/%s: %d", l.topic, l.group, l.messages)
	}
	if len(list) > worst {
		fmt.Fprintf(&b, " and %d more", len(list)-worst)
	}
	e.opts.Logger.Warn("retention deleted messages that consumer groups had not consumed",
		"messages", total, "groups", len(groups), "worst", b.String())
}
