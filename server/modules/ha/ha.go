package ha

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/karmanmq/karman/cluster/ha"
	"github.com/karmanmq/karman/engine"
	karman "github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/modules/broker"
)

// ID and Name of the module; its flags are --ha-*.
const (
	ID   karman.ModuleID = "cluster.ha"
	Name                 = "ha"
	// DefaultAddr is where a master serves its replicas: RocketMQ's
	// remoting port + 1.
	DefaultAddr = ":10912"
)

// BrokerID is the remoting broker module, whose group name the module
// uses.
const BrokerID karman.ModuleID = "frontend.remoting"

// Info describes the module.
var Info = karman.ModuleInfo{
	ID:   ID,
	New:  func() karman.Module { return New() },
	Name: Name,
	// Before the broker, so that a master's replicas count from its
	// first send.
	Deps: []karman.Dependency{{ID: karman.PluginsID, Optional: true}},
}

func init() { karman.RegisterModule(Info) }

var (
	_ karman.FlagBinder          = (*Module)(nil)
	_ karman.Validator           = (*Module)(nil)
	_ karman.Provisioner         = (*Module)(nil)
	_ karman.EngineConfigurer    = (*Module)(nil)
	_ karman.Starter             = (*Module)(nil)
	_ karman.Stopper             = (*Module)(nil)
	_ karman.StatusReporter      = (*Module)(nil)
	_ karman.RoleReporter        = (*Module)(nil)
	_ karman.RuntimeInfoReporter = (*Module)(nil)
)

// Roles of --ha-role.
const (
	RoleNone    = ""
	RoleMaster  = "master"
	RoleReplica = "replica"
)

// Config holds the module's settings.
type Config struct {
	Role        string
	Addr        string
	Master      string
	Replication string // "async" or "sync"
	MinInSync   int
	AckTimeout  time.Duration
	BrokerName  string // of the group; from --broker-name

	// Controller mode (--ha-controller): the role comes from the
	// controller quorum.
	Controllers       []string
	BrokerID          int64
	AdvertiseAddr     string
	HeartbeatInterval time.Duration
	Lease             time.Duration
	Cluster           string // from --broker-cluster
	BrokerAddr        string // from --broker-advertise-addr, when set
}

// Module is a running cluster.ha.
type Module struct {
	Config Config

	master  *ha.Master
	replica *ha.Replica
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	addr    net.Addr
	ctl     *controlled
	running atomic.Bool // Start set master or replica
	eng     *engine.Engine
	// replicaID is the id a --ha-role replica gives its master and
	// registers with at the name servers.
	replicaID string
}

// Status is what the module reports in the API's overview.
type Status struct {
	Role string `json:"role"`
	// Master is a replica's master (--ha-master); Lag the bytes of the
	// master's log it does not hold.
	Master string `json:"master,omitempty"`
	Lag    *int64 `json:"lagBytes,omitempty"`
	// Replicas are a master's replicas.
	Replicas []ReplicaStatus `json:"replicas,omitempty"`
	// Epoch is the group's master epoch as this broker knows it; InSync
	// the group's in-sync set (the controller's record, or a master's
	// own count, "0" being the master).
	Epoch  int64    `json:"epoch,omitempty"`
	InSync []string `json:"inSync,omitempty"`
}

// ReplicaStatus is a replica as its master sees it.
type ReplicaStatus struct {
	ID       string `json:"id"`
	Addr     string `json:"addr"`
	LagBytes int64  `json:"lagBytes"`
	InSync   bool   `json:"inSync"`
	Since    int64  `json:"since"` // ms since the epoch, when it connected
}

// ReplicationRole is "master", "replica", or "" without replication:
// --ha-role, or with --ha-controller the role the controller gave.
func (m *Module) ReplicationRole() string {
	if m.ctl != nil {
		return m.ctl.role()
	}
	return m.Config.Role
}

