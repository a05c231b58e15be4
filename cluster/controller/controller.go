package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/karmanmq/karman/cluster/raftstore"
)

// ErrPeers is returned by Open when the peer list is unusable or does not
// match the configuration the node's raft log already holds.
var ErrPeers = errors.New("controller: peer list")

// Options configure a controller node. The zero value of every optional
// field is replaced by its default.
type Options struct {
	// ID is this node's id; it must be one of Peers. Required.
	ID string
	// Peers maps every voter's id to its raft address (host:port), this
	// node's included. Required; every node must be given the same.
	Peers map[string]string
	// Dir holds the raft log, stable store and snapshots. Required.
	Dir string
	// Listener, when set, is the raft listener (for tests: a port picked
	// at run time); otherwise Open listens on Peers[ID].
	Listener net.Listener
	// HeartbeatTimeout is how long a broker may stay silent before it
	// counts as dead and, if it is a master, is replaced. Default 5s.
	HeartbeatTimeout time.Duration
	// AllowUncleanElection lets an election pick a live broker outside
	// the in-sync set when no in-sync one is live, losing what only the
	// old master held. Default false.
	AllowUncleanElection bool
	// ApplyTimeout bounds one raft write. Default 5s.
	ApplyTimeout time.Duration
	// Logger receives the controller's and raft's logs. Default
	// slog.Default().
	Logger *slog.Logger
}

func (o *Options) ensureDefaults() {
	if o.HeartbeatTimeout == 0 {
		o.HeartbeatTimeout = 5 * time.Second
	}
	if o.ApplyTimeout == 0 {
		o.ApplyTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

func (o *Options) validate() error {
	switch {
	case o.ID == "":
		return fmt.Errorf("%w: no controller id", ErrPeers)
	case o.Dir == "":
		return fmt.Errorf("controller: no data directory")
	case o.HeartbeatTimeout < 0 || o.ApplyTimeout < 0:
		return fmt.Errorf("controller: negative timeout")
	}
	if _, ok := o.Peers[o.ID]; !ok {
		return fmt.Errorf("%w: this controller's id %q is not among the peers %v", ErrPeers, o.ID, slices.Sorted(maps.Keys(o.Peers)))
	}
	seen := map[string]string{}
	for id, addr := range o.Peers {
		if id == "" {
			return fmt.Errorf("%w: a peer without an id", ErrPeers)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%w: peer %s: address %q: %w", ErrPeers, id, addr, err)
		}
		if other, ok := seen[addr]; ok {
			return fmt.Errorf("%w: peers %s and %s share the address %s", ErrPeers, other, id, addr)
		}
		seen[addr] = id
	}
	return nil
}

// Controller is one node of the controller quorum.
type Controller struct {
	opts  Options
	log   *slog.Logger
	fsm   *fsm
	raft  *raft.Raft
	store *raftstore.Store
	trans *raft.NetworkTransport

	mu          sync.Mutex
	beats       map[beatKey]beat
	leaderSince time.Time // zero while not the leader
	noCandidate map[string]int32

	// elections counts the masters this node elected while it led, by
	// group and trigger; failed the elections that found no candidate.
	elections map[electionKey]uint64
	failed    map[string]uint64
	// watches counts the open watch connections of each broker;
	// kick wakes the master check when one closes.
	watches map[beatKey]int
	kick    chan struct{}
	// unwatch, closed by EndWatches, ends every watch.
	unwatch     chan struct{}
	unwatchOnce sync.Once

	// peersWrong, once set, says how this node's peer list differs
	// from one a leader of its quorum was started with; the node then
	// refuses brokers' requests (ErrPeers) until it is restarted.
	peersWrong atomic.Pointer[string]

	stop chan struct{}
	done chan struct{}
}

type electionKey struct{ group, trigger string }

// Triggers of an election, in Metrics.
const (
	TriggerHeartbeat = "heartbeat" // the master's heartbeats stopped
	TriggerRequest   = "request"   // a broker asked (Elect)
)

// Election is a count of the elections this node made as the leader.
type Election struct {
	Group   string
	Trigger string // TriggerHeartbeat or TriggerRequest
	Count   uint64
}

// Metrics is a node's figures for monitoring.
type Metrics struct {
	Leader bool
	// Elections counts the new masters this node elected while it led,
	// since it started, by group and trigger.
	Elections []Election
	// NoCandidate counts, by group, elections this node tried that found
	// no broker it could elect.
	NoCandidate map[string]uint64
	// Watches is the number of brokers' watch connections open here.
	Watches int
}

// Metrics returns the node's figures.
func (c *Controller) Metrics() Metrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := Metrics{Leader: c.IsLeader(), NoCandidate: maps.Clone(c.failed)}
	for _, n := range c.watches {
		m.Watches += n
	}
	for k, n := range c.elections {
		m.Elections = append(m.Elections, Election{Group: k.group, Trigger: k.trigger, Count: n})
	}
	slices.SortFunc(m.Elections, func(a, b Election) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Trigger, b.Trigger))
	})
	return m
}

