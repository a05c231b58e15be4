package mqtt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/bench/latency"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"golang.org/x/sync/errgroup"
)

// Phases, one per shape (point-to-point runs once per QoS).
const (
	PhaseP2PQoS0 = "p2p_qos0"
	PhaseP2PQoS1 = "p2p_qos1"
	PhaseFanout  = "fanout"
	PhaseShared  = "shared"
	PhaseIdle    = "idle"
)

// Options is the work of a run; a zero field takes the default it names.
type Options struct {
	// Version is the protocol level of every client (default 5; shared
	// subscriptions need 5, or a broker that accepts $share in 3.1.1).
	Version byte
	// Size is the payload size in bytes, at least 8 (default 256).
	Size int
	// Count is the number of messages published in the point-to-point
	// and shared phases (default 100,000).
	Count int64
	// Pairs is N of point-to-point: N publishers each to its own topic
	// with one subscriber (default 10).
	Pairs int
	// Inflight is the QoS 1 window of each publisher (default 16).
	Inflight int
	// QoS is the QoS of the fan-out and shared phases (0 or 1).
	QoS byte
	// FanoutSubscribers (default 1,000) each get the FanoutCount messages
	// (default 100) of one publisher.
	FanoutSubscribers int
	FanoutCount       int64
	// SharedPublishers (default 100) publish Count messages in all to
	// SharedSubscribers (default 4) members of one shared subscription.
	SharedPublishers  int
	SharedSubscribers int
	// Connections is the number of idle connections of the idle phase.
	Connections int
	// PerProcess caps the connections of one idle worker process
	// (default 9,000: the machine allows 20,000 open files per process,
	// and each loopback connection costs the broker one).
	PerProcess int
	// DrainTimeout ends a phase when no message arrived for that long
	// after the publishers finished; the missing ones count as lost
	// (default 3 s).
	DrainTimeout time.Duration
	// Timeout bounds one phase (default 2 min).
	Timeout time.Duration
}

// EnsureDefaults fills the zero fields.
func (o *Options) EnsureDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if o.Version == 0 {
		o.Version = packet.Version5
	}
	def(&o.Size, 256)
	if o.Count == 0 {
		o.Count = 100_000
	}
	def(&o.Pairs, 10)
	def(&o.Inflight, 16)
	def(&o.FanoutSubscribers, 1000)
	if o.FanoutCount == 0 {
		o.FanoutCount = 100
	}
	def(&o.SharedPublishers, 100)
	def(&o.SharedSubscribers, 4)
	def(&o.PerProcess, 9000)
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 3 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
}

// Validate refuses values that cannot run.
func (o *Options) Validate() error {
	switch {
	case o.Version != packet.Version311 && o.Version != packet.Version5:
		return fmt.Errorf("bench mqtt: protocol level %d: want 4 (3.1.1) or 5", o.Version)
	case o.Size < 8:
		return fmt.Errorf("bench mqtt: size %d: want at least 8 (the timestamp)", o.Size)
	case o.Count < 1 || o.FanoutCount < 1:
		return errors.New("bench mqtt: counts must be positive")
	case o.Pairs < 1 || o.FanoutSubscribers < 1 || o.SharedPublishers < 1 || o.SharedSubscribers < 1:
		return errors.New("bench mqtt: publishers and subscribers must be positive")
	case o.Inflight < 1 || o.Inflight > 65000:
		return fmt.Errorf("bench mqtt: inflight %d: want 1 to 65,000", o.Inflight)
	case o.QoS > 1:
		return fmt.Errorf("bench mqtt: QoS %d: want 0 or 1", o.QoS)
	case o.Connections < 0 || o.PerProcess < 1:
		return errors.New("bench mqtt: connections must not be negative")
	}
	return nil
}

