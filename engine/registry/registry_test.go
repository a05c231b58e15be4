package registry

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestHeartbeatChangeDetection(t *testing.T) {
	connA, connB := &testConn{"10.0.0.1:1"}, &testConn{"10.0.0.2:1"}
	type step struct {
		name    string
		hb      Heartbeat
		changed []string
		// state of group g1 after the step
		ids     []string
		subs    map[string]string // topic → expression; nil skips the check
		version map[string]int64  // topic → effective version, when checked
	}
	steps := []step{
		{
			name:    "A joins g1",
			hb:      consumerHB("A", connA, "g1", tagSub("T", "*", 10)),
			changed: []string{"g1"},
			ids:     []string{"A"},
			subs:    map[string]string{"T": "*"},
		},
		{
			name: "A repeats itself",
			hb:   consumerHB("A", connA, "g1", tagSub("T", "*", 10)),
			ids:  []string{"A"},
			subs: map[string]string{"T": "*"},
		},
		{
			name:    "B joins g1 with the same subscription",
			hb:      consumerHB("B", connB, "g1", tagSub("T", "*", 10)),
			changed: []string{"g1"},
			ids:     []string{"A", "B"},
			subs:    map[string]string{"T": "*"},
		},
		{
			name:    "A subscribes again with a new expression",
			hb:      consumerHB("A", connA, "g1", tagSub("T", "tagA || tagB", 20)),
			changed: []string{"g1"},
			ids:     []string{"A", "B"},
			subs:    map[string]string{"T": "tagA || tagB"},
			version: map[string]int64{"T": 20},
		},
		{
			name: "B's older subscription loses",
			hb:   consumerHB("B", connB, "g1", tagSub("T", "*", 10)),
			ids:  []string{"A", "B"},
			subs: map[string]string{"T": "tagA || tagB"},
		},
		{
			name:    "A adds a topic",
			hb:      consumerHB("A", connA, "g1", tagSub("T", "tagA || tagB", 20), tagSub("U", "*", 20)),
			changed: []string{"g1"},
			subs:    map[string]string{"T": "tagA || tagB", "U": "*"},
		},
		{
			name:    "A's newer version with the same expression is no change",
			hb:      consumerHB("A", connA, "g1", tagSub("T", "tagA || tagB", 30), tagSub("U", "*", 20)),
			subs:    map[string]string{"T": "tagA || tagB", "U": "*"},
			version: map[string]int64{"T": 30},
		},
		{
			name:    "A drops U; nobody else subscribes it",
			hb:      consumerHB("A", connA, "g1", tagSub("T", "tagA || tagB", 30)),
			changed: []string{"g1"},
			subs:    map[string]string{"T": "tagA || tagB"},
		},
		{
			name:    "SQL92 subscription",
			hb:      consumerHB("A", connA, "g1", Subscription{Topic: "T", ExprType: ExprSQL92, Expression: "a > 1", Version: 40}),
			changed: []string{"g1"},
			subs:    map[string]string{"T": "a > 1"},
		},
		{
			name: "A stops listing T: B's subscription takes over",
			hb: Heartbeat{Client: "A", Conn: connA, Consumers: []Consumer{
				{Group: "g1", Subscriptions: []Subscription{tagSub("V", "*", 50)}},
			}},
			changed: []string{"g1"},
			subs:    map[string]string{"T": "*", "V": "*"},
			version: map[string]int64{"T": 10},
		},
		{
			name: "A moves from g1 to g2 and starts producing",
			hb: Heartbeat{Client: "A", Conn: connA, Producers: []string{"pg"}, Consumers: []Consumer{
				{Group: "g2", Subscriptions: []Subscription{tagSub("V", "*", 50)}},
			}},
			changed: []string{"g1", "g2"},
			ids:     []string{"B"},
			subs:    map[string]string{"T": "*"},
		},
		{
			name: "producer-only change is not a consumer change",
			hb: Heartbeat{Client: "A", Conn: connA, Producers: []string{"pg", "pg2"}, Consumers: []Consumer{
				{Group: "g2", Subscriptions: []Subscription{tagSub("V", "*", 50)}},
			}},
			ids: []string{"B"},
		},
		{
			name: "settings changes are not membership changes",
			hb: Heartbeat{Client: "B", Conn: connB, Consumers: []Consumer{
				{Group: "g1", Model: Broadcasting, From: ConsumeFromFirstOffset, Subscriptions: []Subscription{tagSub("T", "*", 10)}},
			}},
			ids: []string{"B"},
		},
		{
			name:    "B leaves every group: g1 disappears",
			hb:      Heartbeat{Client: "B", Conn: connB},
			changed: []string{"g1"},
			subs:    map[string]string{},
		},
		{
			name: "empty client id is ignored",
			hb:   consumerHB("", connB, "g1", tagSub("T", "*", 1)),
			subs: map[string]string{},
		},
	}
	r := newTestRegistry(newFakeClock())
	for _, st := range steps {
		got := r.Heartbeat(st.hb)
		wantGroups(t, st.name, got, st.changed...)
		if st.ids != nil {
			wantIDs(t, st.name, r.ConsumerIDs("g1"), st.ids...)
		}
		if st.subs != nil {
			gi, _ := r.ConsumerGroup("g1")
			have := map[string]string{}
			for _, s := range gi.Subscriptions {
				have[s.Topic] = s.Expression
			}
			if len(have) != len(st.subs) {
				t.Fatalf("%s: subscriptions %v, want %v", st.name, have, st.subs)
			}
			for topic, expr := range st.subs {
				s, ok := r.Subscription("g1", topic)
				if !ok || s.Expression != expr || have[topic] != expr {
					t.Fatalf("%s: Subscription(g1, %s) = %+v %v, want expression %q", st.name, topic, s, ok, expr)
				}
			}
		}
		for topic, v := range st.version {
			if s, _ := r.Subscription("g1", topic); s.Version != v {
				t.Fatalf("%s: version of %s = %d, want %d", st.name, topic, s.Version, v)
			}
		}
	}
	gi, ok := r.ConsumerGroup("g2")
	if !ok || !slices.Equal(gi.Clients, ids("A")) {
		t.Fatalf("g2 = %+v %v", gi, ok)
	}
	if got := r.ProducerGroups(); !slices.Equal(got, []string{"pg", "pg2"}) {
		t.Fatalf("producer groups %q", got)
	}
}

