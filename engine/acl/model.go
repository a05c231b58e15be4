package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/karmanmq/karman/engine/hook"
)

// Errors of the package, wrapped with what was at fault.
var (
	// ErrInvalid: a user or policy entry that does not parse or check.
	ErrInvalid = errors.New("acl: invalid")
	// ErrUserNotFound: no user of that name.
	ErrUserNotFound = errors.New("acl: user not found")
	// ErrUserExists: a user of that name already exists.
	ErrUserExists = errors.New("acl: user already exists")
	// ErrNotReady: the ACL has no store attached yet (Attach).
	ErrNotReady = errors.New("acl: not attached to a store")
	// ErrLastSuper: a change would leave no enabled super user, and so
	// nobody to administer the ACL.
	ErrLastSuper = errors.New("acl: the last enabled super user cannot be deleted, disabled or demoted")
)

// UserType is a user's kind. A super user may do everything; a normal
// user what its policies allow.
type UserType string

// User types, spelled as RocketMQ's ACL 2.0 spells them.
const (
	Normal UserType = "Normal"
	Super  UserType = "Super"
)

// UserStatus says whether a user may connect.
type UserStatus string

// User statuses.
const (
	Enabled  UserStatus = "enable"
	Disabled UserStatus = "disable"
)

// Decision is what a matching policy entry decides.
type Decision string

// Decisions. Deny wins over Allow.
const (
	Allow Decision = "Allow"
	Deny  Decision = "Deny"
)

// User is one identity: its name is its access key (RocketMQ clients)
// and its MQTT username; its secret signs its requests (the HMAC
// schemes need the secret itself, so it is stored as given) and is its
// MQTT password.
type User struct {
	Name     string     `json:"name"`
	Secret   string     `json:"secret"`
	Type     UserType   `json:"type"`
	Status   UserStatus `json:"status"`
	Policies []Entry    `json:"policies,omitempty"`
}

// Entry is one policy entry of a user: a decision on some actions over
// the resources a pattern matches, from optional source addresses.
type Entry struct {
	// Resource is a pattern: "Topic:NAME", "Group:NAME", "Cluster:NAME"
	// where NAME is literal, a prefix ending in "*" or "*" alone; "*"
	// for every resource; or "mqtt:FILTER", an MQTT topic filter with
	// + and # wildcards and %u (username) and %c (client id)
	// placeholders.
	Resource string `json:"resource"`
	// Actions are Pub, Sub, Create, Update, Delete, Get, List or All.
	Actions []string `json:"actions"`
	// SourceIPs, when set, limit the entry to clients whose address is
	// in one of these addresses or CIDR ranges.
	SourceIPs []string `json:"sourceIps,omitempty"`
	Decision  Decision `json:"decision"`
}

// ParseUserType parses a user type, case-insensitively.
func ParseUserType(s string) (UserType, error) {
	switch strings.ToLower(s) {
	case "normal", "":
		return Normal, nil
	case "super":
		return Super, nil
	}
	return "", fmt.Errorf("%w: user type %q (want Normal or Super)", ErrInvalid, s)
}

// ParseUserStatus parses a user status: enable(d) or disable(d).
func ParseUserStatus(s string) (UserStatus, error) {
	switch strings.ToLower(s) {
	case "enable", "enabled", "":
		return Enabled, nil
	case "disable", "disabled":
		return Disabled, nil
	}
	return "", fmt.Errorf("%w: user status %q (want enable or disable)", ErrInvalid, s)
}

// ParseDecision parses a decision, case-insensitively.
func ParseDecision(s string) (Decision, error) {
	switch strings.ToLower(s) {
	case "allow":
		return Allow, nil
	case "deny":
		return Deny, nil
	}
	return "", fmt.Errorf("%w: decision %q (want Allow or Deny)", ErrInvalid, s)
}

// actionBits is a set of hook.Actions, bit a for Action a.
type actionBits uint16

const allActions = actionBits(1<<(hook.ActionList+1) - 2)

// ParseActions parses action names (Pub, Sub, Create, Update, Delete,
// Get, List, All), case-insensitively; a name may hold several
// separated by commas.
func parseActions(names []string) (actionBits, error) {
	var bits actionBits
	for _, list := range names {
		for n := range strings.SplitSeq(list, ",") {
			n = strings.TrimSpace(n)
			if strings.EqualFold(n, "All") {
				bits |= allActions
				continue
			}
			found := false
			for a := hook.ActionPub; a <= hook.ActionList; a++ {
				if strings.EqualFold(n, a.String()) {
					bits |= 1 << a
					found = true
				}
			}
			if !found {
				return 0, fmt.Errorf("%w: action %q (want Pub, Sub, Create, Update, Delete, Get, List or All)", ErrInvalid, n)
			}
		}
	}
	if bits == 0 {
		return 0, fmt.Errorf("%w: no action", ErrInvalid)
	}
	return bits, nil
}

// parseSources parses source addresses and CIDR ranges.
func parseSources(ips []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range ips {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%w: source %q: %v", ErrInvalid, s, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%w: source %q: %v", ErrInvalid, s, err)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// CheckName checks a user name: 1 to 64 of letters, digits, '-', '_',
// '.', '@'.
func CheckName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: user name %q: want 1 to 64 characters", ErrInvalid, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.@", r)) {
			return fmt.Errorf("%w: user name %q: only letters, digits and - _ . @", ErrInvalid, name)
		}
	}
	return nil
}

// Check checks u: its name, a secret of at least 6 bytes, its type,
// status and every policy entry.
func (u *User) Check() error {
	if err := CheckName(u.Name); err != nil {
		return err
	}
	if len(u.Secret) < 6 || len(u.Secret) > 256 {
		return fmt.Errorf("%w: user %s: the secret needs 6 to 256 bytes", ErrInvalid, u.Name)
	}
	if _, err := ParseUserType(string(u.Type)); err != nil {
		return err
	}
	if _, err := ParseUserStatus(string(u.Status)); err != nil {
		return err
	}
	for _, e := range u.Policies {
		if _, err := compileEntry(e); err != nil {
			return fmt.Errorf("user %s: %w", u.Name, err)
		}
	}
	return nil
}

// Normalize returns e with its decision and actions spelled canonically,
// or an error if it does not compile.
func (e Entry) Normalize() (Entry, error) {
	c, err := compileEntry(e)
	if err != nil {
		return Entry{}, err
	}
	e.Decision = Deny
	if !c.deny {
		e.Decision = Allow
	}
	e.Actions = c.actions.names()
	e.Resource = strings.TrimSpace(e.Resource)
	return e, nil
}

func (b actionBits) names() []string {
	if b == allActions {
		return []string{"All"}
	}
	var out []string
	for a := hook.ActionPub; a <= hook.ActionList; a++ {
		if b&(1<<a) != 0 {
			out = append(out, a.String())
		}
	}
	return out
}
