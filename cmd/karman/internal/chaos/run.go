package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Config is one run: a cluster, a workload and a fault.
type Config struct {
	Fault    string
	Cluster  ClusterOptions
	Workload WorkloadOptions
	// Group is the broker group the fault hits ("broker-a").
	Group string
	// Duration is how long the workload sends (8 s); the fault comes
	// after FaultAfter (a quarter of it, at least 1 s).
	Duration   time.Duration
	FaultAfter time.Duration
	// RecoveryTimeout is how long the workload may send past Duration
	// while no send to the faulted group made after the fault has been
	// acknowledged (40 s: the Go client's route timer is 30 s).
	RecoveryTimeout time.Duration
	// DrainTimeout bounds the wait for the consumer to receive every
	// acknowledged message after the sends stop (45 s).
	DrainTimeout time.Duration
}

// Result is a run's outcome, printed as one JSON line by "karman chaos".
type Result struct {
	Fault       string `json:"fault"`
	Replication string `json:"replication"`
	Network     string `json:"network"` // "netns" or "loopback"
	Victim      string `json:"victim"`  // the node the fault hit: a1, c2, ...
	Verdict
	// FailoverMS is the time from the fault until the group has a master
	// routed by the name servers that acknowledges a probe send (for a
	// master fault, another broker); -1 if not within the run.
	FailoverMS int64 `json:"failover_ms"`
	// RecoveryMS is the time from the fault until the workload's writes
	// to the group recovered: the first acknowledged send to the group
	// that started after the first failed one (after the fault, when none
	// failed), stored by another member than the victim of a master
	// fault; -1 if none.
	RecoveryMS int64 `json:"recovery_ms"`
	// VictimAcks counts, after a master fault, the sends made after the
	// fault that the old master acknowledged (before its lease ran out).
	VictimAcks int `json:"victim_acks"`
	// LostFinal counts acknowledged messages a final read of the topic
	// by a new consumer group, started after the run, does not find:
	// what the groups' masters no longer hold, even if the run's consumer
	// got it (from a master that was replaced and cut it off its log).
	LostFinal int `json:"lost_final"`
	// LostSample names up to ten acknowledged messages missing from the
	// consumer's deliveries or the final read ("key-03/120 consumed=true
	// final=false").
	LostSample []string `json:"lost_sample,omitempty"`
	// MaxWriteGapMS is the longest time from the fault to the end of the
	// sends in which no send to any group was acknowledged.
	MaxWriteGapMS int64 `json:"max_write_gap_ms"`
	DurationMS    int64 `json:"duration_ms"` // of the whole run
	// ProxiedLinks, Stalls and Resets count, with the faults of
	// ProxyFaults, the replication connections the group's proxies
	// relayed and the stalls and resets they injected.
	ProxiedLinks int64 `json:"proxied_links,omitempty"`
	Stalls       int64 `json:"stalls,omitempty"`
	Resets       int64 `json:"resets,omitempty"`
}

func (c *Config) ensureDefaults() {
	c.Cluster.ensureDefaults()
	c.Workload.ensureDefaults()
	if c.Group == "" {
		c.Group = Groups[0]
	}
	if c.Duration <= 0 {
		c.Duration = 8 * time.Second
	}
	if c.FaultAfter <= 0 {
		c.FaultAfter = max(time.Second, c.Duration/4)
	}
	if c.RecoveryTimeout <= 0 {
		c.RecoveryTimeout = 40 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 45 * time.Second
	}
}