// Status reports the role and the replication's lag; nil without a role.
func (m *Module) Status() any {
	if m.ctl != nil {
		st := Status{Role: m.ctl.role(), Epoch: m.masterEpoch(), InSync: m.inSyncSet()}
		if lag, ok := m.ctl.replicaLag(); ok {
			st.Lag = &lag
			if g, ok := m.ctl.group(); ok {
				if mm, ok := g.Master(); ok {
					st.Master = mm.HAAddr
				}
			}
		}
		if st.Role == RoleMaster && m.master != nil {
			st.Replicas = m.replicaStatuses()
		}
		return st
	}
	if m.Config.Role == RoleNone {
		return nil
	}
	st := Status{Role: m.Config.Role}
	if !m.running.Load() {
		return st
	}
	st.Epoch, st.InSync = m.masterEpoch(), m.inSyncSet()
	if m.master != nil {
		st.Replicas = m.replicaStatuses()
	}
	if m.replica != nil {
		lag := m.replica.Lag()
		st.Master, st.Lag = m.Config.Master, &lag
	}
	return st
}

// replicaStatuses lists a master's replicas (never nil).
func (m *Module) replicaStatuses() []ReplicaStatus {
	out := []ReplicaStatus{}
	for _, r := range m.master.Replicas() {
		out = append(out, ReplicaStatus{ID: r.ID, Addr: r.Addr, LagBytes: r.Lag, InSync: r.InSync, Since: r.Since.UnixMilli()})
	}
	return out
}

// New returns the module with its defaults.
func New() *Module {
	return &Module{Config: Config{Addr: DefaultAddr, Replication: "async", MinInSync: 2, AckTimeout: 3 * time.Second, HeartbeatInterval: time.Second, Lease: 3 * time.Second}}
}

// KarmanModule describes the module.
func (*Module) KarmanModule() karman.ModuleInfo { return Info }

// BindFlags adds the --ha-* flags.
func (m *Module) BindFlags(fs *pflag.FlagSet) {
	c := &m.Config
	fs.StringVar(&c.Role, Name+"-role", c.Role, `"master" or "replica" of a broker group; empty: no replication`)
	fs.StringVar(&c.Addr, Name+"-addr", c.Addr, "where a master serves its replicas")
	fs.StringVar(&c.Master, Name+"-master", c.Master, "the master's --ha-addr, host:port (replica)")
	fs.StringVar(&c.Replication, Name+"-replication", c.Replication, `"async" or "sync": sync sends wait for --ha-min-insync-replicas members`)
	fs.IntVar(&c.MinInSync, Name+"-min-insync-replicas", c.MinInSync, "members, the master included, that hold a message before a sync send is acknowledged")
	fs.DurationVar(&c.AckTimeout, Name+"-ack-timeout", c.AckTimeout, "how long a sync send waits for the replicas")
	fs.StringSliceVar(&c.Controllers, Name+"-controller", c.Controllers, "controller quorum request addresses, host:port separated by commas: the broker's role comes from the controller (instead of --ha-role)")
	fs.Int64Var(&c.BrokerID, Name+"-broker-id", c.BrokerID, "this broker's id in its group (1 or more): required with --ha-controller; a replica registers with the name servers under it (default: derived from its address)")
	fs.StringVar(&c.AdvertiseAddr, Name+"-advertise-addr", c.AdvertiseAddr, "host:port replicas dial to reach this broker's --ha-addr, with --ha-controller; default: --ha-addr's, the broker's host when unspecified")
	fs.DurationVar(&c.HeartbeatInterval, Name+"-heartbeat-interval", c.HeartbeatInterval, "how often the broker sends the controller a heartbeat, with --ha-controller")
	fs.DurationVar(&c.Lease, Name+"-controller-lease", c.Lease, "a master with no heartbeat answered for this long stops taking writes; keep it below the controller's --broker-heartbeat-timeout less two heartbeat intervals")
}

