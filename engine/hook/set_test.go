package hook_test

import (
	"context"
	"errors"
	"testing"

	"github.com/karmanmq/karman/engine/hook"
)

type authFunc func(*hook.Credentials) (hook.Principal, error)

func (f authFunc) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	return f(c)
}

type authzFunc func(hook.Principal, hook.Action, hook.Resource) error

func (f authzFunc) Authorize(_ context.Context, p hook.Principal, a hook.Action, r hook.Resource) error {
	return f(p, a, r)
}

func TestSortAndAuth(t *testing.T) {
	refuse := authFunc(func(*hook.Credentials) (hook.Principal, error) {
		return hook.Principal{}, hook.Unauthenticated("first refuses")
	})
	accept := authFunc(func(c *hook.Credentials) (hook.Principal, error) { return hook.Principal{Name: c.AccessKey}, nil })
	onlyPub := authzFunc(func(_ hook.Principal, a hook.Action, _ hook.Resource) error {
		if a != hook.ActionPub {
			return hook.Deny("publish only")
		}
		return nil
	})
	set, err := hook.Sort([]any{refuse, accept, onlyPub})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Authenticators) != 2 || len(set.Authorizers) != 1 || !set.Guarded() || set.Empty() {
		t.Fatalf("sorted into %+v", set)
	}
	ctx := context.Background()
	p, err := set.Authenticate(ctx, &hook.Credentials{AccessKey: "ak"})
	if err != nil || p.Name != "ak" {
		t.Fatalf("the second authenticator's principal: %+v, %v", p, err)
	}
	if err := set.Authorize(ctx, p, hook.ActionPub, hook.Topic("t")); err != nil {
		t.Fatal(err)
	}
	err = set.Authorize(ctx, p, hook.ActionSub, hook.Group("g"))
	if !errors.Is(err, hook.ErrDenied) || errors.Is(err, hook.ErrUnauthenticated) {
		t.Fatalf("denial %v", err)
	}
	if got, want := err.Error(), "Sub on Group:g by ak: denied: publish only"; got != want {
		t.Fatalf("denial reads %q, want %q", got, want)
	}

	only, _ := hook.Sort([]any{refuse})
	if _, err := only.Authenticate(ctx, &hook.Credentials{}); !errors.Is(err, hook.ErrUnauthenticated) {
		t.Fatalf("all refuse: %v", err)
	}
	var none hook.Set
	if p, err := none.Authenticate(ctx, &hook.Credentials{}); err != nil || !p.Anonymous() {
		t.Fatalf("no authenticator: %+v %v", p, err)
	}
	if !none.Empty() || none.Guarded() {
		t.Fatal("the zero set is not empty")
	}
	if _, err := hook.Sort([]any{42}); err == nil {
		t.Fatal("a value implementing nothing was accepted")
	}
}

func TestActionAdmin(t *testing.T) {
	for a, want := range map[hook.Action]bool{hook.ActionPub: false, hook.ActionSub: false, hook.ActionCreate: true, hook.ActionList: true} {
		if a.Admin() != want {
			t.Errorf("%s.Admin() = %v", a, !want)
		}
	}
}

// waitingStore is a store hook that says whether it may wait.
type waitingStore bool

func (waitingStore) BeforeStore(context.Context, *hook.StoreBatch) error { return nil }
func (w waitingStore) MayWait() bool                                     { return bool(w) }

type quickDeliver struct{}

func (quickDeliver) BeforeDeliver(context.Context, *hook.DeliverBatch) error { return nil }

func TestMayWait(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		hooks                 []any
		store, deliver, guard bool
	}{
		{"none", nil, false, false, false},
		{"quick hooks", []any{waitingStore(false), quickDeliver{}, authzFunc(nil)}, false, false, false},
		{"one waiting store hook among quick ones", []any{waitingStore(false), waitingStore(true), quickDeliver{}}, true, false, false},
		{"waiting authorizer", []any{waitingAuthz{}}, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := hook.Sort(tc.hooks)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.StoreMayWait(); got != tc.store {
				t.Errorf("StoreMayWait = %v, want %v", got, tc.store)
			}
			if got := s.DeliverMayWait(); got != tc.deliver {
				t.Errorf("DeliverMayWait = %v, want %v", got, tc.deliver)
			}
			if got := s.GuardMayWait(); got != tc.guard {
				t.Errorf("GuardMayWait = %v, want %v", got, tc.guard)
			}
		})
	}
}

type waitingAuthz struct{}

func (waitingAuthz) Authorize(context.Context, hook.Principal, hook.Action, hook.Resource) error {
	return nil
}
func (waitingAuthz) MayWait() bool { return true }