// counted records an election's outcome.
func (c *Controller) counted(group, trigger string, old Group, g Group, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil && g.MasterEpoch != old.MasterEpoch:
		c.elections[electionKey{group, trigger}]++
	case errors.Is(err, ErrNoCandidate):
		c.failed[group]++
	}
}

type beatKey struct {
	group string
	id    int64
}

type beat struct {
	at        time.Time
	epoch     int32
	maxOffset int64
	// closed is set when the broker's watch connection closed after its
	// last heartbeat: it counts as dead at once.
	closed bool
}

// Open starts a controller node: it opens (or creates) its raft state in
// Dir, bootstraps the quorum from Peers on first start, and joins the
// election. On a later start the peers must match the stored
// configuration.
func Open(opts Options) (_ *Controller, err error) {
	opts.ensureDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		opts: opts, log: opts.Logger.With("controller", opts.ID),
		fsm:         &fsm{s: newState()},
		beats:       map[beatKey]beat{},
		noCandidate: map[string]int32{},
		elections:   map[electionKey]uint64{},
		watches:     map[beatKey]int{},
		kick:        make(chan struct{}, 1),
		unwatch:     make(chan struct{}),
		failed:      map[string]uint64{},
		stop:        make(chan struct{}), done: make(chan struct{}),
	}
	c.fsm.onPeers = c.checkPeers
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c.store, err = raftstore.Open(filepath.Join(opts.Dir, "raft"))
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	defer func() {
		if err != nil {
			c.store.Close()
		}
	}()
	hlog := hclog.FromStandardLogger(slog.NewLogLogger(c.log.Handler(), slog.LevelWarn), &hclog.LoggerOptions{Name: "raft", Level: hclog.Warn})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(opts.Dir, 2, hlog)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", opts.Peers[opts.ID]); err != nil {
			return nil, fmt.Errorf("controller: raft listener: %w", err)
		}
	}
	c.trans = raft.NewNetworkTransportWithLogger(&streamLayer{Listener: ln}, 3, 10*time.Second, hlog)
	defer func() {
		if err != nil {
			c.trans.Close()
		}
	}()

	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(opts.ID)
	conf.Logger = hlog
	conf.SnapshotThreshold = 1024
	var peers raft.Configuration
	for _, id := range slices.Sorted(maps.Keys(opts.Peers)) {
		peers.Servers = append(peers.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(opts.Peers[id])})
	}
	existing, err := raft.HasExistingState(c.store, c.store, snaps)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if !existing {
		if err := raft.BootstrapCluster(conf, c.store, c.store, snaps, c.trans, peers); err != nil {
			return nil, fmt.Errorf("controller: bootstrap: %w", err)
		}
	}
	c.raft, err = raft.NewRaft(conf, c.fsm, c.store, c.store, snaps, c.trans)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if existing {
		f := c.raft.GetConfiguration()
		if err := f.Error(); err != nil {
			c.raft.Shutdown()
			return nil, fmt.Errorf("controller: %w", err)
		}
		if !sameServers(f.Configuration().Servers, peers.Servers) {
			c.raft.Shutdown()
			return nil, fmt.Errorf("%w: %v does not match the stored configuration %v", ErrPeers, peers.Servers, f.Configuration().Servers)
		}
	}
	go c.watch()
	c.log.Info("controller started", "peers", opts.Peers, "raft", ln.Addr().String())
	return c, nil
}

