package registry

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// testConn is a Conn as a front-end would give one: a pointer.
type testConn struct{ addr string }

func (c *testConn) RemoteAddr() string { return c.addr }

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestRegistry(clock *fakeClock) *Registry {
	return New(Options{Now: clock.Now})
}

// consumerHB is a heartbeat of a push, clustering consumer in one group.
func consumerHB(id ClientID, conn Conn, group string, subs ...Subscription) Heartbeat {
	return Heartbeat{
		Client:    id,
		Protocol:  "remoting",
		Conn:      conn,
		Consumers: []Consumer{{Group: group, Subscriptions: subs}},
	}
}

func tagSub(topic, expr string, version int64) Subscription {
	return Subscription{Topic: topic, ExprType: ExprTag, Expression: expr, Version: version}
}

func ids(s ...string) []ClientID {
	out := make([]ClientID, len(s))
	for i, v := range s {
		out[i] = ClientID(v)
	}
	return out
}

func wantGroups(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: changed groups %q, want %q", what, got, want)
	}
}

func wantIDs(t *testing.T, what string, got []ClientID, want ...string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, ids(want...)) {
		t.Fatalf("%s: ids %q, want %q", what, got, want)
	}
}
