package hook

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/karmanmq/karman/engine/message"
)

func TestReject(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		rejected bool
		reason   string
	}{
		{"plain", Reject("no tenant"), true, "no tenant"},
		{"wrapped", fmt.Errorf("authz: %w", Reject("denied")), true, "denied"},
		{"other error", errors.New("rejected: looks like one"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var re *RejectError
			if errors.Is(tc.err, ErrRejected) != tc.rejected || errors.As(tc.err, &re) != tc.rejected {
				t.Fatalf("%v: matches ErrRejected %v, want %v", tc.err, errors.Is(tc.err, ErrRejected), tc.rejected)
			}
			if tc.rejected && re.Reason != tc.reason {
				t.Fatalf("reason %q, want %q", re.Reason, tc.reason)
			}
		})
	}
}

func TestClientContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := FromContext(ctx); ok {
		t.Fatal("a bare context carries a client")
	}
	if _, ok := FromContext(NewContext(ctx, nil)); ok {
		t.Fatal("a nil client is found")
	}
	c := &Client{Protocol: "grpc", ID: "c1", Group: "G"}
	got, ok := FromContext(NewContext(ctx, c))
	if !ok || got != c {
		t.Fatalf("FromContext = %v, %v", got, ok)
	}
}

func TestDrop(t *testing.T) {
	b := &DeliverBatch{Messages: make([]*message.Message, 3)}
	if b.Dropped(0) || b.Dropped(2) {
		t.Fatal("dropped before any Drop")
	}
	b.Drop(1)
	b.Drop(1)
	for i, want := range []bool{false, true, false} {
		if b.Dropped(i) != want {
			t.Fatalf("Dropped(%d) = %v", i, !want)
		}
	}
}

// TestClientContextType: a ClientContext carries its Client as NewContext's
// context does, to its children too, and its parent's values.
func TestClientContextType(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	cc := &ClientContext{Context: parent, Client: Client{Protocol: "remoting", ID: "c1"}}
	child, cancel := context.WithCancel(cc)
	defer cancel()
	for _, ctx := range []context.Context{cc, child} {
		c, ok := FromContext(ctx)
		if !ok || c != &cc.Client {
			t.Fatalf("FromContext = %v, %v; want the embedded client", c, ok)
		}
		if v := ctx.Value(key{}); v != "v" {
			t.Fatalf("parent's value %v", v)
		}
	}
	if _, ok := FromContext(parent); ok {
		t.Fatal("the parent carries a client")
	}
}
