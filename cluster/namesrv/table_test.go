package namesrv

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTable() (*Table, *clock) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	return New(Options{Now: clk.Now}), clk
}

func topic(name string, queues int32) TopicConfig {
	return TopicConfig{Name: name, ReadQueues: queues, WriteQueues: queues, Perm: PermRead | PermWrite}
}

func reg(cluster, name string, id int64, addr string, topics ...TopicConfig) BrokerRegistration {
	return BrokerRegistration{Cluster: cluster, BrokerName: name, BrokerID: id, Addr: addr, HAAddr: addr + "-ha", Topics: topics}
}

func qd(broker string, queues, perm int32) QueueData {
	return QueueData{BrokerName: broker, ReadQueues: queues, WriteQueues: queues, Perm: perm}
}

func bd(cluster, name string, addrs map[int64]string) BrokerData {
	return BrokerData{Cluster: cluster, BrokerName: name, Addrs: addrs}
}

const rw = PermRead | PermWrite

// step is one operation on a table; it fails the test on an unexpected
// outcome.
type step func(t *testing.T, tb *Table, clk *clock)

func register(r BrokerRegistration) step {
	return func(t *testing.T, tb *Table, _ *clock) {
		t.Helper()
		if _, err := tb.Register(r); err != nil {
			t.Fatalf("register %s/%d: %v", r.BrokerName, r.BrokerID, err)
		}
	}
}

func registerFails(r BrokerRegistration, want error) step {
	return func(t *testing.T, tb *Table, _ *clock) {
		t.Helper()
		if _, err := tb.Register(r); !errors.Is(err, want) {
			t.Fatalf("register %s/%d: err %v, want %v", r.BrokerName, r.BrokerID, err, want)
		}
	}
}

func registerResult(r BrokerRegistration, want RegisterResult) step {
	return func(t *testing.T, tb *Table, _ *clock) {
		t.Helper()
		got, err := tb.Register(r)
		if err != nil || got != want {
			t.Fatalf("register %s/%d: %+v, %v; want %+v", r.BrokerName, r.BrokerID, got, err, want)
		}
	}
}

func advance(d time.Duration) step {
	return func(_ *testing.T, _ *Table, clk *clock) { clk.advance(d) }
}

func expire(want ...string) step {
	return func(t *testing.T, tb *Table, clk *clock) {
		t.Helper()
		var got []string
		for _, b := range tb.Expire(clk.Now()) {
			got = append(got, fmt.Sprintf("%s/%d@%s", b.BrokerName, b.BrokerID, b.Addr))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("expired %q, want %q", got, want)
		}
	}
}

func unregister(cluster, name, addr string, id int64) step {
	return func(_ *testing.T, tb *Table, _ *clock) { tb.Unregister(cluster, name, addr, id) }
}

func route(topic string, want *Route) step {
	return func(t *testing.T, tb *Table, _ *clock) {
		t.Helper()
		got, ok := tb.Route(topic)
		if want == nil {
			if ok {
				t.Fatalf("route %s = %+v, want none", topic, got)
			}
			return
		}
		if !ok || !reflect.DeepEqual(got, *want) {
			t.Fatalf("route %s = %+v (%v)\nwant %+v", topic, got, ok, *want)
		}
	}
}

func topics(want ...string) step {
	return func(t *testing.T, tb *Table, _ *clock) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if got := tb.Topics(); !reflect.DeepEqual(got, want) {
			t.Fatalf("topics %q, want %q", got, want)
		}
	}
}