// Run starts a cluster, runs the workload, injects the fault, restores
// the victim, drains the consumer and judges the history. The cluster is
// gone when it returns.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.ensureDefaults()
	log := cfg.Cluster.Log
	if err := CheckFault(cfg.Fault, cfg.Cluster.Netns); err != nil {
		return nil, err
	}
	if cfg.FaultAfter >= cfg.Duration {
		return nil, fmt.Errorf("chaos: the fault (after %s) must come within the duration (%s)", cfg.FaultAfter, cfg.Duration)
	}
	if slices.Contains(ProxyFaults, cfg.Fault) {
		cfg.Cluster.HAProxy = true
	}
	begin := time.Now()
	c, err := StartCluster(ctx, cfg.Cluster)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	w, err := startWorkload(c.NameServers(), cfg.Workload)
	if err != nil {
		return nil, err
	}
	defer w.shutdown()
	w.produce()
	produceStart := time.Now()
	stopped := false
	defer func() {
		if !stopped {
			w.stopProducing()
		}
	}()
	if err := sleep(ctx, cfg.FaultAfter); err != nil {
		return nil, err
	}

	t, t0, err := c.inject(ctx, cfg.Fault, cfg.Group)
	if err != nil {
		return nil, err
	}
	res := &Result{Fault: cfg.Fault, Replication: cfg.Cluster.Replication, Network: c.Mode(), FailoverMS: -1, RecoveryMS: -1}
	if t.broker != nil {
		res.Victim = t.broker.name
	} else {
		res.Victim = c.controllers[t.controller].name
	}
	log("%s: %s at %s", cfg.Fault, res.Victim, t0.Sub(produceStart).Round(time.Millisecond))

	// The failover watch runs beside the restore, which may wait for it.
	failover := make(chan time.Duration, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		err := poll(watchCtx, "failover", cfg.Duration+cfg.RecoveryTimeout, 50*time.Millisecond, func() error {
			return c.serving(watchCtx, t)
		})
		if err != nil {
			log("%v", err)
			failover <- -1
			return
		}
		failover <- time.Since(t0)
	}()
	if err := c.restore(ctx, cfg.Fault, t); err != nil {
		return nil, fmt.Errorf("chaos: restore %s after %s: %w", res.Victim, cfg.Fault, err)
	}
	log("%s restored at %s", res.Victim, time.Since(t0).Round(time.Millisecond))

	not := "" // the member whose acks do not count as recovery
	if t.masterFault {
		not = t.broker.addr
	}
	// Send for the whole duration, and on until the faulted group
	// acknowledges a send made after the fault.
	if err := sleep(ctx, time.Until(produceStart.Add(cfg.Duration))); err != nil {
		return nil, err
	}
	err = poll(ctx, "a send to "+cfg.Group+" acknowledged after the fault", cfg.RecoveryTimeout, 100*time.Millisecond, func() error {
		sends, _ := w.history()
		if _, ok := Recovery(sends, cfg.Group, t0, not); !ok {
			return errNotReady
		}
		return nil
	})
	if err != nil {
		log("%v", err)
	}
	w.stopProducing()
	stopped = true
	sendsEnd := time.Now()
	log("sends stopped at %s", time.Since(produceStart).Round(time.Millisecond))

	err = poll(ctx, "every acknowledged message consumed", cfg.DrainTimeout, 100*time.Millisecond, func() error {
		if v := Check(w.history()); v.Lost > 0 {
			return fmt.Errorf("%d acknowledged messages not consumed yet", v.Lost)
		}
		return nil
	})
	if err != nil {
		log("%v", err)
	}
	stopWatch()
	if d := <-failover; d >= 0 {
		res.FailoverMS = d.Milliseconds()
	}
	sends, deliveries := w.history()
	res.Verdict = Check(sends, deliveries)
	acked := Acked(sends)
	seen, err := finalRead(ctx, c.NameServers(), acked, cfg.DrainTimeout)
	if err != nil {
		return nil, err
	}
	got := map[msgID]bool{}
	for _, d := range deliveries {
		got[msgID{d.Key, d.Seq}] = true
	}
	for _, id := range acked {
		if !seen[id] {
			res.LostFinal++
		}
		if (!seen[id] || !got[id]) && len(res.LostSample) < 10 {
			res.LostSample = append(res.LostSample, fmt.Sprintf("%s/%d consumed=%v final=%v", id.key, id.seq, got[id], seen[id]))
		}
	}
	if at, ok := Recovery(sends, cfg.Group, t0, not); ok {
		res.RecoveryMS = at.Sub(t0).Milliseconds()
	}
	if not != "" {
		res.VictimAcks = AcksBy(sends, cfg.Group, t0, not)
	}
	res.MaxWriteGapMS = WriteGap(sends, t0, sendsEnd).Milliseconds()
	res.ProxiedLinks, res.Stalls, res.Resets = c.proxyCounts(cfg.Group)
	res.DurationMS = time.Since(begin).Milliseconds()
	return res, nil
}

// serving returns nil when t's group has a master (another broker, for a
// master fault) that the name servers route to and that acknowledges a
// probe send, and after a controller fault a new controller leader.
func (c *Cluster) serving(ctx context.Context, t *target) error {
	if t.controller >= 0 {
		i, err := c.controllerLeader()
		if err != nil {
			return err
		}
		if i == t.controller {
			return errors.New("the old controller leader leads")
		}
	}
	g, err := c.Group(t.group)
	if err != nil {
		return err
	}
	if t.masterFault && g.MasterID == t.broker.id {
		return fmt.Errorf("%s is still the master", t.broker.name)
	}
	m := c.member(t.group, g.MasterID)
	if m == nil {
		return fmt.Errorf("%s has no master", t.group)
	}
	addr, err := c.RouteMaster(ctx, ProbeTopic, t.group)
	if err != nil {
		return err
	}
	if addr != m.addr {
		return fmt.Errorf("the name servers route %s to %s, not %s", t.group, addr, m.addr)
	}
	return Probe(ctx, m.addr, t.group)
}
