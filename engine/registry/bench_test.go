package registry

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// benchHeartbeats returns the steady-state heartbeats of n push consumers
// of one group (a topic plus the retry topic, as remoting clients send),
// each also a producer.
func benchHeartbeats(n int) []Heartbeat {
	hbs := make([]Heartbeat, n)
	for i := range hbs {
		hbs[i] = Heartbeat{
			Client:    ClientID(fmt.Sprintf("10.0.0.%d@%d#1700000000000000000", i%250, i)),
			Protocol:  "remoting",
			Conn:      &testConn{fmt.Sprintf("10.0.0.%d:%d", i%250, 40000+i)},
			Producers: []string{"pg"},
			Consumers: []Consumer{{
				Group: "cg",
				Subscriptions: []Subscription{
					tagSub("TopicA", "tagA || tagB", 1700000000000000000),
					tagSub("%RETRY%cg", "*", 1700000000000000001),
				},
			}},
		}
	}
	return hbs
}

// BenchmarkHeartbeat measures a repeated heartbeat: the common case, which
// changes nothing but the client's last-seen time.
func BenchmarkHeartbeat(b *testing.B) {
	hbs := benchHeartbeats(1000)
	r := New(Options{})
	for _, hb := range hbs {
		r.Heartbeat(hb)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if r.Heartbeat(hbs[i%len(hbs)]) != nil {
			b.Fatal("steady heartbeat reported a change")
		}
	}
}

func BenchmarkHeartbeatParallel(b *testing.B) {
	hbs := benchHeartbeats(1000)
	r := New(Options{})
	for _, hb := range hbs {
		r.Heartbeat(hb)
	}
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Heartbeat(hbs[next.Add(1)%uint64(len(hbs))])
		}
	})
}

// BenchmarkHeartbeatJoinLeave measures a client joining and leaving a
// group of 100, which recomputes subscriptions and records changes.
func BenchmarkHeartbeatJoinLeave(b *testing.B) {
	hbs := benchHeartbeats(101)
	r := New(Options{})
	for _, hb := range hbs[:100] {
		r.Heartbeat(hb)
	}
	leave := Heartbeat{Client: hbs[100].Client}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.Heartbeat(hbs[100])
		r.Heartbeat(leave)
	}
}

// BenchmarkLock measures lockAll: a client renewing its 16 queues.
func BenchmarkLock(b *testing.B) {
	r := New(Options{})
	qs := make([]Queue, 16)
	for i := range qs {
		qs[i] = Queue{Topic: "TopicA", Broker: "broker-a", ID: int32(i)}
	}
	r.Lock("cg", "client", qs)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if len(r.Lock("cg", "client", qs)) != len(qs) {
			b.Fatal("lost a lock")
		}
	}
}

// BenchmarkLockParallel: many clients renewing their own queues at once.
func BenchmarkLockParallel(b *testing.B) {
	r := New(Options{})
	var next atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := next.Add(1)
		id := ClientID(fmt.Sprint(n))
		qs := make([]Queue, 4)
		for i := range qs {
			qs[i] = Queue{Topic: "TopicA", Broker: "broker-a", ID: n*4 + int32(i)}
		}
		for pb.Next() {
			r.Lock("cg", id, qs)
		}
	})
}

func BenchmarkAllocateAveragely(b *testing.B) {
	qs := queueIDs(64)
	cs := cids(10)
	b.ReportAllocs()
	for b.Loop() {
		AllocateAveragely(qs, cs, cs[3])
	}
}
