package admin

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"
)

// Counts are the cluster's message positions at one moment: per topic the
// sum of its queues' max offsets (messages stored so far), per group and
// topic the sum of the group's committed offsets (messages consumed).
type Counts struct {
	At       time.Time
	Topics   map[string]int64
	Consumed map[GroupTopic]int64
	Lag      map[GroupTopic]int64
}

// GroupTopic names a consumer group's position in one topic.
type GroupTopic struct{ Group, Topic string }

// SampleCounts reads the counts of every non-system topic and group:
// GET_TOPIC_STATS_INFO per topic and master, GET_CONSUME_STATS per group
// and master.
func (c *Client) SampleCounts(ctx context.Context) (*Counts, error) {
	topics, err := c.ListTopics(ctx, false)
	if err != nil {
		return nil, err
	}
	masters, err := c.masters(ctx, "")
	if err != nil {
		return nil, err
	}
	groups, err := c.ListGroups(ctx, false)
	if err != nil {
		return nil, err
	}
	out := &Counts{At: time.Now(), Topics: map[string]int64{}, Consumed: map[GroupTopic]int64{}, Lag: map[GroupTopic]int64{}}
	for _, ts := range topics {
		out.Topics[ts.Topic] = 0
		for _, b := range masters {
			if !slices.Contains(ts.Brokers, b.Name) {
				continue
			}
			qs, err := c.queueOffsets(ctx, b, ts.Topic, ts.ReadQueues)
			if err != nil {
				return nil, err
			}
			for _, q := range qs {
				out.Topics[ts.Topic] += q.MaxOffset
			}
		}
	}
	for _, g := range groups {
		for _, b := range masters {
			lags, err := c.groupLag(ctx, b, g.Group, "", nil)
			if err != nil {
				return nil, err
			}
			for _, l := range lags {
				k := GroupTopic{g.Group, l.Topic}
				out.Consumed[k] += l.ConsumerOffset
				out.Lag[k] += l.Lag
			}
		}
	}
	return out, nil
}

// Stats are message rates over an interval.
type Stats struct {
	Interval float64     `json:"intervalSeconds"`
	Topics   []TopicRate `json:"topics"`
	Groups   []GroupRate `json:"groups"`
}

// TopicRate is the rate messages were stored in a topic.
type TopicRate struct {
	Topic string `json:"topic"`
	// Messages is how many the topic's queues hold in all (max offsets).
	Messages int64   `json:"messages"`
	InPerSec float64 `json:"inPerSecond"`
}

// GroupRate is the rate a group consumed a topic (its committed offsets
// moving on) and its lag at the end.
type GroupRate struct {
	Group         string  `json:"group"`
	Topic         string  `json:"topic"`
	ConsumedTotal int64   `json:"consumed"`
	OutPerSec     float64 `json:"consumedPerSecond"`
	Lag           int64   `json:"lag"`
}

// RatesBetween gives the rates from a to b, sorted by topic and group. A
// counter that went down (a topic recreated, an offset reset back) gives
// a rate of 0.
func RatesBetween(a, b *Counts) *Stats {
	d := b.At.Sub(a.At).Seconds()
	rate := func(from, to int64) float64 {
		if d <= 0 || to < from {
			return 0
		}
		return float64(to-from) / d
	}
	s := &Stats{Interval: d, Topics: []TopicRate{}, Groups: []GroupRate{}}
	for _, t := range slices.Sorted(maps.Keys(b.Topics)) {
		s.Topics = append(s.Topics, TopicRate{Topic: t, Messages: b.Topics[t], InPerSec: rate(a.Topics[t], b.Topics[t])})
	}
	keys := slices.SortedFunc(maps.Keys(b.Consumed), func(x, y GroupTopic) int {
		if c := strings.Compare(x.Group, y.Group); c != 0 {
			return c
		}
		return strings.Compare(x.Topic, y.Topic)
	})
	for _, k := range keys {
		from, ok := a.Consumed[k]
		if !ok {
			from = b.Consumed[k]
		}
		s.Groups = append(s.Groups, GroupRate{Group: k.Group, Topic: k.Topic, ConsumedTotal: b.Consumed[k], OutPerSec: rate(from, b.Consumed[k]), Lag: b.Lag[k]})
	}
	return s
}
