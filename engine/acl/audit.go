package acl

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine/hook"
)

// Protocols the counters are kept by; others count as "other".
var protocols = [...]string{"remoting", "grpc", "mqtt", "http", "other"}

func protocolIndex(p string) int {
	for i, n := range protocols[:len(protocols)-1] {
		if p == n {
			return i
		}
	}
	return len(protocols) - 1
}

// Stats counts refused requests by protocol.
type Stats struct {
	unauthenticated [len(protocols)]atomic.Int64
	denied          [len(protocols)]atomic.Int64
	auditDropped    atomic.Int64
}

// Refusals are the counts of one protocol.
type Refusals struct {
	Protocol        string
	Unauthenticated int64 // credentials refused
	Denied          int64 // actions refused
}

// Refusals returns the counts of refused requests, one per protocol, and
// how many refusals were not logged (AuditBurst).
func (a *ACL) Refusals() (by []Refusals, unlogged int64) {
	for i, p := range protocols {
		by = append(by, Refusals{Protocol: p, Unauthenticated: a.stats.unauthenticated[i].Load(), Denied: a.stats.denied[i].Load()})
	}
	return by, a.stats.auditDropped.Load()
}

// auditLimiter lets AuditBurst lines through per second.
type auditLimiter struct {
	mu     sync.Mutex
	second int64
	n      int
}

func (l *auditLimiter) allow(now time.Time) bool {
	sec := now.Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	if sec != l.second {
		l.second, l.n = sec, 0
	}
	l.n++
	return l.n <= AuditBurst
}

// refuseAuth counts and audits refused credentials and returns err.
func (a *ACL) refuseAuth(c *hook.Credentials, user string, err error) error {
	a.stats.unauthenticated[protocolIndex(c.Protocol)].Add(1)
	if !a.audit.allow(a.opts.Now()) {
		a.stats.auditDropped.Add(1)
		return err
	}
	reason := err.Error()
	var ae *hook.AuthError
	if errors.As(err, &ae) {
		reason = ae.Reason
	}
	a.opts.Logger.Warn("auth: credentials refused", "user", user, "protocol", c.Protocol, "source", addrString(c.Addr.Addr().String(), c.Addr.IsValid()), "reason", reason)
	return err
}

// refuse counts and audits a denied action and returns the denial.
func (a *ACL) refuse(ctx context.Context, p hook.Principal, act hook.Action, r hook.Resource, reason string) error {
	proto, src, valid := "", "", false
	if cl, ok := hook.FromContext(ctx); ok {
		proto, src, valid = cl.Protocol, cl.Addr.Addr().String(), cl.Addr.IsValid()
	}
	a.stats.denied[protocolIndex(proto)].Add(1)
	if a.audit.allow(a.opts.Now()) {
		a.opts.Logger.Warn("auth: request denied", "user", p.Name, "protocol", proto, "action", act.String(), "resource", r.String(), "source", addrString(src, valid), "reason", reason)
	} else {
		a.stats.auditDropped.Add(1)
	}
	return hook.Deny(reason)
}

func addrString(s string, valid bool) string {
	if !valid {
		return "unknown"
	}
	return s
}