func TestTable(t *testing.T) {
	const c = "DefaultCluster"
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"master routes sorted", []step{
			register(reg(c, "broker-b", 0, "10.0.0.2:10911", topic("T", 8))),
			register(reg(c, "broker-a", 0, "10.0.0.1:10911", topic("T", 4), topic("U", 2))),
			route("T", &Route{
				Queues:  []QueueData{qd("broker-a", 4, rw), qd("broker-b", 8, rw)},
				Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "10.0.0.1:10911"}), bd(c, "broker-b", map[int64]string{0: "10.0.0.2:10911"})},
			}),
			route("U", &Route{Queues: []QueueData{qd("broker-a", 2, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "10.0.0.1:10911"})}}),
			route("V", nil),
			topics("T", "U"),
		}},
		{"complete registration replaces the topic set", []step{
			register(reg(c, "broker-a", 0, "a:1", topic("T", 4), topic("U", 4))),
			register(reg(c, "broker-b", 0, "b:1", topic("U", 4))),
			register(reg(c, "broker-a", 0, "a:1", topic("T", 2))),
			route("T", &Route{Queues: []QueueData{qd("broker-a", 2, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "a:1"})}}),
			route("U", &Route{Queues: []QueueData{qd("broker-b", 4, rw)}, Brokers: []BrokerData{bd(c, "broker-b", map[int64]string{0: "b:1"})}}),
			register(reg(c, "broker-b", 0, "b:1")),
			topics("T"),
		}},
		{"partial registration merges", []step{
			registerFails(BrokerRegistration{Cluster: c, BrokerName: "broker-a", Addr: "a:1", Partial: true, Topics: []TopicConfig{topic("T", 4)}}, ErrNotRegistered),
			topics(),
			register(reg(c, "broker-a", 0, "a:1", topic("T", 4))),
			register(BrokerRegistration{Cluster: c, BrokerName: "broker-a", Addr: "a:1", Partial: true, Topics: []TopicConfig{topic("U", 1), topic("T", 8)}}),
			topics("T", "U"),
			route("T", &Route{Queues: []QueueData{qd("broker-a", 8, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "a:1"})}}),
		}},
		{"replica learns its master; its topics are ignored", []step{
			registerResult(reg(c, "broker-a", 1, "a:2", topic("X", 4)), RegisterResult{}),
			topics(),
			registerResult(reg(c, "broker-a", 0, "a:1", topic("T", 4)), RegisterResult{}),
			registerResult(reg(c, "broker-a", 1, "a:2", topic("X", 4)), RegisterResult{MasterAddr: "a:1", MasterHAAddr: "a:1-ha"}),
			topics("T"),
			route("T", &Route{Queues: []QueueData{qd("broker-a", 4, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "a:1", 1: "a:2"})}}),
		}},
		{"master leaves, replica keeps the group readable", []step{
			register(reg(c, "broker-a", 0, "a:1", topic("T", 4))),
			register(reg(c, "broker-a", 1, "a:2")),
			unregister(c, "broker-a", "a:1", 0),
			route("T", &Route{Queues: []QueueData{qd("broker-a", 4, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{1: "a:2"})}}),
			unregister(c, "broker-a", "a:2", 1),
			route("T", nil),
			topics(),
		}},
		{"acting master publishes read-only", []step{
			register(BrokerRegistration{Cluster: c, BrokerName: "broker-a", BrokerID: 2, Addr: "a:3", EnableActingMaster: true, Topics: []TopicConfig{topic("T", 4)}}),
			route("T", &Route{
				Queues:  []QueueData{qd("broker-a", 4, PermRead)},
				Brokers: []BrokerData{{Cluster: c, BrokerName: "broker-a", Addrs: map[int64]string{2: "a:3"}, EnableActingMaster: true}},
			}),
		}},
		{"promoted replica drops its old id", []step{
			register(reg(c, "broker-a", 0, "a:1", topic("T", 4))),
			register(reg(c, "broker-a", 1, "a:2")),
			unregister(c, "broker-a", "a:1", 0),
			register(reg(c, "broker-a", 0, "a:2", topic("T", 4))),
			route("T", &Route{Queues: []QueueData{qd("broker-a", 4, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "a:2"})}}),
		}},
		{"stale state version is refused", []step{
			register(BrokerRegistration{Cluster: c, BrokerName: "broker-a", Addr: "a:1", DataVersion: DataVersion{StateVersion: 5}, Topics: []TopicConfig{topic("T", 4)}}),
			registerFails(BrokerRegistration{Cluster: c, BrokerName: "broker-a", Addr: "a:9", DataVersion: DataVersion{StateVersion: 4}, Topics: []TopicConfig{topic("T", 1)}}, ErrStale),
			route("T", &Route{Queues: []QueueData{qd("broker-a", 4, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "a:1"})}}),
			register(BrokerRegistration{Cluster: c, BrokerName: "broker-a", Addr: "a:9", DataVersion: DataVersion{StateVersion: 5}, Topics: []TopicConfig{topic("T", 1)}}),
			route("T", &Route{Queues: []QueueData{qd("broker-a", 1, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "a:9"})}}),
		}},
		{"silent brokers expire", []step{
			register(reg(c, "broker-a", 0, "a:1", topic("T", 4))),
			register(BrokerRegistration{Cluster: c, BrokerName: "broker-b", Addr: "b:1", Timeout: 10 * time.Second, Topics: []TopicConfig{topic("T", 4)}}),
			advance(10 * time.Second),
			expire(), // exactly at the timeout is still alive
			advance(time.Millisecond),
			expire("broker-b/0@b:1"),
			route("T", &Route{Queues: []QueueData{qd("broker-a", 4, rw)}, Brokers: []BrokerData{bd(c, "broker-a", map[int64]string{0: "a:1"})}}),
			advance(100 * time.Second),
			register(reg(c, "broker-a", 0, "a:1", topic("T", 4))), // refreshes
			advance(100 * time.Second),
			expire(),
			advance(21 * time.Second),
			expire("broker-a/0@a:1"),
			topics(),
		}},
		{"invalid registrations", []step{
			registerFails(BrokerRegistration{BrokerName: "b", Addr: "a:1"}, ErrInvalid),
			registerFails(BrokerRegistration{Cluster: c, Addr: "a:1"}, ErrInvalid),
			registerFails(BrokerRegistration{Cluster: c, BrokerName: "b"}, ErrInvalid),
			registerFails(BrokerRegistration{Cluster: c, BrokerName: "b", Addr: "a:1", BrokerID: -1}, ErrInvalid),
			registerFails(reg(c, "b", 0, "a:1", TopicConfig{}), ErrInvalid),
			topics(),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, clk := newTable()
			for _, s := range tc.steps {
				s(t, tb, clk)
			}
		})
	}
}

