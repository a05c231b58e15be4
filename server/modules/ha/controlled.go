package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/cluster/ha"
	"github.com/karmanmq/karman/engine"
	karman "github.com/karmanmq/karman/server"
)

// controlled is a broker whose role comes from the controller quorum: it
// registers, sends a heartbeat every interval and acts on the group's
// record in each answer. Master of the current epoch: the engine is
// promoted to that epoch and replicas are served; anything else: the
// engine is a replica copying the recorded master. As master it reports
// its in-sync replicas; a report refused as fenced (another master was
// elected) demotes it at once.
type controlled struct {
	cl       *controller.Client
	eng      *engine.Engine
	master   *ha.Master
	log      *slog.Logger
	reg      controller.RegisterRequest
	interval time.Duration
	lease    time.Duration
	ln       net.Listener
	replOpts ha.ReplicaOptions

	epoch       int32 // the epoch this broker serves as master; 0: not master
	serveStop   context.CancelFunc
	serveDone   chan struct{}
	replicaAddr string
	replicaStop context.CancelFunc
	replicaDone chan struct{}
	replica     *ha.Replica
	lastErr     string

	// promotions and demotions count the changes of role the
	// controller's answers caused.
	promotions, demotions atomic.Int64

	mu      sync.Mutex
	current *ha.Replica // for metrics
	last    controller.Group
	hasLast bool
}

// group returns the group's record from the controller's last answer.
func (c *controlled) group() (controller.Group, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last, c.hasLast
}

