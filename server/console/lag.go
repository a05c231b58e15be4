package console

import (
	"context"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
)

// LagSample is a consumer group's lag at one time.
type LagSample struct {
	At  int64 `json:"at"` // ms since the epoch
	Lag int64 `json:"lag"`
}

// Defaults of the lag history: a sample every 5 s, the last 10 minutes
// kept.
const (
	DefaultLagInterval = 5 * time.Second
	DefaultLagSamples  = 120
)

// maxLagGroups bounds the groups a LagHistory samples (the first by name).
const maxLagGroups = 10_000

// LagHistory samples the lag of every consumer group at an interval and
// keeps the latest samples of each, so that a group's lag chart shows the
// last minutes as soon as its page opens. Groups that are gone are
// forgotten at the next round. A round over 1,000 groups takes about 10 ms
// (BenchmarkLagSample); rounds that take longer are spaced out to keep
// under 1 % of a core. It is safe for concurrent use.
type LagHistory struct {
	eng     func(visit func(*engine.Engine)) bool
	every   time.Duration
	samples int

	mu     sync.Mutex
	groups map[string]*lagRing
}

// lagRing holds a group's latest samples, oldest first from next.
type lagRing struct {
	s    []LagSample
	next int
}

// NewLagHistory returns a history that samples the engine eng gives
// (see Options.Engine) every interval and keeps samples per group; zero
// values take the defaults. Run it to sample.
func NewLagHistory(eng func(visit func(*engine.Engine)) bool, interval time.Duration, samples int) *LagHistory {
	if interval <= 0 {
		interval = DefaultLagInterval
	}
	if samples <= 0 {
		samples = DefaultLagSamples
	}
	return &LagHistory{eng: eng, every: interval, samples: samples, groups: map[string]*lagRing{}}
}

// maxLagShare bounds the time sampling takes: after a round that took d,
// the next waits at least d×maxLagShare (1 % of a core), however many
// groups there are.
const maxLagShare = 100

// Run samples at once and then every interval until ctx ends (less often
// when a round takes more than a hundredth of the interval).
func (h *LagHistory) Run(ctx context.Context) {
	t := time.NewTimer(h.every)
	defer t.Stop()
	for {
		start := time.Now()
		h.Sample()
		t.Reset(max(h.every, time.Since(start)*maxLagShare))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample takes one sample of every group's lag now; nothing while no
// engine is open.
func (h *LagHistory) Sample() {
	now := time.Now().UnixMilli()
	lags := map[string]int64{}
	open := h.eng(func(e *engine.Engine) {
		_, names := groupNames(e)
		for _, n := range names[:min(len(names), maxLagGroups)] {
			if lag, _, _, err := lagOf(e, n, false); err == nil {
				lags[n] = lag
			}
		}
	})
	if !open {
		return // nothing known now: keep what was
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for n := range h.groups {
		if _, ok := lags[n]; !ok {
			delete(h.groups, n)
		}
	}
	for n, lag := range lags {
		r := h.groups[n]
		if r == nil {
			r = &lagRing{}
			h.groups[n] = r
		}
		if len(r.s) < h.samples {
			r.s = append(r.s, LagSample{now, lag})
			continue
		}
		r.s[r.next] = LagSample{now, lag}
		r.next = (r.next + 1) % h.samples
	}
}

// Of returns group's samples, oldest first.
func (h *LagHistory) Of(group string) []LagSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.groups[group]
	if r == nil {
		return []LagSample{}
	}
	out := make([]LagSample, 0, len(r.s))
	out = append(out, r.s[r.next:]...)
	return append(out, r.s[:r.next]...)
}
