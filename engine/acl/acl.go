package acl

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/hook/rmqauth"
	"github.com/karmanmq/karman/engine/message"
)

// Store keeps the ACL's records; *engine.Engine and *meta.Store are
// stores (the records live in the engine's metadata).
type Store interface {
	AuthRecords() (map[string][]byte, error)
	PutAuthRecord(name string, rec []byte) error
	DeleteAuthRecord(name string) error
}

// Options configure an ACL. The zero value works.
type Options struct {
	// ClockSkew is how far a gRPC request's x-mq-date-time may be from
	// the broker's clock. Default DefaultClockSkew; negative: unchecked.
	ClockSkew time.Duration
	// Logger receives the audit of refused requests, at WARN, at most
	// AuditBurst lines per second (the others are counted). Default
	// discards.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultClockSkew is the default of Options.ClockSkew.
const DefaultClockSkew = 15 * time.Minute

// AuditBurst is how many refusals are logged per second at most.
const AuditBurst = 10

// ACL is an Authenticator and Authorizer over users and their policies:
// install it in engine.Options.Hooks, then Attach it to the open engine.
// Until then every request is refused.
//
// Checks read an immutable snapshot through an atomic pointer: they take
// no lock and allocate nothing unless they refuse. Changes (CreateUser,
// AddPolicies, ...) are serialized, written to the store, then published
// as a new snapshot.
type ACL struct {
	opts Options
	snap atomic.Pointer[snapshot]

	mu       sync.Mutex // serializes changes
	store    Store
	watchers map[int]func() // OnChange's, under mu
	nextW    int

	stats Stats
	audit auditLimiter
}

// snapshot is the compiled state at one time.
type snapshot struct {
	users map[string]*compiled
}

// compiled is a user ready for checks.
type compiled struct {
	user     User // as stored
	super    bool
	disabled bool
	byType   [hook.ResourceMQTT + 1][]rule // index 0: rules on every type
	hasMQTT  bool
	macs     sync.Pool // of the HMAC-SHA1 of the secret (rmqauth.NewMAC)
}

var (
	_ hook.Authenticator    = (*ACL)(nil)
	_ hook.Authorizer       = (*ACL)(nil)
	_ hook.FieldsUnused     = (*ACL)(nil)
	_ hook.Changing         = (*ACL)(nil)
	_ hook.PrincipalChecker = (*ACL)(nil)
)

// OnChange implements hook.Changing: fn is called after each change of
// a user or its policies is published (and after Attach), with the
// ACL's changes serialized: it must return at once.
func (a *ACL) OnChange(fn func()) (cancel func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.watchers == nil {
		a.watchers = map[int]func(){}
	}
	id := a.nextW
	a.nextW++
	a.watchers[id] = fn
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.watchers, id)
	}
}

// publishLocked makes s the snapshot checks read and tells the watchers.
func (a *ACL) publishLocked(s *snapshot) {
	a.snap.Store(s)
	for _, fn := range a.watchers {
		fn()
	}
}

// CheckPrincipal implements hook.PrincipalChecker: p's user must exist
// and be enabled. The anonymous principal is not the ACL's to refuse.
func (a *ACL) CheckPrincipal(p hook.Principal) error {
	if p.Anonymous() {
		return nil
	}
	s := a.snap.Load()
	if s == nil {
		return hook.Unauthenticated("the access-control list is not loaded yet")
	}
	switch u := s.users[p.Name]; {
	case u == nil:
		return hook.Unauthenticated("user " + p.Name + " no longer exists")
	case u.disabled:
		return hook.Unauthenticated("user " + p.Name + " is disabled")
	}
	return nil
}

// FieldsUnused implements hook.FieldsUnused: the ACL reads the access
// key, signature and content of credentials, not their raw fields.
func (*ACL) FieldsUnused() {}

