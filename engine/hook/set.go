package hook

import (
	"context"
	"fmt"
	"reflect"
)

// Set is a list of hooks sorted by the interfaces they implement, in the
// order they were listed. The engine sorts Options.Hooks into one at
// Open and gives it to front-ends (engine.Engine.Hooks), so that a hook
// installed in the engine is called by every front-end.
//
// A Set is read-only once made and safe for concurrent use.
type Set struct {
	Store          []BeforeStore
	Deliver        []BeforeDeliver
	Authenticators []Authenticator
	Authorizers    []Authorizer
}

// Sort sorts list into a Set. A value may implement several interfaces;
// a value that implements none is refused.
func Sort(list []any) (Set, error) {
	var s Set
	for i, v := range list {
		known := false
		if h, ok := v.(BeforeStore); ok {
			s.Store = append(s.Store, h)
			known = true
		}
		if h, ok := v.(BeforeDeliver); ok {
			s.Deliver = append(s.Deliver, h)
			known = true
		}
		if h, ok := v.(Authenticator); ok {
			s.Authenticators = append(s.Authenticators, h)
			known = true
		}
		if h, ok := v.(Authorizer); ok {
			s.Authorizers = append(s.Authorizers, h)
			known = true
		}
		if !known {
			return Set{}, fmt.Errorf("hook %d (%T) implements none of hook.BeforeStore, hook.BeforeDeliver, hook.Authenticator and hook.Authorizer", i, v)
		}
	}
	return s, nil
}

// Empty reports whether the set holds no hook at all: front-ends then
// skip even putting the Client into the context.
func (s *Set) Empty() bool {
	return len(s.Store) == 0 && len(s.Deliver) == 0 && len(s.Authenticators) == 0 && len(s.Authorizers) == 0
}

// FieldsUnused is implemented by Authenticators that never read
// Credentials.Fields: when every installed Authenticator does
// (Set.NeedsFields is false), front-ends may leave Fields nil and spare
// building it.
type FieldsUnused interface {
	FieldsUnused()
}

// NeedsFields reports whether an Authenticator may read
// Credentials.Fields: whether one does not implement FieldsUnused.
func (s *Set) NeedsFields() bool {
	for _, a := range s.Authenticators {
		if _, ok := a.(FieldsUnused); !ok {
			return true
		}
	}
	return false
}

// Guarded reports whether requests are to be authenticated or authorized:
// whether the set holds an Authenticator or an Authorizer.
func (s *Set) Guarded() bool { return len(s.Authenticators) != 0 || len(s.Authorizers) != 0 }

// Waiting is implemented by hooks that may wait on something outside the
// process (another process, the network) for longer than decoding a
// request takes, as process plugins do. Front-ends run the requests that
// call such a hook off the goroutine that reads their connection, so that
// one slow call does not hold up the connection's other requests; hooks
// that do not implement it are taken to return at once.
type Waiting interface {
	MayWait() bool
}

func mayWait[H any](hooks []H) bool {
	for _, h := range hooks {
		if w, ok := any(h).(Waiting); ok && w.MayWait() {
			return true
		}
	}
	return false
}

// StoreMayWait reports whether a store hook may wait (Waiting).
func (s *Set) StoreMayWait() bool { return mayWait(s.Store) }

// DeliverMayWait reports whether a delivery hook may wait (Waiting).
func (s *Set) DeliverMayWait() bool { return mayWait(s.Deliver) }

// GuardMayWait reports whether an Authenticator or an Authorizer may wait
// (Waiting).
func (s *Set) GuardMayWait() bool { return mayWait(s.Authenticators) || mayWait(s.Authorizers) }

// Authenticate asks the Authenticators in order and returns the principal
// of the first that accepts c. When all refuse, it returns the first
// one's error; with none installed, the anonymous (zero) Principal.
func (s *Set) Authenticate(ctx context.Context, c *Credentials) (Principal, error) {
	var first error
	for _, a := range s.Authenticators {
		p, err := a.Authenticate(ctx, c)
		if err == nil {
			return p, nil
		}
		if first == nil {
			first = err
		}
	}
	return Principal{}, first
}

// Authorize asks every Authorizer in order whether p may do a on r; the
// first refusal is returned, naming the action, the resource and the
// principal. With none installed everything is allowed.
func (s *Set) Authorize(ctx context.Context, p Principal, a Action, r Resource) error {
	for _, z := range s.Authorizers {
		if err := z.Authorize(ctx, p, a, r); err != nil {
			who := p.Name
			if who == "" {
				who = "anonymous"
			}
			return fmt.Errorf("%s on %s by %s: %w", a, r, who, err)
		}
	}
	return nil
}

// Changing is implemented by Authenticators and Authorizers whose
// decisions change while clients stay connected: an access-control list
// whose users and policies are edited. Front-ends that hold rights for
// a long time (an MQTT subscription) check them again after a change.
type Changing interface {
	// OnChange registers fn, called after each change, on the goroutine
	// that made it: fn must return at once (signal a goroutine of its
	// own). The returned function unregisters fn.
	OnChange(fn func()) (cancel func())
}

// PrincipalChecker is implemented by Authenticators that can tell
// whether a principal they established still stands: its user not
// deleted or disabled since.
type PrincipalChecker interface {
	// CheckPrincipal returns nil while p stands, an error matching
	// ErrUnauthenticated once it does not.
	CheckPrincipal(p Principal) error
}

// OnChange registers fn with every Authenticator and Authorizer that
// implements Changing (a hook that is both is registered once), and
// returns the function that unregisters it from all.
func (s *Set) OnChange(fn func()) (cancel func()) {
	var cancels []func()
	seen := map[Changing]bool{} // of comparable hooks: a map key must be
	add := func(h any) {
		c, ok := h.(Changing)
		if !ok {
			return
		}
		if reflect.TypeOf(c).Comparable() {
			if seen[c] {
				return
			}
			seen[c] = true
		}
		cancels = append(cancels, c.OnChange(fn))
	}
	for _, a := range s.Authenticators {
		add(a)
	}
	for _, a := range s.Authorizers {
		add(a)
	}
	return func() {
		for _, c := range cancels {
			c()
		}
	}
}

// CheckPrincipal asks the Authenticators that implement PrincipalChecker
// whether p still stands, and returns the first refusal; nil when none
// refuses (or none can tell).
func (s *Set) CheckPrincipal(p Principal) error {
	for _, a := range s.Authenticators {
		if c, ok := a.(PrincipalChecker); ok {
			if err := c.CheckPrincipal(p); err != nil {
				return err
			}
		}
	}
	return nil
}
