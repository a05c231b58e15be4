package namesrv

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// topicSet is a broker's topic set that tests change.
type topicSet struct {
	mu sync.Mutex
	ts []TopicConfig
}

func (s *topicSet) get() []TopicConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slicesClone(s.ts)
}

func (s *topicSet) set(ts ...TopicConfig) {
	s.mu.Lock()
	s.ts = ts
	s.mu.Unlock()
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func lastRegistration(f *fixture) (Registration, int) {
	regs := f.routes.registrations()
	if len(regs) == 0 {
		return Registration{}, 0
	}
	return regs[len(regs)-1], len(regs)
}

// checkGoroutines fails when the goroutine count does not fall back to
// base.
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRegistrar(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "compressed"}[compressed], func(t *testing.T) {
			ns1 := startNamesrv(t, Options{})
			ns2 := startNamesrv(t, Options{})
			base := runtime.NumGoroutine()
			var topics topicSet
			topics.set(topicCfg("TopicB", 2), topicCfg("TopicA", 4))
			var attempts, failures atomic.Int64
			r, err := NewRegistrar(RegistrarOptions{
				NameServers:   []string{ns1.addr, ns2.addr},
				BrokerName:    "broker-a",
				BrokerAddr:    "127.0.0.1:10911",
				HAAddr:        "127.0.0.1:10912",
				Topics:        topics.get,
				Interval:      time.Hour, // only Start and Trigger register
				BrokerTimeout: 45 * time.Second,
				Compressed:    compressed,
				OnRegister: func(ns string, _ RegisterResult, err error) {
					attempts.Add(1)
					if err != nil {
						failures.Add(1)
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			r.Start()
			r.Start() // no effect
			for _, f := range []*fixture{ns1, ns2} {
				waitFor(t, "first registration", func() bool { _, n := lastRegistration(f); return n == 1 })
				got, _ := lastRegistration(f)
				if got.Cluster != DefaultCluster || got.BrokerName != "broker-a" || got.BrokerID != 0 || got.Addr != "127.0.0.1:10911" ||
					got.HAAddr != "127.0.0.1:10912" || got.Partial || got.Timeout != 45*time.Second || got.DataVersion.Counter != 0 ||
					len(got.Topics) != 2 || got.Topics[0].TopicName != "TopicA" || got.Topics[1].TopicName != "TopicB" {
					t.Errorf("first registration %+v", got)
				}
			}

			topics.set(topicCfg("TopicA", 4), topicCfg("TopicC", 1))
			r.Trigger()
			for _, f := range []*fixture{ns1, ns2} {
				waitFor(t, "registration after Trigger", func() bool { _, n := lastRegistration(f); return n == 2 })
				got, _ := lastRegistration(f)
				if got.DataVersion.Counter != 1 || len(got.Topics) != 2 || got.Topics[1].TopicName != "TopicC" {
					t.Errorf("second registration %+v", got)
				}
				if _, ok := f.routes.Route("TopicB"); ok {
					t.Error("TopicB still routed after a complete registration without it")
				}
			}

			if err := r.RegisterAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := attempts.Load(); n != 6 || failures.Load() != 0 {
				t.Errorf("%d attempts, %d failures; want 6, 0", n, failures.Load())
			}

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := r.Close(ctx); err != nil {
				t.Fatal(err)
			}
			for _, f := range []*fixture{ns1, ns2} {
				if _, ok := f.routes.Route("TopicA"); ok {
					t.Error("still routed after Close")
				}
			}
			if err := r.Close(ctx); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := r.RegisterAll(ctx); !errors.Is(err, ErrRegistrarClosed) {
				t.Errorf("RegisterAll after Close: %v", err)
			}
			checkGoroutines(t, base)
		})
	}
}

func TestRegistrarReconnects(t *testing.T) {
	// Reserve an address, then leave it unserved.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var mu sync.Mutex
	var errs []error
	var ok int
	r, err := NewRegistrar(RegistrarOptions{
		NameServers: []string{addr},
		BrokerName:  "broker-a",
		BrokerAddr:  "127.0.0.1:10911",
		Topics:      func() []TopicConfig { return []TopicConfig{topicCfg("T", 1)} },
		Interval:    time.Hour,
		MinBackoff:  10 * time.Millisecond,
		MaxBackoff:  50 * time.Millisecond,
		OnRegister: func(_ string, _ RegisterResult, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				ok++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if err := r.RegisterAll(context.Background()); err == nil {
		t.Fatal("RegisterAll with no name server up succeeded")
	}
	r.Start()
	waitFor(t, "a few failed attempts", func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) >= 3 })

	f := startNamesrvOn(t, addr, Options{})
	waitFor(t, "registration once the name server is up", func() bool { _, n := lastRegistration(f); return n >= 1 })

	// The name server restarts: the next registration re-dials.
	f.stop()
	f2 := startNamesrvOn(t, addr, Options{})
	r.Trigger()
	waitFor(t, "registration with the restarted name server", func() bool { _, n := lastRegistration(f2); return n >= 1 })
	if _, ok := f2.routes.Route("T"); !ok {
		t.Error("not routed by the restarted name server")
	}
}

func TestRegistrarReplicaLearnsMaster(t *testing.T) {
	f := startNamesrv(t, Options{})
	topics := func() []TopicConfig { return []TopicConfig{topicCfg("T", 4)} }
	master, err := NewRegistrar(RegistrarOptions{NameServers: []string{f.addr}, BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911",
		HAAddr: "127.0.0.1:10912", Topics: topics, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close(context.Background())
	if err := master.RegisterAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make(chan RegisterResult, 1)
	replica, err := NewRegistrar(RegistrarOptions{NameServers: []string{f.addr}, BrokerName: "broker-a", BrokerID: 1, BrokerAddr: "127.0.0.1:20911",
		Topics: topics, Interval: time.Hour,
		OnRegister: func(_ string, res RegisterResult, err error) {
			if err == nil {
				got <- res
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close(context.Background())
	replica.Start()
	select {
	case res := <-got:
		if res != (RegisterResult{MasterAddr: "127.0.0.1:10911", MasterHAAddr: "127.0.0.1:10912"}) {
			t.Errorf("replica result %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("replica did not register")
	}
}

func TestRegistrarRefused(t *testing.T) {
	f := startNamesrv(t, Options{})
	f.routes.mu.Lock()
	f.routes.refuse = errors.New("no thanks")
	f.routes.mu.Unlock()
	r, err := NewRegistrar(RegistrarOptions{NameServers: []string{f.addr}, BrokerName: "b", BrokerAddr: "127.0.0.1:1",
		Topics: func() []TopicConfig { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	err = r.RegisterAll(context.Background())
	var re *ResponseError
	if !errors.As(err, &re) || re.Code != wire.SystemError || !strings.Contains(re.Remark, "no thanks") || re.NameServer != f.addr {
		t.Errorf("refused registration: %v", err)
	}
}

func TestRegistrarOptions(t *testing.T) {
	topics := func() []TopicConfig { return nil }
	for _, tc := range []struct {
		opts RegistrarOptions
		want string
	}{
		{RegistrarOptions{BrokerName: "b", BrokerAddr: "a:1", Topics: topics}, "no name server"},
		{RegistrarOptions{NameServers: []string{""}, BrokerName: "b", BrokerAddr: "a:1", Topics: topics}, "empty name server"},
		{RegistrarOptions{NameServers: []string{"n:1"}, BrokerAddr: "a:1", Topics: topics}, "broker name"},
		{RegistrarOptions{NameServers: []string{"n:1"}, BrokerName: "b", Topics: topics}, "broker address"},
		{RegistrarOptions{NameServers: []string{"n:1"}, BrokerName: "b", BrokerAddr: "a:1", BrokerID: -1, Topics: topics}, "negative"},
		{RegistrarOptions{NameServers: []string{"n:1"}, BrokerName: "b", BrokerAddr: "a:1"}, "Topics"},
	} {
		if _, err := NewRegistrar(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %q", tc.opts, err, tc.want)
		}
	}
}

// With Role, each registration carries the broker id and state version
// the broker has at that moment.
func TestRegistrarRole(t *testing.T) {
	f := startNamesrv(t, Options{})
	var id, version atomic.Int64
	id.Store(2)
	version.Store(1)
	r, err := NewRegistrar(RegistrarOptions{NameServers: []string{f.addr}, BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911",
		Topics: func() []TopicConfig { return []TopicConfig{topicCfg("T", 4)} }, Interval: time.Hour,
		Role: func() (int64, int64) { return id.Load(), version.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	for _, step := range []struct{ id, version int64 }{{2, 1}, {0, 2}} {
		id.Store(step.id)
		version.Store(step.version)
		if err := r.RegisterAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		reg, _ := lastRegistration(f)
		if reg.BrokerID != step.id || reg.DataVersion.StateVersion != step.version {
			t.Fatalf("registered as id %d, state version %d; want %d, %d", reg.BrokerID, reg.DataVersion.StateVersion, step.id, step.version)
		}
	}
}