func sameServers(a, b []raft.Server) bool {
	key := func(s raft.Server) string { return string(s.ID) + "=" + string(s.Address) }
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i, s := range a {
		ka[i] = key(s)
	}
	for i, s := range b {
		kb[i] = key(s)
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// Close leaves the quorum's work to the others: it stops raft and closes
// the stores.
func (c *Controller) Close() error {
	select {
	case <-c.stop:
		return nil
	default:
	}
	close(c.stop)
	<-c.done
	err := c.raft.Shutdown().Error()
	if cerr := c.trans.Close(); err == nil {
		err = cerr
	}
	if cerr := c.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// IsLeader reports whether this node is the raft leader.
func (c *Controller) IsLeader() bool { return c.raft.State() == raft.Leader }

// Leader returns the raft leader's id, or "" while there is none known.
func (c *Controller) Leader() string {
	_, id := c.raft.LeaderWithID()
	return string(id)
}

// Groups returns this node's copy of every group's record, sorted by
// name. On a follower it may lag the leader by a moment.
func (c *Controller) Groups() []Group {
	var gs []Group
	c.fsm.read(func(s *state) {
		for _, name := range slices.Sorted(maps.Keys(s.Groups)) {
			gs = append(gs, s.Groups[name].clone())
		}
	})
	return gs
}

// Group returns this node's copy of one group's record.
func (c *Controller) Group(name string) (Group, error) {
	var (
		g  Group
		ok bool
	)
	c.fsm.read(func(s *state) { g, ok = s.group(name) })
	if !ok {
		return Group{}, fmt.Errorf("%w: %q", ErrUnknownGroup, name)
	}
	return g, nil
}

// apply writes a command through raft on the leader and returns what the
// state machine answered.
func (c *Controller) apply(cmd command) (Group, error) {
	if !c.IsLeader() {
		return Group{}, c.notLeader()
	}
	if err := c.peersErr(); err != nil && cmd.Peers == nil {
		return Group{}, err
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return Group{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	f := c.raft.Apply(b, c.opts.ApplyTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return Group{}, c.notLeader()
		}
		return Group{}, fmt.Errorf("controller: raft: %w", err)
	}
	res, ok := f.Response().(result)
	if !ok {
		return Group{}, fmt.Errorf("controller: raft answered %T", f.Response())
	}
	return res.Group, res.Err
}

// checkPeers compares the peer list a leader of the quorum was started
// with to this node's. Raft does not: each node bootstraps from its own
// list, and lists that disagree on an address go unnoticed until a
// failover needs it. A difference is logged and makes this node refuse
// brokers' requests with ErrPeers until it is restarted with the
// quorum's list.
func (c *Controller) checkPeers(theirs map[string]string) {
	if maps.Equal(theirs, c.opts.Peers) {
		return
	}
	list := func(m map[string]string) string {
		var b strings.Builder
		for i, id := range slices.Sorted(maps.Keys(m)) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(id + "=" + m[id])
		}
		return b.String()
	}
	reason := fmt.Sprintf("a leader of the quorum was started with --controller-peers %s, this controller with %s", list(theirs), list(c.opts.Peers))
	if c.peersWrong.CompareAndSwap(nil, &reason) {
		c.log.Error("controller: peer lists do not match; refusing brokers' requests until restarted with the quorum's list", "reason", reason)
	}
}

// peersErr returns ErrPeers once checkPeers found the lists differ.
func (c *Controller) peersErr() error {
	if p := c.peersWrong.Load(); p != nil {
		return fmt.Errorf("%w: %s", ErrPeers, *p)
	}
	return nil
}

func (c *Controller) notLeader() error {
	return fmt.Errorf("%w: %s (leader: %q)", ErrNotLeader, c.opts.ID, c.Leader())
}

// Register records a broker in its group; the first broker of a new group
// becomes its master. Leader only.
func (c *Controller) Register(r RegisterRequest) (Group, error) {
	g, err := c.apply(command{Register: &r})
	if err == nil {
		c.mu.Lock()
		c.beats[beatKey{r.Group, r.BrokerID}] = beat{at: time.Now()}
		c.mu.Unlock()
	}
	return g, err
}

// AlterSyncStateSet records the master's in-sync set; only the master of
// the current epoch may. Leader only.
func (c *Controller) AlterSyncStateSet(r AlterSyncStateSetRequest) (Group, error) {
	return c.apply(command{Alter: &r})
}

// Heartbeat records that a broker is alive and returns its group's
// record, from which the broker takes its role. Leader only; kept in
// memory, not in the raft log.
func (c *Controller) Heartbeat(r HeartbeatRequest) (Group, error) {
	if !c.ready() {
		return Group{}, c.notLeader()
	}
	if err := c.peersErr(); err != nil {
		return Group{}, err
	}
	g, err := c.Group(r.Group)
	if err != nil {
		return Group{}, err
	}
	if _, ok := g.Members[r.BrokerID]; !ok {
		return Group{}, fmt.Errorf("%w: %d in group %s", ErrUnknownBroker, r.BrokerID, r.Group)
	}
	c.mu.Lock()
	c.beats[beatKey{r.Group, r.BrokerID}] = beat{at: time.Now(), epoch: r.Epoch, maxOffset: r.MaxOffset}
	c.mu.Unlock()
	return g, nil
}

// Elect elects a new master of a group among its live brokers (in the
// in-sync set unless unclean elections are allowed), preferring
// r.BrokerID when it may be elected. Leader only.
func (c *Controller) Elect(r ElectRequest) (Group, error) {
	if !c.ready() {
		return Group{}, c.notLeader()
	}
	if err := c.peersErr(); err != nil {
		return Group{}, err
	}
	g, err := c.Group(r.Group)
	if err != nil {
		return Group{}, err
	}
	cands := c.candidates(g, time.Now())
	if r.BrokerID != 0 {
		if i := slices.Index(cands, r.BrokerID); i > 0 {
			cands = append([]int64{r.BrokerID}, slices.Delete(cands, i, i+1)...)
		}
	}
	ng, err := c.apply(command{Elect: &elect{Group: r.Group, Candidates: cands, Unclean: c.opts.AllowUncleanElection}})
	c.counted(r.Group, TriggerRequest, g, ng, err)
	return ng, err
}

// WatchMaxDuration is how long a watch lasts before the controller ends
// it and the broker opens another.
const WatchMaxDuration = time.Minute

// Watch holds a broker's watch connection (RIP-44's closed-channel
// detection): it returns when ctx ends, when this node stops leading or
// stops, or after WatchMaxDuration. When ctx ends first (the broker's
// connection closed: the broker died or went away) and no other watch of
// the broker is open, the broker counts as dead at once, and a master is
// replaced without waiting for HeartbeatTimeout. Leader only.
func (c *Controller) Watch(ctx context.Context, r WatchRequest) error {
	if !c.ready() {
		return c.notLeader()
	}
	if err := c.peersErr(); err != nil {
		return err
	}
	g, err := c.Group(r.Group)
	if err != nil {
		return err
	}
	if _, ok := g.Members[r.BrokerID]; !ok {
		return fmt.Errorf("%w: %d in group %s", ErrUnknownBroker, r.BrokerID, r.Group)
	}
	key := beatKey{r.Group, r.BrokerID}
	c.mu.Lock()
	c.watches[key]++
	c.mu.Unlock()
	max := time.NewTimer(WatchMaxDuration)
	defer max.Stop()
	lead := time.NewTicker(100 * time.Millisecond)
	defer lead.Stop()
	for {
		select {
		case <-ctx.Done():
			c.mu.Lock()
			c.watches[key]--
			last := c.watches[key] == 0
			if last {
				delete(c.watches, key)
				if b, ok := c.beats[key]; ok {
					b.closed = true
					c.beats[key] = b
				}
			}
			c.mu.Unlock()
			if last {
				c.log.Warn("a broker's watch connection closed; it counts as dead", "group", r.Group, "broker", r.BrokerID)
				select {
				case c.kick <- struct{}{}:
				default:
				}
			}
			return ctx.Err()
		case <-c.stop:
		case <-c.unwatch:
		case <-max.C:
		case <-lead.C:
			if c.ready() {
				continue
			}
		}
		c.mu.Lock()
		if c.watches[key]--; c.watches[key] <= 0 {
			delete(c.watches, key)
		}
		c.mu.Unlock()
		return nil
	}
}

// EndWatches ends every watch, open or to come, as when the leader ends
// them: no broker counts as dead for it. Call it when the request API
// shuts down (http.Server.RegisterOnShutdown), whose graceful shutdown
// would otherwise wait for them.
func (c *Controller) EndWatches() { c.unwatchOnce.Do(func() { close(c.unwatch) }) }

// alive reports whether a broker's last heartbeat is within the timeout;
// a new leader counts every broker as just seen.
func (c *Controller) aliveLocked(group string, id int64, now time.Time) (beat, bool) {
	b := c.beats[beatKey{group, id}]
	if b.closed {
		return b, false
	}
	at := b.at
	if at.Before(c.leaderSince) {
		at = c.leaderSince
	}
	return b, now.Sub(at) <= c.opts.HeartbeatTimeout
}

// candidates ranks a group's live members for an election: the highest
// epoch, then the longest log, then the lowest id first.
func (c *Controller) candidates(g Group, now time.Time) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	type cand struct {
		id int64
		b  beat
	}
	var cs []cand
	for id := range g.Members {
		if b, ok := c.aliveLocked(g.Name, id, now); ok {
			cs = append(cs, cand{id, b})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.b.epoch, a.b.epoch), cmp.Compare(b.b.maxOffset, a.b.maxOffset), cmp.Compare(a.id, b.id))
	})
	ids := make([]int64, len(cs))
	for i, cd := range cs {
		ids[i] = cd.id
	}
	return ids
}

