package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/acl"
	karman "github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
)

// ID and Name (the prefix of its flags) of the module.
const (
	ID   karman.ModuleID = karman.AuthID
	Name                 = "auth"
)

// Info describes the module.
var Info = karman.ModuleInfo{
	ID:   ID,
	New:  func() karman.Module { return &Module{} },
	Name: Name,
}

func init() { karman.RegisterModule(Info) }

// Interface guards.
var (
	_ karman.FlagBinder       = (*Module)(nil)
	_ karman.Provisioner      = (*Module)(nil)
	_ karman.Validator        = (*Module)(nil)
	_ karman.EngineConfigurer = (*Module)(nil)
	_ karman.Starter          = (*Module)(nil)
)

// ErrNoSuperUser: --auth with no enabled super user to administer it.
var ErrNoSuperUser = errors.New("auth: --auth needs a super user")

// Module installs the ACL when --auth is on.
type Module struct {
	on         bool
	initUser   string
	initSecret string
	clockSkew  time.Duration

	data   string
	logger *slog.Logger
	acl    *acl.ACL
}

// KarmanModule implements karman.Module.
func (*Module) KarmanModule() karman.ModuleInfo { return Info }

// BindFlags adds --auth and its settings.
func (m *Module) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&m.on, Name, false, "authenticate and authorize every request with the access-control list (users and policies, RocketMQ ACL 2.0)")
	fs.StringVar(&m.initUser, Name+"-init-user", "", "with --auth: create this super user at start-up unless it exists")
	fs.StringVar(&m.initSecret, Name+"-init-secret", "", "the secret of --auth-init-user (better set as KARMAN_AUTH_INIT_SECRET)")
	config.MarkSecret(fs, Name+"-init-secret")
	fs.DurationVar(&m.clockSkew, Name+"-clock-skew", acl.DefaultClockSkew, "how far a gRPC request's x-mq-date-time may be from this server's clock")
}

// ACL returns the installed ACL, nil without --auth.
func (m *Module) ACL() *acl.ACL { return m.acl }

// Provision makes the ACL.
func (m *Module) Provision(ctx karman.ProvisionContext) error {
	m.data, m.logger = ctx.Config.Data, ctx.Logger
	if !m.on {
		return nil
	}
	m.acl = acl.New(acl.Options{ClockSkew: m.clockSkew, Logger: ctx.Logger})
	return nil
}

// Validate checks the settings and, with --auth, that there will be a
// super user: the initial one, or one stored in the data directory.
func (m *Module) Validate() error {
	if !m.on {
		if m.initUser != "" || m.initSecret != "" {
			return fmt.Errorf("auth: --%s-init-user and --%s-init-secret need --%s", Name, Name, Name)
		}
		return nil
	}
	if m.clockSkew <= 0 {
		return fmt.Errorf("auth: --%s-clock-skew %s must be positive", Name, m.clockSkew)
	}
	if (m.initUser == "") != (m.initSecret == "") {
		return fmt.Errorf("auth: --%s-init-user and --%s-init-secret go together", Name, Name)
	}
	if m.initUser != "" {
		u := acl.User{Name: m.initUser, Secret: m.initSecret, Type: acl.Super, Status: acl.Enabled}
		if err := u.Check(); err != nil {
			return fmt.Errorf("auth: --%s-init-user: %w", Name, err)
		}
		return nil
	}
	stored, closer, err := acl.OpenDir(m.data, false)
	if err != nil {
		return fmt.Errorf("auth: read the users of %s: %w", m.data, err)
	}
	defer closer.Close()
	if !stored.HasSuper() {
		return fmt.Errorf("%w: %s holds none; give --%s-init-user and --%s-init-secret (or KARMAN_AUTH_INIT_USER and KARMAN_AUTH_INIT_SECRET), or create one with the server stopped: karman admin user create NAME --secret S --type super --data %s", ErrNoSuperUser, m.data, Name, Name, m.data)
	}
	return nil
}

// ConfigureEngine installs the ACL in the engine's hooks.
func (m *Module) ConfigureEngine(o *engine.Options, _ map[string]net.Addr) error {
	if m.acl != nil {
		o.Hooks = append(o.Hooks, m.acl)
	}
	return nil
}

// Start loads the ACL from the open engine, creates the initial super
// user and registers the metrics.
func (m *Module) Start(_ context.Context, h karman.Host) error {
	if m.acl == nil {
		return nil
	}
	if err := m.acl.Attach(h.Engine); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if m.initUser != "" {
		err := m.acl.CreateUser(acl.User{Name: m.initUser, Secret: m.initSecret, Type: acl.Super})
		switch {
		case err == nil:
			h.Logger.Info("auth: created the initial super user", "user", m.initUser)
		case errors.Is(err, acl.ErrUserExists):
			h.Logger.Info("auth: the initial user exists and is left as it is", "user", m.initUser)
		default:
			return fmt.Errorf("auth: --%s-init-user: %w", Name, err)
		}
	}
	if !m.acl.HasSuper() {
		return fmt.Errorf("%w: the data directory holds none", ErrNoSuperUser)
	}
	if h.Metrics != nil {
		if err := h.Metrics.Register(collector{m.acl}); err != nil {
			return fmt.Errorf("auth: register metrics: %w", err)
		}
	}
	h.Logger.Info("auth: on", "users", len(m.acl.Users("")))
	return nil
}

var (
	refusedDesc = prometheus.NewDesc("karman_auth_refused_total",
		"Requests refused by the access-control list, by protocol and kind (unauthenticated: credentials refused; denied: action refused).",
		[]string{"protocol", "kind"}, nil)
	unloggedDesc = prometheus.NewDesc("karman_auth_audit_unlogged_total",
		"Refusals left out of the audit log by its rate limit.", nil, nil)
)

// collector serves the ACL's refusal counts.
type collector struct{ a *acl.ACL }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- refusedDesc
	ch <- unloggedDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	by, unlogged := c.a.Refusals()
	for _, r := range by {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(r.Unauthenticated), r.Protocol, "unauthenticated")
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(r.Denied), r.Protocol, "denied")
	}
	ch <- prometheus.MustNewConstMetric(unloggedDesc, prometheus.CounterValue, float64(unlogged))
}