// Subscriptions sent without versions are stamped by the registry, so the
// client that changed its expression last wins, and unchanged heartbeats
// never flip the group's subscription back and forth.
func TestSubscriptionWithoutVersions(t *testing.T) {
	clock := newFakeClock()
	r := newTestRegistry(clock)
	expr := func() string {
		s, ok := r.Subscription("g", "T")
		if !ok {
			return "<none>"
		}
		return s.Expression
	}

	r.Heartbeat(consumerHB("A", nil, "g", tagSub("T", "", 0)))
	if got := expr(); got != "*" {
		t.Fatalf("empty TAG expression reads as %q, want *", got)
	}
	clock.Advance(time.Second)
	wantGroups(t, "B joins with tagB", r.Heartbeat(consumerHB("B", nil, "g", tagSub("T", "tagB", 0))), "g")
	if got := expr(); got != "tagB" {
		t.Fatalf("after B: %q, want tagB", got)
	}
	for range 3 {
		clock.Advance(time.Second)
		wantGroups(t, "A repeats", r.Heartbeat(consumerHB("A", nil, "g", tagSub("T", "*", 0))))
		wantGroups(t, "B repeats", r.Heartbeat(consumerHB("B", nil, "g", tagSub("T", "tagB", 0))))
		if got := expr(); got != "tagB" {
			t.Fatalf("flapped to %q", got)
		}
	}
	wantGroups(t, "A changes", r.Heartbeat(consumerHB("A", nil, "g", tagSub("T", "tagA", 0))), "g")
	if got := expr(); got != "tagA" {
		t.Fatalf("after A changes: %q, want tagA (same clock tick, still later)", got)
	}
	wantGroups(t, "A leaves", r.Unregister("A", "", "g"), "g")
	if got := expr(); got != "tagB" {
		t.Fatalf("after A leaves: %q, want tagB", got)
	}
}

func TestHeartbeatDuplicatesAndCopies(t *testing.T) {
	r := newTestRegistry(newFakeClock())
	hb := Heartbeat{
		Client:    "A",
		Producers: []string{"p", "p", ""},
		Consumers: []Consumer{
			{Group: "g", Subscriptions: []Subscription{tagSub("T", "x", 1), tagSub("T", "x", 1), {Topic: ""}}},
			{Group: ""},
			{Group: "g", Subscriptions: []Subscription{tagSub("T", "x", 1)}},
		},
	}
	wantGroups(t, "first", r.Heartbeat(hb), "g")
	wantGroups(t, "repeat", r.Heartbeat(hb))
	// Listing one group twice must not hide that another group was left.
	hb2 := Heartbeat{Client: "A", Producers: []string{"p"}, Consumers: []Consumer{{Group: "h"}, {Group: "h"}}}
	wantGroups(t, "swap group", r.Heartbeat(hb2), "g", "h")

	// The caller may reuse its slices.
	hb3 := consumerHB("B", nil, "h", tagSub("T", "mine", 5))
	r.Heartbeat(hb3)
	hb3.Consumers[0].Subscriptions[0].Expression = "scribbled"
	hb3.Consumers[0].Group = "other"
	if s, _ := r.Subscription("h", "T"); s.Expression != "mine" {
		t.Fatalf("registry kept the caller's slice: %+v", s)
	}
	cs := r.Consumers("h")
	if len(cs) != 2 || cs[1].ID != "B" || cs[1].Group != "h" || len(cs[1].Subscriptions) != 1 {
		t.Fatalf("consumers of h: %+v", cs)
	}
	cs[1].Subscriptions[0].Expression = "scribbled"
	if s, _ := r.Subscription("h", "T"); s.Expression != "mine" {
		t.Fatal("Consumers returned shared state")
	}
}