// Validate checks the settings.
func (m *Module) Validate() error {
	c := &m.Config
	if len(c.Controllers) > 0 {
		return m.validateControlled()
	}
	if c.BrokerID < 0 {
		return fmt.Errorf("ha: --%s-broker-id %d: want 1 or more", Name, c.BrokerID)
	}
	switch c.Role {
	case RoleNone:
		return nil
	case RoleMaster, RoleReplica:
	default:
		return fmt.Errorf("ha: --%s-role %q: want master or replica", Name, c.Role)
	}
	if c.Replication != "async" && c.Replication != "sync" {
		return fmt.Errorf("ha: --%s-replication %q: want async or sync", Name, c.Replication)
	}
	if c.MinInSync < 1 {
		return fmt.Errorf("ha: --%s-min-insync-replicas %d: at least 1 (the master)", Name, c.MinInSync)
	}
	if c.AckTimeout <= 0 {
		return fmt.Errorf("ha: --%s-ack-timeout %s: must be positive", Name, c.AckTimeout)
	}
	if c.Role == RoleReplica && c.Master == "" {
		return fmt.Errorf("ha: a replica needs --%s-master, the master's --%s-addr", Name, Name)
	}
	if c.Role == RoleMaster && c.Addr == "" {
		return fmt.Errorf("ha: a master needs --%s-addr", Name)
	}
	return nil
}

// Provision reads the group's name and cluster and the broker's
// advertised address from the broker's flags.
func (m *Module) Provision(pc karman.ProvisionContext) error {
	m.Config.BrokerName = "broker-a"
	if pc.Flag == nil {
		return nil
	}
	if v, ok := pc.Flag("broker-name"); ok && v != "" {
		m.Config.BrokerName = v
	}
	if v, ok := pc.Flag("broker-cluster"); ok {
		m.Config.Cluster = v
	}
	if v, ok := pc.Flag("broker-advertise-addr"); ok {
		m.Config.BrokerAddr = v
	}
	return nil
}

// ConfigureEngine opens a replica's engine in replica mode and gives a
// master's engine the replication's Replicator.
func (m *Module) ConfigureEngine(o *engine.Options, _ map[string]net.Addr) error {
	c := &m.Config
	if len(c.Controllers) > 0 {
		// Replica until the controller says otherwise; the Replicator
		// counts acknowledgements once promoted.
		o.Replica = true
	}
	switch {
	case c.Role == RoleReplica:
		o.Replica = true
	case c.Role == RoleMaster || len(c.Controllers) > 0:
		m.master = ha.NewMaster(ha.MasterOptions{
			BrokerName:  c.BrokerName,
			SegmentSize: o.SegmentSize,
			Sync:        c.Replication == "sync",
			MinInSync:   c.MinInSync,
			AckTimeout:  c.AckTimeout,
			Logger:      o.Logger,
		})
		o.Replicator = m.master
	}
	return nil
}

// Start serves the replicas (master) or follows the master (replica).
func (m *Module) Start(ctx context.Context, h karman.Host) error {
	c := &m.Config
	m.eng = h.Engine
	if len(c.Controllers) > 0 {
		return m.startControlled(h)
	}
	if c.Role == RoleNone {
		return nil
	}
	run, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	switch c.Role {
	case RoleMaster:
		// Without a controller to number epochs, each start of a master
		// begins the next one: a former replica started as master (a
		// failover by hand) writes in an epoch its old master never had,
		// which that one, returning as a replica, cuts back to.
		next := uint32(1)
		if eps := h.Engine.Epochs(); len(eps) > 0 {
			next = eps[len(eps)-1].Epoch + 1
		}
		if err := h.Engine.Promote(ctx, next); err != nil {
			cancel()
			return fmt.Errorf("ha: start epoch %d: %w", next, err)
		}
		ln, err := net.Listen("tcp", c.Addr)
		if err != nil {
			cancel()
			return fmt.Errorf("ha: listen on --%s-addr: %w", Name, err)
		}
		m.addr = ln.Addr()
		h.Logger.Info("ha: serving replicas", "addr", ln.Addr().String(), "replication", c.Replication, "min_insync_replicas", c.MinInSync)
		m.wg.Go(func() {
			if err := m.master.Serve(run, ln, h.Engine); err != nil {
				h.Logger.Error("ha: serving replicas stopped", "err", err)
			}
		})
	case RoleReplica:
		m.replicaID = fmt.Sprint(h.Addrs["broker"])
		if adv, err := broker.Advertise(h.Addrs["broker"], c.BrokerAddr); err == nil {
			m.replicaID = strconv.FormatInt(broker.ReplicaID(c.BrokerID, adv), 10)
		}
		m.replica = ha.NewReplica(h.Engine, ha.ReplicaOptions{
			BrokerName:  c.BrokerName,
			ID:          m.replicaID,
			SegmentSize: h.EngineOptions.SegmentSize,
			Logger:      h.Logger,
		})
		m.wg.Go(func() { m.replica.Run(run, func() string { return c.Master }) })
	}
	m.running.Store(true)
	if h.Metrics != nil {
		if err := m.registerMetrics(h.Metrics); err != nil {
			cancel()
			m.wg.Wait()
			return err
		}
	}
	return nil
}