// watch runs on every node. On gaining the leadership it waits until
// every earlier entry is applied (a raft barrier) before it answers
// heartbeats and elections; as the leader it replaces masters whose
// heartbeats stopped.
func (c *Controller) watch() {
	defer close(c.done)
	every := min(max(c.opts.HeartbeatTimeout/5, 50*time.Millisecond), time.Second)
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	var checked time.Time
	for {
		kicked := false
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.kick:
			kicked = true
		}
		leader := c.IsLeader()
		c.mu.Lock()
		was := !c.leaderSince.IsZero()
		if !leader && was {
			c.leaderSince = time.Time{}
			c.beats = map[beatKey]beat{}
		}
		c.mu.Unlock()
		if leader && !was {
			if err := c.raft.Barrier(c.opts.ApplyTimeout).Error(); err != nil {
				c.log.Warn("new leader could not apply the log", "err", err)
				continue
			}
			// Every node compares the list with its own.
			if _, err := c.apply(command{Peers: maps.Clone(c.opts.Peers)}); err != nil {
				c.log.Warn("new leader could not write its peer list", "err", err)
				continue
			}
			c.mu.Lock()
			c.leaderSince = time.Now()
			c.mu.Unlock()
			c.log.Info("controller leads the quorum")
		}
		if now := time.Now(); leader && (kicked || now.Sub(checked) >= every) {
			checked = now
			c.checkMasters(now)
		}
	}
}