// Result is one JSON line: the first six fields are the comparison.
type Result struct {
	System      string  `json:"system"`
	Phase       string  `json:"phase"`
	MsgsPerSec  float64 `json:"msgs_per_sec"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`
	RSSMB       float64 `json:"rss_mb"`
	Delivered   int64   `json:"delivered"`
	Published   int64   `json:"published"`
	Lost        int64   `json:"lost"`
	Publishers  int     `json:"publishers"`
	Subscribers int     `json:"subscribers"`
	Connections int     `json:"connections,omitempty"`
	QoS         byte    `json:"qos"`
	Size        int     `json:"size"`
	Version     byte    `json:"version"`
	ElapsedMs   float64 `json:"elapsed_ms"`
}

// Target is a broker to measure.
type Target struct {
	System string // "karman", "mosquitto"
	Addr   string // host:port of its MQTT listener
	PID    int    // its process, for rss_mb; 0 unknown
}

// RSSMB returns the resident set size of process pid in MB (10^6 bytes),
// or 0 when it cannot be read.
func RSSMB(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return round(kb*1024/1e6, 1)
		}
	}
	return 0
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// flow is one measured message flow: publishers each sending perPub
// messages to their topic, subscribers each with a filter, every
// delivery counted and timed.
type flow struct {
	phase       string
	pubTopics   []string // one per publisher
	perPub      []int64  // messages of each publisher
	subFilters  []string // one per subscriber
	qos         byte
	expected    int64 // deliveries when nothing is lost
	subscribers int
}

// dialAll opens n connections, 64 at a time.
func dialAll(ctx context.Context, t Target, o *Options, prefix string, n int) ([]*Conn, error) {
	conns := make([]*Conn, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range conns {
		g.Go(func() error {
			c, err := Dial(gctx, t.Addr, DialOptions{ClientID: fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), i), Version: o.Version})
			conns[i] = c
			return err
		})
	}
	err := g.Wait()
	if err != nil {
		closeAll(conns)
		return nil, err
	}
	return conns, nil
}

func closeAll(conns []*Conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
	}
	wg.Wait()
}