func TestExpire(t *testing.T) {
	clock := newFakeClock()
	r := newTestRegistry(clock)
	r.Heartbeat(consumerHB("A", &testConn{"a"}, "g", tagSub("T", "*", 1)))
	clock.Advance(60 * time.Second)
	r.Heartbeat(consumerHB("B", &testConn{"b"}, "g", tagSub("T", "*", 1)))
	r.Heartbeat(Heartbeat{Client: "P", Producers: []string{"pg"}})

	clock.Advance(60 * time.Second) // A silent for exactly 120s: kept
	wantGroups(t, "at expiry", r.Expire())
	wantIDs(t, "at expiry", r.ConsumerIDs("g"), "A", "B")

	clock.Advance(time.Millisecond)
	wantGroups(t, "past expiry", r.Expire(), "g")
	wantIDs(t, "past expiry", r.ConsumerIDs("g"), "B")
	if _, ok := r.Client("A"); ok {
		t.Fatal("A still registered")
	}

	clock.Advance(30 * time.Second)
	r.Heartbeat(consumerHB("B", nil, "g", tagSub("T", "*", 1))) // keeps B alive, conn kept
	if ci, _ := r.Client("B"); ci.Conn == nil || ci.Conn.RemoteAddr() != "b" {
		t.Fatalf("nil Conn replaced the known one: %+v", ci)
	}
	clock.Advance(100 * time.Second)
	wantGroups(t, "producer expires", r.Expire())
	if len(r.ProducerGroups()) != 0 {
		t.Fatalf("producer groups left: %q", r.ProducerGroups())
	}
	wantIDs(t, "B survives", r.ConsumerIDs("g"), "B")

	r2 := New(Options{Expiry: time.Second, Now: clock.Now})
	r2.Heartbeat(consumerHB("A", nil, "g"))
	clock.Advance(2 * time.Second)
	wantGroups(t, "custom expiry", r2.Expire(), "g")
}

func TestDisconnect(t *testing.T) {
	r := newTestRegistry(newFakeClock())
	c1, c2, c3 := &testConn{"c1"}, &testConn{"c2"}, &testConn{"c3"}
	r.Heartbeat(consumerHB("A", c1, "g", tagSub("T", "*", 1)))
	r.Heartbeat(Heartbeat{Client: "B", Conn: c1, Producers: []string{"pg"}, Consumers: []Consumer{{Group: "h"}}})
	r.Heartbeat(consumerHB("C", c2, "g", tagSub("T", "*", 1)))
	r.Heartbeat(consumerHB("D", c1, "g", tagSub("T", "*", 1)))
	r.Heartbeat(consumerHB("D", c3, "g", tagSub("T", "*", 1))) // D moved to c3

	wantGroups(t, "nil conn", r.Disconnect(nil))
	wantGroups(t, "unknown conn", r.Disconnect(&testConn{"c1"}))
	wantGroups(t, "close c1", r.Disconnect(c1), "g", "h")
	wantIDs(t, "g after c1", r.ConsumerIDs("g"), "C", "D")
	if _, ok := r.ConsumerGroup("h"); ok {
		t.Fatal("h survived its only client")
	}
	if _, ok := r.ProducerConn("pg"); ok {
		t.Fatal("producer of a closed connection is still offered")
	}
	wantGroups(t, "close c1 again", r.Disconnect(c1))
	wantGroups(t, "close c3", r.Disconnect(c3), "g")
	wantIDs(t, "g after c3", r.ConsumerIDs("g"), "C")
}