// Addr returns where a master serves its replicas, once started.
func (m *Module) Addr() net.Addr { return m.addr }

// Stop ends replication.
func (m *Module) Stop(ctx context.Context) error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.Join(errors.New("ha: replication did not stop in time"), ctx.Err())
	}
}

func (m *Module) registerMetrics(r prometheus.Registerer) error {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return r.Register(collector{m: m,
		lag:         d("karman_replication_lag_bytes", "bytes of the master's commit log a replica does not hold, by replica (on a master) or of this replica", "replica"),
		insync:      d("karman_replication_in_sync", "1 while a replica counts as in sync, by replica (master)", "replica"),
		master:      d("karman_ha_master", "1 while this broker is its group's master, 0 while it is a replica"),
		epoch:       d("karman_ha_master_epoch", "the group's master epoch as this broker knows it"),
		insyncSize:  d("karman_ha_in_sync_members", "members of the group's in-sync set, the master included (master, or the controller's record)"),
		replicaLag:  d("karman_ha_replica_lag_bytes", "bytes of this master's commit log each replica does not hold, by replica id", "replica"),
		replicaSecs: d("karman_ha_replica_lag_seconds", "how long each replica has not held this master's whole log, by replica id; 0 while it does", "replica"),
		replicaIn:   d("karman_ha_replica_in_sync", "1 while a replica counts as in sync, by replica id (master)", "replica"),
		ownLag:      d("karman_ha_lag_bytes", "bytes of the master's commit log this replica does not hold"),
		promotions:  d("karman_ha_promotions_total", "times the controller made this broker its group's master"),
		demotions:   d("karman_ha_demotions_total", "times this broker stopped being master: another was elected, the controller fenced it, or its lease ran out"),
	})
}

type collector struct {
	m                                  *Module
	lag, insync                        *prometheus.Desc
	master, epoch, insyncSize          *prometheus.Desc
	replicaLag, replicaSecs, replicaIn *prometheus.Desc
	ownLag, promotions, demotions      *prometheus.Desc
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lag, c.insync, c.master, c.epoch, c.insyncSize, c.replicaLag, c.replicaSecs, c.replicaIn, c.ownLag, c.promotions, c.demotions} {
		ch <- d
	}
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	role := m.ReplicationRole()
	if role == RoleNone {
		return
	}
	if m.master != nil {
		for _, r := range m.master.Replicas() {
			ch <- gauge(c.lag, float64(r.Lag), r.ID)
			ch <- gauge(c.insync, bit(r.InSync), r.ID)
		}
	}
	if m.replica != nil {
		ch <- gauge(c.lag, float64(m.replica.Lag()), "self")
	}
	if m.ctl != nil {
		if lag, ok := m.ctl.replicaLag(); ok {
			ch <- gauge(c.lag, float64(lag), "self")
		}
		ch <- prometheus.MustNewConstMetric(c.promotions, prometheus.CounterValue, float64(m.ctl.promotions.Load()))
		ch <- prometheus.MustNewConstMetric(c.demotions, prometheus.CounterValue, float64(m.ctl.demotions.Load()))
	}
	ch <- gauge(c.master, bit(role == RoleMaster))
	ch <- gauge(c.epoch, float64(m.masterEpoch()))
	if set := m.inSyncSet(); set != nil {
		ch <- gauge(c.insyncSize, float64(len(set)))
	}
	for _, r := range m.replicaLags() {
		ch <- gauge(c.replicaLag, float64(r.Bytes), r.ID)
		ch <- gauge(c.replicaSecs, r.Behind.Seconds(), r.ID)
		ch <- gauge(c.replicaIn, bit(r.InSync), r.ID)
	}
	if role == RoleReplica {
		if lag, ok := m.ownLag(); ok {
			ch <- gauge(c.ownLag, float64(lag))
		}
	}
}