func (c *controlled) run(ctx context.Context) {
	defer c.stopServing()
	defer c.stopReplica()
	var watch sync.WaitGroup
	defer watch.Wait()
	watch.Go(func() { c.watch(ctx) })
	registered := false
	t := time.NewTicker(c.interval)
	defer t.Stop()
	var lastOK time.Time // when the last answered heartbeat was sent
	for {
		var (
			g   controller.Group
			err error
		)
		sent := time.Now()
		cctx, cancel := context.WithTimeout(ctx, max(c.interval, 500*time.Millisecond))
		if !registered {
			g, err = c.cl.Register(cctx, c.reg)
			registered = err == nil
			if err == nil {
				c.log.Info("ha: registered with the controller", "group", c.reg.Group, "broker_id", c.reg.BrokerID)
			}
		} else {
			_, end := c.eng.LogRange()
			hb := controller.HeartbeatRequest{Group: c.reg.Group, BrokerID: c.reg.BrokerID, MaxOffset: end}
			if eps := c.eng.Epochs(); len(eps) > 0 {
				hb.Epoch = int32(eps[len(eps)-1].Epoch)
			}
			g, err = c.cl.Heartbeat(cctx, hb)
			if errors.Is(err, controller.ErrUnknownBroker) || errors.Is(err, controller.ErrUnknownGroup) {
				registered = false
			}
		}
		cancel()
		if err == nil {
			lastOK = sent
			c.master.ExtendLease(sent.Add(c.lease))
		} else if c.epoch != 0 && time.Since(lastOK) > c.lease {
			// The controller may be electing another master: stop
			// acknowledging before it can.
			c.log.Warn("ha: no answer from the controller within the lease; demoted", "lease", c.lease, "err", err)
			c.demote()
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// Logged once per distinct error, not every heartbeat.
			if s := err.Error(); s != c.lastErr {
				c.lastErr = s
				if errors.Is(err, controller.ErrMismatch) || errors.Is(err, controller.ErrBadRequest) {
					c.log.Error("ha: the controller refuses this broker's registration", "err", err)
				} else {
					c.log.Warn("ha: controller unreachable or refusing", "err", err)
				}
			}
		} else {
			c.act(ctx, g)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watch keeps a watch connection open to the controller leader until ctx
// ends: when this process dies, the connection closes and the leader
// replaces it at once if it is master, instead of after the heartbeat
// timeout. A watch refused (not registered yet, no leader) is tried
// again after a heartbeat interval.
func (c *controlled) watch(ctx context.Context) {
	for ctx.Err() == nil {
		err := c.cl.Watch(ctx, controller.WatchRequest{Group: c.reg.Group, BrokerID: c.reg.BrokerID})
		if err == nil {
			continue // the leader ended it: open another
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.interval):
		}
	}
}

// act brings the broker to the role the group's record gives it. A
// record of another group or cluster than this broker's (a confused
// controller, or brokers configured apart) is refused: logged, and the
// broker takes no writes on it.
func (c *controlled) act(ctx context.Context, g controller.Group) {
	if g.Name != c.reg.Group || g.Cluster != c.reg.Cluster {
		err := fmt.Errorf("%w: the controller answered with the record of group %q in cluster %q; this broker is %q in cluster %q",
			controller.ErrMismatch, g.Name, g.Cluster, c.reg.Group, c.reg.Cluster)
		if s := err.Error(); s != c.lastErr {
			c.lastErr = s
			c.log.Error("ha: the controller's record is not this broker's group", "err", err)
		}
		if c.epoch != 0 || c.eng.Role() == engine.RoleMaster {
			c.demote()
		}
		return
	}
	c.lastErr = ""
	c.mu.Lock()
	c.last, c.hasLast = g, true
	c.mu.Unlock()
	me := c.reg.BrokerID
	if g.MasterID != me {
		if c.epoch != 0 || c.eng.Role() == engine.RoleMaster {
			c.log.Warn("ha: another broker is master; demoted", "master", g.MasterID, "epoch", g.MasterEpoch)
			c.demote()
		}
		addr := ""
		if m, ok := g.Master(); ok {
			addr = m.HAAddr
		}
		c.follow(addr)
		return
	}
	if c.epoch == g.MasterEpoch && c.eng.Role() == engine.RoleMaster {
		c.reportInSync(ctx, g)
		return
	}
	c.stopReplica()
	var last uint32
	if eps := c.eng.Epochs(); len(eps) > 0 {
		last = eps[len(eps)-1].Epoch
	}
	if uint32(g.MasterEpoch) <= last {
		// This log already holds the recorded epoch (a master that
		// restarted): ask for a new one before taking writes again.
		if _, err := c.cl.Elect(ctx, controller.ElectRequest{Group: g.Name, BrokerID: me}); err != nil {
			c.log.Warn("ha: asking for a new epoch", "epoch", g.MasterEpoch, "log_epoch", last, "err", err)
		}
		return
	}
	if err := c.eng.Promote(ctx, uint32(g.MasterEpoch)); err != nil {
		c.log.Error("ha: promotion failed", "epoch", g.MasterEpoch, "err", err)
		return
	}
	c.epoch = g.MasterEpoch
	c.promotions.Add(1)
	c.serve()
	c.log.Warn("ha: this broker is the group's master", "epoch", g.MasterEpoch)
}

func (c *controlled) demote() {
	if c.epoch != 0 || c.eng.Role() == engine.RoleMaster {
		c.demotions.Add(1)
	}
	if err := c.eng.Demote(); err != nil {
		c.log.Error("ha: demotion failed", "err", err)
	}
	c.epoch = 0
	c.stopServing()
}

// reportInSync sends the master's in-sync set when it differs from the
// recorded one; a fenced answer demotes the broker.
func (c *controlled) reportInSync(ctx context.Context, g controller.Group) {
	set := []int64{c.reg.BrokerID}
	for _, r := range c.master.Replicas() {
		id, err := strconv.ParseInt(r.ID, 10, 64)
		if err != nil || !r.InSync {
			continue
		}
		if _, ok := g.Members[id]; ok && !slices.Contains(set, id) {
			set = append(set, id)
		}
	}
	slices.Sort(set)
	if slices.Equal(set, g.SyncStateSet) {
		return
	}
	ng, err := c.cl.AlterSyncStateSet(ctx, controller.AlterSyncStateSetRequest{Group: g.Name, MasterID: c.reg.BrokerID, MasterEpoch: g.MasterEpoch, SyncStateSet: set})
	if err == nil {
		c.mu.Lock()
		c.last = ng
		c.mu.Unlock()
	}
	switch {
	case errors.Is(err, controller.ErrFenced):
		c.log.Warn("ha: the controller fenced this master; demoted", "epoch", g.MasterEpoch, "err", err)
		c.demote()
	case err != nil:
		c.log.Warn("ha: in-sync report", "set", set, "err", err)
	}
}

// serve hands the HA listener's connections to the master until
// stopServing.
func (c *controlled) serve() {
	c.stopServing()
	ctx, cancel := context.WithCancel(context.Background())
	c.serveStop, c.serveDone = cancel, make(chan struct{})
	done := c.serveDone
	go func() {
		defer close(done)
		if err := c.master.Serve(ctx, c.ln.(*gate).open(), c.eng); err != nil {
			c.log.Error("ha: serving replicas stopped", "err", err)
		}
	}()
}

func (c *controlled) stopServing() {
	if c.serveStop != nil {
		c.serveStop()
		<-c.serveDone
		c.serveStop = nil
	}
}

// follow copies the master at addr ("" : none known), restarting the
// replication session when the master changes.
func (c *controlled) follow(addr string) {
	if c.replicaStop != nil && c.replicaAddr == addr {
		return
	}
	c.stopReplica()
	if addr == "" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.replicaAddr, c.replicaStop, c.replicaDone = addr, cancel, make(chan struct{})
	r := ha.NewReplica(c.eng, c.replOpts)
	c.mu.Lock()
	c.current = r
	c.mu.Unlock()
	done := c.replicaDone
	go func() {
		defer close(done)
		r.Run(ctx, func() string { return addr })
	}()
	c.log.Info("ha: replicating", "master", addr)
}

func (c *controlled) stopReplica() {
	if c.replicaStop != nil {
		c.replicaStop()
		<-c.replicaDone
		c.replicaStop = nil
		c.replicaAddr = ""
	}
}

func (c *controlled) replicaLag() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == nil || c.eng.Role() == engine.RoleMaster {
		return 0, false
	}
	return c.current.Lag(), true
}

// role is the role the broker has now: "master" or "replica" (the
// engine's, which the controller's answers set).
func (c *controlled) role() string {
	if c.eng.Role() == engine.RoleMaster {
		return RoleMaster
	}
	return RoleReplica
}

// gate is the HA listener of a controlled broker: it accepts for as long
// as the broker lives, hands connections to the listener of the current
// mastership (open) and closes them while the broker is not master.
type gate struct {
	net.Listener
	mu  sync.Mutex
	cur *session
}

type session struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	addr   net.Addr
}