func TestUnregister(t *testing.T) {
	r := newTestRegistry(newFakeClock())
	hb := Heartbeat{Client: "A", Producers: []string{"pg"}, Consumers: []Consumer{{Group: "g1"}, {Group: "g2"}}}
	r.Heartbeat(hb)
	wantGroups(t, "unknown client", r.Unregister("X", "", ""))
	wantGroups(t, "producer only", r.Unregister("A", "pg", ""))
	if _, ok := r.Client("A"); !ok {
		t.Fatal("A dropped while still consuming")
	}
	wantGroups(t, "not a member", r.Unregister("A", "", "g3"))
	wantGroups(t, "g1", r.Unregister("A", "", "g1"), "g1")
	wantGroups(t, "g2, last group", r.Unregister("A", "", "g2"), "g2")
	if _, ok := r.Client("A"); ok {
		t.Fatal("A kept with no groups")
	}
	r.Heartbeat(hb)
	wantGroups(t, "everything", r.Unregister("A", "", ""), "g1", "g2")
	if len(r.ProducerGroups())+len(r.ConsumerGroups()) != 0 {
		t.Fatal("groups left behind")
	}
}

func TestQueries(t *testing.T) {
	clock := newFakeClock()
	r := newTestRegistry(clock)
	ca := &testConn{"10.0.0.1:5000"}
	r.Heartbeat(Heartbeat{
		Client: "A", Protocol: "grpc", Conn: ca, Producers: []string{"pg"},
		Consumers: []Consumer{{
			Group: "g", Type: ConsumeSimple, Model: Clustering, FIFO: true,
			Subscriptions: []Subscription{tagSub("T2", "b", 1), tagSub("T1", "a", 1)},
		}},
	})
	r.Heartbeat(consumerHB("B", nil, "h", tagSub("T1", "*", 1)))

	ci, ok := r.Client("A")
	if !ok || ci.Protocol != "grpc" || ci.Conn != ca || !ci.LastHeartbeat.Equal(clock.Now()) {
		t.Fatalf("Client(A) = %+v %v", ci, ok)
	}
	if got := r.ConsumerGroups(); !slices.Equal(got, []string{"g", "h"}) {
		t.Fatalf("ConsumerGroups = %q", got)
	}
	if got := r.ConsumerGroupsOf("T1"); !slices.Equal(got, []string{"g", "h"}) {
		t.Fatalf("ConsumerGroupsOf(T1) = %q", got)
	}
	if got := r.ConsumerGroupsOf("T2"); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("ConsumerGroupsOf(T2) = %q", got)
	}
	if got := r.ConsumerGroupsOf("nope"); len(got) != 0 {
		t.Fatalf("ConsumerGroupsOf(nope) = %q", got)
	}
	gi, ok := r.ConsumerGroup("g")
	if !ok || gi.Group != "g" || gi.Type != ConsumeSimple || !gi.FIFO || len(gi.Subscriptions) != 2 ||
		gi.Subscriptions[0].Topic != "T1" || !slices.Equal(gi.Clients, ids("A")) {
		t.Fatalf("ConsumerGroup(g) = %+v", gi)
	}
	cs := r.Consumers("g")
	if len(cs) != 1 || cs[0].ID != "A" || cs[0].Conn != ca || cs[0].Type != ConsumeSimple ||
		cs[0].Subscriptions[1].Topic != "T2" {
		t.Fatalf("Consumers(g) = %+v", cs)
	}
	if ps := r.Producers("pg"); len(ps) != 1 || ps[0].ID != "A" {
		t.Fatalf("Producers(pg) = %+v", ps)
	}
	if r.Consumers("nope") != nil || r.ConsumerIDs("nope") != nil || r.Producers("nope") != nil {
		t.Fatal("unknown groups should read as nil")
	}
	if _, ok := r.Subscription("g", "nope"); ok {
		t.Fatal("unknown topic has a subscription")
	}
	if _, ok := r.Subscription("nope", "T1"); ok {
		t.Fatal("unknown group has a subscription")
	}
	if ConsumePush.String() != "CONSUME_PASSIVELY" || Broadcasting.String() != "BROADCASTING" ||
		ConsumeFromTimestamp.String() != "CONSUME_FROM_TIMESTAMP" || Left.String() != "left" {
		t.Fatal("wire names")
	}
}