func TestClusterInfoAndDelete(t *testing.T) {
	tb, _ := newTable()
	for _, r := range []BrokerRegistration{
		reg("c1", "a", 0, "a:1", topic("T", 4), topic("U", 4)),
		reg("c1", "a", 1, "a:2"),
		reg("c2", "b", 0, "b:1", topic("T", 4), topic("V", 4)),
	} {
		if _, err := tb.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	want := ClusterInfo{
		Brokers: map[string]BrokerData{
			"a": bd("c1", "a", map[int64]string{0: "a:1", 1: "a:2"}),
			"b": bd("c2", "b", map[int64]string{0: "b:1"}),
		},
		Clusters: map[string][]string{"c1": {"a"}, "c2": {"b"}},
	}
	if got := tb.ClusterInfo(); !reflect.DeepEqual(got, want) {
		t.Errorf("cluster info %+v\nwant %+v", got, want)
	}
	if got := tb.TopicsByCluster("c1"); !reflect.DeepEqual(got, []string{"T", "U"}) {
		t.Errorf("topics of c1: %q", got)
	}
	if got := tb.TopicsByCluster("nope"); len(got) != 0 {
		t.Errorf("topics of unknown cluster: %q", got)
	}
	if got := tb.Brokers(); len(got) != 3 || got[0].Addr != "a:1" || got[1].Addr != "a:2" || got[2].Addr != "b:1" || got[1].HAAddr != "a:2-ha" {
		t.Errorf("brokers: %+v", got)
	}

	if !tb.DeleteTopicInCluster("T", "c1") || tb.DeleteTopicInCluster("T", "c1") {
		t.Error("delete T in c1 twice")
	}
	if r, ok := tb.Route("T"); !ok || len(r.Queues) != 1 || r.Queues[0].BrokerName != "b" {
		t.Errorf("T after delete in c1: %+v %v", r, ok)
	}
	if !tb.DeleteTopicInCluster("T", "c2") {
		t.Error("delete T in c2")
	}
	if _, ok := tb.Route("T"); ok {
		t.Error("T still routable")
	}
	if !tb.DeleteTopic("U") || tb.DeleteTopic("U") {
		t.Error("delete U twice")
	}
	if got := tb.Topics(); !reflect.DeepEqual(got, []string{"V"}) {
		t.Errorf("topics %q", got)
	}

	// The caller owns what it gets back.
	ci := tb.ClusterInfo()
	ci.Brokers["a"].Addrs[0] = "changed"
	r, _ := tb.Route("V")
	r.Brokers[0].Addrs[0] = "changed"
	if got := tb.ClusterInfo().Brokers["a"].Addrs[0]; got != "a:1" {
		t.Errorf("cluster info aliases the table: %q", got)
	}
	if r, _ := tb.Route("V"); r.Brokers[0].Addrs[0] != "b:1" {
		t.Errorf("route aliases the table: %q", r.Brokers[0].Addrs[0])
	}
}

// TestStableRoute checks that equal tables give equal routes however they
// were built: the Go client compares routes by value.
func TestStableRoute(t *testing.T) {
	names := []string{"broker-c", "broker-a", "broker-d", "broker-b"}
	var first Route
	for i := range 20 {
		tb, _ := newTable()
		for j := range names {
			n := names[(i+j)%len(names)]
			if _, err := tb.Register(reg("c", n, 0, n+":1", topic("T", 4))); err != nil {
				t.Fatal(err)
			}
		}
		r, ok := tb.Route("T")
		if !ok {
			t.Fatal("no route")
		}
		if i == 0 {
			first = r
			continue
		}
		if !reflect.DeepEqual(r, first) {
			t.Fatalf("route %d differs:\n%+v\n%+v", i, r, first)
		}
	}
	for i, q := range first.Queues {
		if q.BrokerName != first.Brokers[i].BrokerName || q.BrokerName != "broker-"+string(rune('a'+i)) {
			t.Fatalf("not sorted: %+v", first)
		}
	}
}

func TestConcurrent(t *testing.T) {
	tb, clk := newTable()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("broker-%d", w%4)
			for i := range 200 {
				r := reg("c", name, int64(w/4), fmt.Sprintf("%s:%d", name, w/4), topic("T", 4), topic(fmt.Sprintf("T%d", i%5), 2))
				if _, err := tb.Register(r); err != nil && !errors.Is(err, ErrStale) {
					t.Error(err)
					return
				}
				tb.Route("T")
				tb.ClusterInfo()
				tb.Topics()
				if i%50 == 0 {
					clk.advance(time.Second)
					tb.Expire(clk.Now())
				}
				if i%70 == 0 {
					tb.Unregister("c", name, fmt.Sprintf("%s:%d", name, w/4), int64(w/4))
				}
			}
		})
	}
	wg.Wait()
}