func newGate(ln net.Listener) *gate {
	g := &gate{Listener: ln}
	go g.loop()
	return g
}

func (g *gate) loop() {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		s := g.cur
		g.mu.Unlock()
		if s == nil {
			c.Close()
			continue
		}
		select {
		case s.conns <- c:
		case <-s.closed:
			c.Close()
		}
	}
}

// open returns the listener of a new mastership; closing it stops the
// hand-over.
func (g *gate) open() net.Listener {
	s := &session{conns: make(chan net.Conn), closed: make(chan struct{}), addr: g.Listener.Addr()}
	g.mu.Lock()
	g.cur = s
	g.mu.Unlock()
	return &sessionListener{g: g, s: s}
}

type sessionListener struct {
	g *gate
	s *session
}

func (l *sessionListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.s.conns:
		return c, nil
	case <-l.s.closed:
		return nil, net.ErrClosed
	}
}

func (l *sessionListener) Close() error {
	l.s.once.Do(func() {
		close(l.s.closed)
		l.g.mu.Lock()
		if l.g.cur == l.s {
			l.g.cur = nil
		}
		l.g.mu.Unlock()
	})
	return nil
}

func (l *sessionListener) Addr() net.Addr { return l.s.addr }

func (m *Module) validateControlled() error {
	c := &m.Config
	switch {
	case c.Role != RoleNone:
		return fmt.Errorf("ha: --%s-role and --%s-controller exclude each other: with a controller the role comes from it", Name, Name)
	case c.BrokerID < 1:
		return fmt.Errorf("ha: --%s-controller needs --%s-broker-id, 1 or more", Name, Name)
	case c.Addr == "":
		return fmt.Errorf("ha: --%s-controller needs --%s-addr", Name, Name)
	case c.HeartbeatInterval <= 0:
		return fmt.Errorf("ha: --%s-heartbeat-interval %s: must be positive", Name, c.HeartbeatInterval)
	case c.Lease <= c.HeartbeatInterval:
		return fmt.Errorf("ha: --%s-controller-lease %s: must be longer than --%s-heartbeat-interval %s", Name, c.Lease, Name, c.HeartbeatInterval)
	case c.Replication != "async" && c.Replication != "sync":
		return fmt.Errorf("ha: --%s-replication %q: want async or sync", Name, c.Replication)
	case c.MinInSync < 1:
		return fmt.Errorf("ha: --%s-min-insync-replicas %d: at least 1 (the master)", Name, c.MinInSync)
	case c.AckTimeout <= 0:
		return fmt.Errorf("ha: --%s-ack-timeout %s: must be positive", Name, c.AckTimeout)
	}
	for _, a := range c.Controllers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("ha: --%s-controller %q: want host:port: %w", Name, a, err)
		}
	}
	if c.AdvertiseAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdvertiseAddr); err != nil {
			return fmt.Errorf("ha: --%s-advertise-addr %q: want host:port: %w", Name, c.AdvertiseAddr, err)
		}
	}
	return nil
}