func TestProducerConnRoundRobin(t *testing.T) {
	r := newTestRegistry(newFakeClock())
	conns := map[string]*testConn{}
	for _, id := range []string{"P1", "P2", "P3"} {
		conns[id] = &testConn{id}
		r.Heartbeat(Heartbeat{Client: ClientID(id), Conn: conns[id], Producers: []string{"pg"}})
	}
	r.Heartbeat(Heartbeat{Client: "P0", Producers: []string{"pg"}}) // no connection: skipped
	seen := map[string]int{}
	for range 30 {
		c, ok := r.ProducerConn("pg")
		if !ok {
			t.Fatal("no producer conn")
		}
		seen[c.RemoteAddr()]++
	}
	if len(seen) != 3 {
		t.Fatalf("round robin reached %v", seen)
	}
	for id, n := range seen {
		if n < 7 {
			t.Fatalf("%s picked %d times of 30: %v", id, n, seen)
		}
	}
	if _, ok := r.ProducerConn("other"); ok {
		t.Fatal("conn for unknown group")
	}
	r2 := newTestRegistry(newFakeClock())
	r2.Heartbeat(Heartbeat{Client: "P0", Producers: []string{"pg"}})
	if _, ok := r2.ProducerConn("pg"); ok {
		t.Fatal("conn for a group whose producers have none")
	}
}

// When the member providing a group's subscription lowers or drops it, the
// highest remaining one takes over: one identical to the current
// subscription if there is one (no change), else the smallest client id's.
func TestSubscriptionFallback(t *testing.T) {
	r := newTestRegistry(newFakeClock())
	expr := func() string {
		s, ok := r.Subscription("g", "T")
		if !ok {
			return "<none>"
		}
		return s.Expression
	}
	r.Heartbeat(consumerHB("D", nil, "g", tagSub("T", "d", 10)))
	r.Heartbeat(consumerHB("B", nil, "g", tagSub("T", "b", 10)))
	if got := expr(); got != "d" {
		t.Fatalf("tie replaced the current subscription: %q", got)
	}
	r.Heartbeat(consumerHB("A", nil, "g", tagSub("T", "a", 20)))
	r.Heartbeat(consumerHB("C", nil, "g", tagSub("T", "a", 20)))
	if got := expr(); got != "a" {
		t.Fatalf("newest: %q", got)
	}
	// A (the provider) goes back to an old version: C's identical one
	// takes over silently.
	wantGroups(t, "A lowers", r.Heartbeat(consumerHB("A", nil, "g", tagSub("T", "x", 5))))
	if got := expr(); got != "a" {
		t.Fatalf("after A lowers: %q", got)
	}
	// C leaves: B and D tie at 10; B has the smaller id.
	var changes []Change
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.Watch(ctx)
	wantGroups(t, "C leaves", r.Unregister("C", "", ""), "g")
	changes = append(changes, recv(t, ch), recv(t, ch))
	if got := expr(); got != "b" {
		t.Fatalf("after C leaves: %q", got)
	}
	want := []Change{
		{Group: "g", Kind: Left, Client: "C"},
		{Group: "g", Kind: SubscriptionChanged, Client: "C", Topic: "T"},
	}
	if !slices.Equal(changes, want) {
		t.Fatalf("changes %v, want %v", changes, want)
	}
	// Everybody drops T: the group no longer subscribes it.
	for _, id := range []ClientID{"A", "B", "D"} {
		r.Heartbeat(consumerHB(id, nil, "g", tagSub("U", "*", 1)))
	}
	if got := expr(); got != "<none>" {
		t.Fatalf("after everybody dropped T: %q", got)
	}
	if got := r.ConsumerGroupsOf("T"); len(got) != 0 {
		t.Fatalf("ConsumerGroupsOf(T) = %q", got)
	}
}

// TestLanguageAndVersion: a client's language and version are kept from
// the heartbeats that give them, and not cleared by those that do not.
func TestLanguageAndVersion(t *testing.T) {
	r := newTestRegistry(newFakeClock())
	steps := []struct {
		name                   string
		hb                     Heartbeat
		wantLanguage, wantVers string
	}{
		{"first", Heartbeat{Client: "A", Protocol: "remoting", Language: "GO", Version: "V4_5_2", Producers: []string{"pg"}}, "GO", "V4_5_2"},
		{"silent", Heartbeat{Client: "A", Producers: []string{"pg"}}, "GO", "V4_5_2"},
		{"upgraded", Heartbeat{Client: "A", Version: "V5_3_0", Producers: []string{"pg"}}, "GO", "V5_3_0"},
	}
	for _, s := range steps {
		r.Heartbeat(s.hb)
		ci, ok := r.Client("A")
		if !ok || ci.Language != s.wantLanguage || ci.Version != s.wantVers {
			t.Fatalf("%s: Client(A) = %+v %v, want %s %s", s.name, ci, ok, s.wantLanguage, s.wantVers)
		}
		if ps := r.Producers("pg"); len(ps) != 1 || ps[0].Language != s.wantLanguage || ps[0].Version != s.wantVers {
			t.Fatalf("%s: Producers(pg) = %+v", s.name, ps)
		}
	}
}