func TestKV(t *testing.T) {
	var kv KV // the zero value works
	if _, ok := kv.Get("ns", "k"); ok {
		t.Fatal("empty store has a key")
	}
	if _, ok := kv.List("ns"); ok {
		t.Fatal("empty store has a namespace")
	}
	kv.Put("ns", "k1", "v1")
	kv.Put("ns", "k2", "v2")
	kv.Put("ns", "k1", "v1b")
	kv.Put("other", "k", "")
	if v, ok := kv.Get("ns", "k1"); !ok || v != "v1b" {
		t.Errorf("get k1 = %q %v", v, ok)
	}
	if v, ok := kv.Get("other", "k"); !ok || v != "" {
		t.Errorf("empty value = %q %v", v, ok)
	}
	list, ok := kv.List("ns")
	if !ok || !reflect.DeepEqual(list, map[string]string{"k1": "v1b", "k2": "v2"}) {
		t.Errorf("list = %v %v", list, ok)
	}
	list["k3"] = "x" // a copy
	if _, ok := kv.Get("ns", "k3"); ok {
		t.Error("list aliases the store")
	}
	if got := kv.Namespaces(); !reflect.DeepEqual(got, []string{"ns", "other"}) {
		t.Errorf("namespaces %q", got)
	}
	if !kv.Delete("ns", "k1") || kv.Delete("ns", "k1") || kv.Delete("nope", "k") {
		t.Error("delete reports wrongly")
	}
	kv.Delete("ns", "k2")
	if _, ok := kv.List("ns"); ok {
		t.Error("empty namespace still listed")
	}

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				k := fmt.Sprint(i % 10)
				kv.Put("c", k, fmt.Sprint(w))
				kv.Get("c", k)
				kv.List("c")
				kv.Delete("c", k)
			}
		})
	}
	wg.Wait()
}