// ready reports whether this node leads and has applied every entry of
// the terms before its own.
func (c *Controller) ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.leaderSince.IsZero() && c.IsLeader()
}

func (c *Controller) checkMasters(now time.Time) {
	for _, g := range c.Groups() {
		if g.MasterID == 0 {
			continue
		}
		c.mu.Lock()
		last, alive := c.aliveLocked(g.Name, g.MasterID, now)
		reported := c.noCandidate[g.Name] == g.MasterEpoch
		c.mu.Unlock()
		if alive {
			continue
		}
		cands := c.candidates(g, now)
		ng, err := c.apply(command{Elect: &elect{Group: g.Name, Candidates: cands, Unclean: c.opts.AllowUncleanElection}})
		c.counted(g.Name, TriggerHeartbeat, g, ng, err)
		switch {
		case err == nil:
			c.log.Warn("master lost its heartbeat; elected a new one", "group", g.Name,
				"old", g.MasterID, "silent", now.Sub(last.at).Round(time.Millisecond), "new", ng.MasterID, "epoch", ng.MasterEpoch)
		case errors.Is(err, ErrNoCandidate):
			if !reported {
				c.log.Error("master lost its heartbeat and no in-sync broker is live", "group", g.Name, "master", g.MasterID, "err", err)
				c.mu.Lock()
				c.noCandidate[g.Name] = g.MasterEpoch
				c.mu.Unlock()
			}
		default:
			c.log.Warn("election failed", "group", g.Name, "err", err)
		}
	}
}

// streamLayer is raft's TCP stream layer over a given listener.
type streamLayer struct{ net.Listener }

func (l *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.DialContext(context.Background(), "tcp", string(addr))
}