// run measures f against t.
func (f *flow) run(ctx context.Context, t Target, o *Options) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	subs, err := dialAll(ctx, t, o, "kb-"+f.phase+"-s", len(f.subFilters))
	if err != nil {
		return Result{}, fmt.Errorf("subscribers: %w", err)
	}
	defer closeAll(subs)
	var (
		delivered atomic.Int64
		lastRecv  atomic.Int64
		hists     = make([]latency.Histogram, len(subs))
		mus       = make([]sync.Mutex, len(subs))
		allIn     = make(chan struct{})
		allOnce   sync.Once
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i, c := range subs {
		g.Go(func() error { return c.Subscribe(gctx, f.subFilters[i], f.qos) })
	}
	if err := g.Wait(); err != nil {
		return Result{}, err
	}
	for i, c := range subs {
		c.Start(1, func(p *packet.Publish) {
			now := time.Now().UnixNano()
			if len(p.Payload) >= 8 {
				sent := int64(binary.BigEndian.Uint64(p.Payload))
				mus[i].Lock()
				hists[i].Record(time.Duration(now - sent))
				mus[i].Unlock()
			}
			for {
				last := lastRecv.Load()
				if now <= last || lastRecv.CompareAndSwap(last, now) {
					break
				}
			}
			if delivered.Add(1) == f.expected {
				allOnce.Do(func() { close(allIn) })
			}
		})
	}
	pubs, err := dialAll(ctx, t, o, "kb-"+f.phase+"-p", len(f.pubTopics))
	if err != nil {
		return Result{}, fmt.Errorf("publishers: %w", err)
	}
	defer closeAll(pubs)
	for _, c := range pubs {
		c.Start(o.Inflight, nil)
	}

	start := time.Now()
	var published atomic.Int64
	g, gctx = errgroup.WithContext(ctx)
	for i, c := range pubs {
		g.Go(func() error {
			payload := make([]byte, o.Size)
			for n := int64(0); n < f.perPub[i]; n++ {
				binary.BigEndian.PutUint64(payload, uint64(time.Now().UnixNano()))
				if err := c.Publish(gctx, f.pubTopics[i], f.qos, uint16(n%65535)+1, payload); err != nil {
					return err
				}
				published.Add(1)
			}
			if f.qos > 0 {
				return c.Drain(gctx)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Result{}, fmt.Errorf("publishing: %w", err)
	}
	pubDone := time.Now()
	// Wait for every delivery, or until none arrives for DrainTimeout.
	seen, idleSince := delivered.Load(), time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-allIn:
			break wait
		case <-ctx.Done():
			return Result{}, fmt.Errorf("waiting for deliveries (%d of %d): %w", delivered.Load(), f.expected, ctx.Err())
		case <-tick.C:
			if n := delivered.Load(); n != seen {
				seen, idleSince = n, time.Now()
			} else if time.Since(idleSince) > o.DrainTimeout {
				break wait
			}
		}
	}
	var h latency.Histogram
	for i := range hists {
		mus[i].Lock()
		h.Merge(&hists[i])
		mus[i].Unlock()
	}
	n := delivered.Load()
	end := time.Unix(0, lastRecv.Load())
	if n == 0 {
		end = pubDone
	}
	elapsed := end.Sub(start)
	r := Result{
		System: t.System, Phase: f.phase, Delivered: n, Published: published.Load(), Lost: f.expected - n,
		Publishers: len(pubs), Subscribers: len(subs), QoS: f.qos, Size: o.Size, Version: o.Version,
		P50us: round(float64(h.Quantile(0.50))/1e3, 1), P99us: round(float64(h.Quantile(0.99))/1e3, 1),
		ElapsedMs: round(elapsed.Seconds()*1e3, 1), RSSMB: RSSMB(t.PID),
	}
	if s := elapsed.Seconds(); s > 0 {
		r.MsgsPerSec = math.Round(float64(n) / s)
	}
	return r, nil
}

func split(total int64, parts int) []int64 {
	out := make([]int64, parts)
	for i := range out {
		out[i] = total / int64(parts)
		if int64(i) < total%int64(parts) {
			out[i]++
		}
	}
	return out
}

// P2P measures N publishers each publishing to its own topic, read by one
// subscriber each: o.Count messages in all at qos.
func P2P(ctx context.Context, t Target, o Options, qos byte) (Result, error) {
	f := &flow{phase: PhaseP2PQoS0, qos: qos, perPub: split(o.Count, o.Pairs), expected: o.Count}
	if qos == 1 {
		f.phase = PhaseP2PQoS1
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i := 0; i < o.Pairs; i++ {
		topic := fmt.Sprintf("bench/%s/p2p/%d", run, i)
		f.pubTopics = append(f.pubTopics, topic)
		f.subFilters = append(f.subFilters, topic)
	}
	return f.run(ctx, t, &o)
}

// Fanout measures one publisher sending o.FanoutCount messages to one
// topic with o.FanoutSubscribers subscribers: msgs_per_sec counts
// deliveries.
func Fanout(ctx context.Context, t Target, o Options) (Result, error) {
	topic := "bench/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/fanout"
	f := &flow{phase: PhaseFanout, qos: o.QoS, pubTopics: []string{topic}, perPub: []int64{o.FanoutCount},
		expected: o.FanoutCount * int64(o.FanoutSubscribers)}
	for i := 0; i < o.FanoutSubscribers; i++ {
		f.subFilters = append(f.subFilters, topic)
	}
	return f.run(ctx, t, &o)
}

// Shared measures o.SharedPublishers publishers sending o.Count messages in
// all to topics under one prefix, consumed by o.SharedSubscribers members
// of the shared subscription $share/bench/PREFIX/+.
func Shared(ctx context.Context, t Target, o Options) (Result, error) {
	prefix := "bench/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/shared"
	f := &flow{phase: PhaseShared, qos: o.QoS, perPub: split(o.Count, o.SharedPublishers), expected: o.Count}
	for i := 0; i < o.SharedPublishers; i++ {
		f.pubTopics = append(f.pubTopics, fmt.Sprintf("%s/%d", prefix, i))
	}
	for i := 0; i < o.SharedSubscribers; i++ {
		f.subFilters = append(f.subFilters, "$share/bench/"+prefix+"/+")
	}
	return f.run(ctx, t, &o)
}