// perms returns the permission of each broker in topic's route.
func perms(t *testing.T, tb *Table, topic string) map[string]int32 {
	t.Helper()
	r, ok := tb.Route(topic)
	if !ok {
		t.Fatalf("no route for %s", topic)
	}
	out := map[string]int32{}
	for _, q := range r.Queues {
		out[q.BrokerName] = q.Perm
	}
	return out
}

// WipeWritePerm makes a group read-only in every topic, also through its
// later registrations, until AddWritePerm or until the group is gone.
func TestWritePerm(t *testing.T) {
	tb, _ := newTable()
	a := reg("c", "broker-a", 0, "10.0.0.1:10911", topic("T1", 4), topic("T2", 4))
	b := reg("c", "broker-b", 0, "10.0.0.2:10911", topic("T1", 4))
	for _, r := range []BrokerRegistration{a, b} {
		if _, err := tb.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	if n := tb.WipeWritePerm("broker-a"); n != 2 {
		t.Fatalf("wiped %d topics, want 2", n)
	}
	want := map[string]int32{"broker-a": PermRead, "broker-b": rw}
	if got := perms(t, tb, "T1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("T1 after the wipe: %v, want %v", got, want)
	}
	if _, err := tb.Register(a); err != nil {
		t.Fatal(err)
	}
	if got := perms(t, tb, "T2"); got["broker-a"] != PermRead {
		t.Fatalf("T2 after broker-a registered again: %v, want it still read-only", got)
	}

	if n := tb.AddWritePerm("broker-a"); n != 2 {
		t.Fatalf("added write to %d topics, want 2", n)
	}
	if got := perms(t, tb, "T2"); got["broker-a"] != rw {
		t.Fatalf("T2 after AddWritePerm: %v", got)
	}
	if _, err := tb.Register(a); err != nil {
		t.Fatal(err)
	}
	if got := perms(t, tb, "T1"); !reflect.DeepEqual(got, map[string]int32{"broker-a": rw, "broker-b": rw}) {
		t.Fatalf("T1 after broker-a registered again: %v", got)
	}

	// A group that goes and comes back writes again, as in Java.
	tb.WipeWritePerm("broker-a")
	tb.Unregister("c", "broker-a", "10.0.0.1:10911", 0)
	if _, err := tb.Register(a); err != nil {
		t.Fatal(err)
	}
	if got := perms(t, tb, "T1"); got["broker-a"] != rw {
		t.Fatalf("T1 after broker-a came back: %v", got)
	}
	if n := tb.WipeWritePerm("broker-x"); n != 0 {
		t.Fatalf("wiped %d topics of an unknown broker", n)
	}
}