// startControlled binds the HA listener and starts the controller loop.
func (m *Module) startControlled(h karman.Host) error {
	c := &m.Config
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("ha: listen on --%s-addr: %w", Name, err)
	}
	m.addr = ln.Addr()
	brokerAddr := c.BrokerAddr
	if brokerAddr == "" && h.Addrs["broker"] != nil {
		brokerAddr = h.Addrs["broker"].String()
	}
	haAddr := c.AdvertiseAddr
	if haAddr == "" {
		haAddr = advertise(ln.Addr(), brokerAddr)
	}
	if brokerAddr == "" {
		brokerAddr = haAddr
	}
	cluster := c.Cluster
	if cluster == "" {
		cluster = "DefaultCluster"
	}
	log := h.Logger
	if log == nil {
		log = slog.Default()
	}
	m.ctl = &controlled{
		cl:     controller.NewClient(c.Controllers),
		eng:    h.Engine,
		master: m.master,
		log:    log,
		reg: controller.RegisterRequest{Cluster: cluster, Group: c.BrokerName, BrokerID: c.BrokerID,
			Addr: brokerAddr, HAAddr: haAddr},
		interval: c.HeartbeatInterval,
		lease:    c.Lease,
		ln:       newGate(ln),
		replOpts: ha.ReplicaOptions{
			BrokerName:  c.BrokerName,
			ID:          strconv.FormatInt(c.BrokerID, 10),
			SegmentSize: h.EngineOptions.SegmentSize,
			Logger:      log,
		},
	}
	run, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Go(func() {
		defer ln.Close()
		m.ctl.run(run)
	})
	log.Info("ha: role from the controller", "controllers", c.Controllers, "broker_id", c.BrokerID, "ha_addr", haAddr)
	if h.Metrics != nil {
		if err := m.registerMetrics(h.Metrics); err != nil {
			cancel()
			m.wg.Wait()
			return err
		}
	}
	return nil
}

// advertise is a listener's address as others dial it: an unspecified
// host is replaced by the broker's host, else by 127.0.0.1.
func advertise(a net.Addr, brokerAddr string) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		return a.String()
	}
	host = "127.0.0.1"
	if bh, _, err := net.SplitHostPort(brokerAddr); err == nil {
		if ip := net.ParseIP(bh); ip != nil && !ip.IsUnspecified() {
			host = bh
		}
	}
	return net.JoinHostPort(host, port)
}