// New returns an ACL with no users, not attached to a store.
func New(opts Options) *ACL {
	if opts.ClockSkew == 0 {
		opts.ClockSkew = DefaultClockSkew
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &ACL{opts: opts}
}

// Attach loads the users of st and keeps st for changes.
func (a *ACL) Attach(st Store) error {
	recs, err := st.AuthRecords()
	if err != nil {
		return fmt.Errorf("acl: load: %w", err)
	}
	users := make(map[string]*compiled, len(recs))
	for name, b := range recs {
		var u User
		if err := json.Unmarshal(b, &u); err != nil {
			return fmt.Errorf("acl: load user %q: %w", name, err)
		}
		c, err := compileUser(u)
		if err != nil {
			return fmt.Errorf("acl: load user %q: %w", name, err)
		}
		users[u.Name] = c
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.store = st
	a.publishLocked(&snapshot{users: users})
	return nil
}

func compileUser(u User) (*compiled, error) {
	if err := u.Check(); err != nil {
		return nil, err
	}
	c := &compiled{user: u, super: u.Type == Super, disabled: u.Status == Disabled}
	secret := u.Secret
	c.macs.New = func() any { return rmqauth.NewMAC(secret) }
	for _, e := range u.Policies {
		r, err := compileEntry(e)
		if err != nil {
			return nil, err
		}
		c.byType[r.typ] = append(c.byType[r.typ], r)
		if r.typ == hook.ResourceMQTT {
			c.hasMQTT = true
		}
	}
	return c, nil
}

// Authenticate implements hook.Authenticator: a remoting or gRPC request
// must be signed with its user's secret (a gRPC one also dated within
// the clock skew); the password of an MQTT client, or of an HTTP API
// caller (Basic), must be its user's secret, unless the MQTT client's
// TLS connection verified a client certificate, whose subject's common
// name is then its user. The user must exist and be
// enabled.
func (a *ACL) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	s := a.snap.Load()
	if s == nil {
		return hook.Principal{}, a.refuseAuth(c, "", hook.Unauthenticated("the access-control list is not loaded yet"))
	}
	if c.Protocol == "mqtt" && c.Certificate != nil {
		return a.authenticateCert(s, c)
	}
	if c.Protocol == "mqtt" || c.Protocol == "http" {
		u := s.users[c.Username]
		if c.Username == "" {
			return hook.Principal{}, a.refuseAuth(c, "", hook.Unauthenticated("no username"))
		}
		// Compare even for an unknown user, so that timing tells nothing.
		secret := ""
		if u != nil {
			secret = u.user.Secret
		}
		ok := subtle.ConstantTimeCompare([]byte(secret), c.Password) == 1
		switch {
		case u == nil, !ok:
			return hook.Principal{}, a.refuseAuth(c, c.Username, hook.Unauthenticated("bad username or password"))
		case u.disabled:
			return hook.Principal{}, a.refuseAuth(c, c.Username, hook.Unauthenticated("user "+c.Username+" is disabled"))
		}
		return hook.Principal{Name: u.user.Name}, nil
	}
	if c.AccessKey == "" {
		return hook.Principal{}, a.refuseAuth(c, "", hook.Unauthenticated("no credentials: the request carries no AccessKey and signature"))
	}
	u := s.users[c.AccessKey]
	if u == nil {
		return hook.Principal{}, a.refuseAuth(c, c.AccessKey, hook.Unauthenticated("unknown access key "+c.AccessKey))
	}
	if u.disabled {
		return hook.Principal{}, a.refuseAuth(c, c.AccessKey, hook.Unauthenticated("user "+c.AccessKey+" is disabled"))
	}
	if c.Algorithm == rmqauth.AlgorithmGRPC && a.opts.ClockSkew > 0 {
		if err := a.checkDate(string(c.Content)); err != nil {
			return hook.Principal{}, a.refuseAuth(c, c.AccessKey, err)
		}
	}
	m := u.macs.Get().(*rmqauth.MAC)
	err := rmqauth.VerifyMAC(c, m)
	u.macs.Put(m)
	if err != nil {
		return hook.Principal{}, a.refuseAuth(c, c.AccessKey, err)
	}
	return hook.Principal{Name: u.user.Name}, nil
}

// authenticateCert authenticates an MQTT client by the certificate its
// TLS connection verified: the subject's common name names the user; a
// username, if given, must be that name; a password is not checked.
func (a *ACL) authenticateCert(s *snapshot, c *hook.Credentials) (hook.Principal, error) {
	name := c.Certificate.Subject.CommonName
	switch u := s.users[name]; {
	case name == "":
		return hook.Principal{}, a.refuseAuth(c, c.Username, hook.Unauthenticated("the client certificate's subject has no common name"))
	case c.Username != "" && c.Username != name:
		return hook.Principal{}, a.refuseAuth(c, c.Username, hook.Unauthenticated("username "+c.Username+" is not the client certificate's common name "+name))
	case u == nil:
		return hook.Principal{}, a.refuseAuth(c, name, hook.Unauthenticated("the client certificate's common name "+name+" is no user"))
	case u.disabled:
		return hook.Principal{}, a.refuseAuth(c, name, hook.Unauthenticated("user "+name+" is disabled"))
	default:
		return hook.Principal{Name: u.user.Name}, nil
	}
}

// dateLayout is the layout of x-mq-date-time.
const dateLayout = "20060102T150405Z"

func (a *ACL) checkDate(v string) error {
	t, err := time.Parse(dateLayout, v)
	if err != nil {
		return hook.Unauthenticated(fmt.Sprintf("%s %q is not a date-time like 20210309T195445Z", rmqauth.HeaderDateTime, v))
	}
	d := a.opts.Now().Sub(t)
	if d < 0 {
		d = -d
	}
	if d > a.opts.ClockSkew {
		return hook.Unauthenticated(fmt.Sprintf("%s %s is %s off the broker's clock, more than the %s allowed", rmqauth.HeaderDateTime, v, d.Round(time.Second), a.opts.ClockSkew))
	}
	return nil
}

// groupOfTopic returns the group resource of a retry or dead-letter topic
// (%RETRY%G, %DLQ%G, with or without a namespace: ns%%RETRY%G is not how
// RocketMQ names them, %RETRY%ns%G is), as RocketMQ's ACL 2.0 judges an
// action on them: a consumer group's own topics are the group's. Other
// resources are returned as they are.
func groupOfTopic(r hook.Resource) hook.Resource {
	if r.Type != hook.ResourceTopic {
		return r
	}
	for _, prefix := range [...]string{message.RetryTopicPrefix, message.DLQTopicPrefix} {
		if g, ok := strings.CutPrefix(r.Name, prefix); ok && g != "" {
			return hook.Group(g)
		}
	}
	return r
}

// Authorize implements hook.Authorizer. A super user may do everything.
// A normal user's entries matching the resource (by type and name), the
// action and the client's address (from the hook.Client in ctx) decide:
// a Deny wins, else an Allow allows, else the action is denied. The name
// "*" (hook.AllTopics) is every name: only an Allow on all of them
// (TYPE:* or *) allows, and a Deny on any of them refuses. An mqtt
// resource is judged by the user's mqtt entries; a user with none is
// allowed (the RocketMQ topic the MQTT topic maps to is checked too). A
// retry or dead-letter topic is judged as its consumer group.
func (a *ACL) Authorize(ctx context.Context, p hook.Principal, act hook.Action, r hook.Resource) error {
	s := a.snap.Load()
	if s == nil {
		return a.refuse(ctx, p, act, r, "the access-control list is not loaded yet")
	}
	u := s.users[p.Name]
	r = groupOfTopic(r)
	switch {
	case u == nil:
		return a.refuse(ctx, p, act, r, "no such user")
	case u.disabled:
		return a.refuse(ctx, p, act, r, "user disabled")
	case u.super:
		return nil
	}
	var addr netip.Addr
	var clientID string
	if cl, ok := hook.FromContext(ctx); ok {
		addr, clientID = cl.Addr.Addr().Unmap(), cl.ID
	}
	bit := actionBits(1) << act
	allowed := false
	if r.Type == hook.ResourceMQTT {
		if !u.hasMQTT {
			return nil
		}
		for i := range u.byType[hook.ResourceMQTT] {
			rl := &u.byType[hook.ResourceMQTT][i]
			if rl.actions&bit == 0 || !mqttCovers(rl.mqtt, r.Name, u.user.Name, clientID) || !rl.from(addr) {
				continue
			}
			if rl.deny {
				return a.refuse(ctx, p, act, r, "a Deny policy matches")
			}
			allowed = true
		}
	} else if int(r.Type) < len(u.byType) {
		// "*" is every name: an Allow must cover them all, and a Deny
		// of any of them refuses.
		every := r.Name == "*"
		for _, rules := range [2][]rule{u.byType[r.Type], u.byType[0]} {
			for i := range rules {
				rl := &rules[i]
				if rl.actions&bit == 0 || !rl.from(addr) {
					continue
				}
				if every {
					if !rl.deny && rl.name.kind != matchAny {
						continue
					}
				} else if !rl.name.match(r.Name) {
					continue
				}
				if rl.deny {
					return a.refuse(ctx, p, act, r, "a Deny policy matches")
				}
				allowed = true
			}
		}
	}
	if !allowed {
		return a.refuse(ctx, p, act, r, "no policy allows it")
	}
	return nil
}

// from reports whether an entry applies to a client at addr. An Allow
// with sources needs a known address in them; a Deny with sources also
// applies when the address is unknown.
func (rl *rule) from(addr netip.Addr) bool {
	if len(rl.sources) == 0 {
		return true
	}
	if !addr.IsValid() {
		return rl.deny
	}
	for _, p := range rl.sources {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Users returns the users whose name contains filter ("" for all),
// sorted by name, secrets included.
func (a *ACL) Users(filter string) []User {
	s := a.snap.Load()
	if s == nil {
		return nil
	}
	var out []User
	for name, c := range s.users {
		if strings.Contains(name, filter) {
			out = append(out, c.user)
		}
	}
	slices.SortFunc(out, func(x, y User) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// User returns the named user.
func (a *ACL) User(name string) (User, error) {
	s := a.snap.Load()
	if s == nil {
		return User{}, ErrNotReady
	}
	c := s.users[name]
	if c == nil {
		return User{}, fmt.Errorf("%w: %s", ErrUserNotFound, name)
	}
	return c.user, nil
}

// HasSuper reports whether an enabled super user exists.
func (a *ACL) HasSuper() bool { return a.snap.Load().hasSuper() }

func (s *snapshot) hasSuper() bool {
	if s == nil {
		return false
	}
	for _, c := range s.users {
		if c.super && !c.disabled {
			return true
		}
	}
	return false
}

// change applies fn to a copy of the named user (nil when it does not
// exist; fn returns nil to delete it), writes the result and publishes
// a new snapshot.
func (a *ACL) change(name string, fn func(u *User) (*User, error)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.snap.Load()
	if s == nil || a.store == nil {
		return ErrNotReady
	}
	var cur *User
	if c := s.users[name]; c != nil {
		u := c.user
		u.Policies = slices.Clone(u.Policies)
		cur = &u
	}
	next, err := fn(cur)
	if err != nil {
		return err
	}
	users := make(map[string]*compiled, len(s.users)+1)
	for k, v := range s.users {
		users[k] = v
	}
	if next == nil {
		delete(users, name)
		if s.hasSuper() && !(&snapshot{users: users}).hasSuper() {
			return fmt.Errorf("%w (%s)", ErrLastSuper, name)
		}
		if err := a.store.DeleteAuthRecord(name); err != nil {
			return fmt.Errorf("acl: delete user %s: %w", name, err)
		}
	} else {
		c, err := compileUser(*next)
		if err != nil {
			return err
		}
		users[name] = c
		if s.hasSuper() && !(&snapshot{users: users}).hasSuper() {
			return fmt.Errorf("%w (%s)", ErrLastSuper, name)
		}
		b, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("acl: encode user %s: %w", name, err)
		}
		if err := a.store.PutAuthRecord(name, b); err != nil {
			return fmt.Errorf("acl: write user %s: %w", name, err)
		}
	}
	a.publishLocked(&snapshot{users: users})
	return nil
}

// CreateUser adds u (type Normal and status enable by default); a user
// of its name must not exist.
func (a *ACL) CreateUser(u User) error {
	if err := fillUser(&u); err != nil {
		return err
	}
	return a.change(u.Name, func(cur *User) (*User, error) {
		if cur != nil {
			return nil, fmt.Errorf("%w: %s", ErrUserExists, u.Name)
		}
		return &u, nil
	})
}

func fillUser(u *User) error {
	t, err := ParseUserType(string(u.Type))
	if err != nil {
		return err
	}
	st, err := ParseUserStatus(string(u.Status))
	if err != nil {
		return err
	}
	u.Type, u.Status = t, st
	return u.Check()
}

// UserChange is what UpdateUser changes: the fields set.
type UserChange struct {
	Secret string
	Type   UserType
	Status UserStatus
}

// UpdateUser changes the named user's secret, type or status.
func (a *ACL) UpdateUser(name string, ch UserChange) error {
	return a.change(name, func(cur *User) (*User, error) {
		if cur == nil {
			return nil, fmt.Errorf("%w: %s", ErrUserNotFound, name)
		}
		if ch.Secret != "" {
			cur.Secret = ch.Secret
		}
		if ch.Type != "" {
			cur.Type = ch.Type
		}
		if ch.Status != "" {
			cur.Status = ch.Status
		}
		if err := fillUser(cur); err != nil {
			return nil, err
		}
		return cur, nil
	})
}

// DeleteUser deletes the named user and its policies.
func (a *ACL) DeleteUser(name string) error {
	return a.change(name, func(cur *User) (*User, error) {
		if cur == nil {
			return nil, fmt.Errorf("%w: %s", ErrUserNotFound, name)
		}
		return nil, nil
	})
}

// AddPolicies adds entries to the named user's policies: an entry on a
// resource the user has an entry for replaces it (as RocketMQ's ACL 2.0
// updates a policy), others are appended.
func (a *ACL) AddPolicies(name string, entries []Entry) error {
	norm := make([]Entry, 0, len(entries))
	for _, e := range entries {
		n, err := e.Normalize()
		if err != nil {
			return err
		}
		norm = append(norm, n)
	}
	return a.change(name, func(cur *User) (*User, error) {
		if cur == nil {
			return nil, fmt.Errorf("%w: %s", ErrUserNotFound, name)
		}
		for _, e := range norm {
			i := slices.IndexFunc(cur.Policies, func(p Entry) bool { return p.Resource == e.Resource })
			if i >= 0 {
				cur.Policies[i] = e
			} else {
				cur.Policies = append(cur.Policies, e)
			}
		}
		return cur, nil
	})
}

// DeletePolicies deletes the named user's entries on resource, or all
// of them when resource is "". Deleting what is not there is no error.
func (a *ACL) DeletePolicies(name, resource string) error {
	return a.change(name, func(cur *User) (*User, error) {
		if cur == nil {
			return nil, fmt.Errorf("%w: %s", ErrUserNotFound, name)
		}
		if resource == "" {
			cur.Policies = nil
		} else {
			cur.Policies = slices.DeleteFunc(cur.Policies, func(p Entry) bool { return p.Resource == resource })
		}
		return cur, nil
	})
}
