package server

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
)

// testOptions returns options for the fakes of infos, sharing log, with a
// fresh data directory, the HTTP endpoint off and every listener on a
// loopback port chosen at run time.
func testOptions(t *testing.T, log *[]string, args []string, infos ...ModuleInfo) *Options {
	t.Helper()
	o, err := registry(log, infos...).NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "off"}
	for _, mi := range infos {
		if mi.DefaultAddr != "" {
			all = append(all, "--"+mi.name()+"-addr", "127.0.0.1:0")
		}
	}
	if err := o.Flags.Parse(append(all, args...)); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestLifeCycleOrder(t *testing.T) {
	var log []string
	o := testOptions(t, &log, nil,
		ModuleInfo{ID: "t.c", DefaultAddr: ":0", Deps: []Dependency{{ID: "t.b"}}},
		ModuleInfo{ID: "t.a"},
		ModuleInfo{ID: "t.b", Deps: []Dependency{{ID: "t.z", Optional: true}}},
	)
	var ann bytes.Buffer
	o.Announce = &ann
	s, err := New(*o)
	if err != nil {
		t.Fatal(err)
	}
	if s.State() != Starting {
		t.Errorf("state after New: %v", s.State())
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s.State() != Ready || s.Engine() == nil || s.Addr("c") == nil {
		t.Errorf("after Start: state %v, engine %v, addr of c %v", s.State(), s.Engine(), s.Addr("c"))
	}
	if !strings.Contains(ann.String(), "karman: c listening on 127.0.0.1:") || !strings.HasSuffix(ann.String(), "karman: ready\n") {
		t.Errorf("announced %q", ann.String())
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s.State() != Stopping || s.Engine() != nil {
		t.Errorf("after Stop: state %v, engine %v", s.State(), s.Engine())
	}
	want := "provision t.a,validate t.a,provision t.b,validate t.b,provision t.c,validate t.c," +
		"start t.a,start t.b,start t.c,stop t.c,stop t.b,stop t.a"
	if got := strings.Join(log, ","); got != want {
		t.Errorf("life cycle\n got %s\nwant %s", got, want)
	}
	if err := s.Stop(ctx); err != nil { // a second Stop is a no-op
		t.Fatal(err)
	}
	if len(log) != 12 {
		t.Errorf("second Stop ran steps: %v", log[12:])
	}
}

func TestStartFailureStopsStarted(t *testing.T) {
	var log []string
	o := testOptions(t, &log, nil, ModuleInfo{ID: "t.a"}, ModuleInfo{ID: "t.b"}, ModuleInfo{ID: "t.c"})
	o.Modules[1].(*fake).fail = "start"
	s, err := New(*o)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "start t.b: start failed") {
		t.Fatalf("Start: %v, want t.b's failure", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(log[6:], ","), "start t.a,start t.b,stop t.a"; got != want {
		t.Errorf("after a failed start: %s, want %s", got, want)
	}
	// The engine was closed: the data directory opens again.
	e, err := engine.Open(o.Config.Data, &engine.Options{SegmentSize: 64 << 20})
	if err != nil {
		t.Fatalf("reopen after a failed start: %v", err)
	}
	e.Close()
}

// TestNewErrors checks the errors New finds before binding any port.
func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		infos []ModuleInfo
		fail  string // step of the first module to fail
		err   error
		msg   string
	}{
		{"required dependency turned off", []string{"--b-addr", "off"}, []ModuleInfo{
			{ID: "t.a", Deps: []Dependency{{ID: "t.b"}}}, {ID: "t.b", DefaultAddr: ":0"},
		}, "", ErrMissingDependency, "module t.a requires t.b, which is turned off"},
		{"provision fails", nil, []ModuleInfo{{ID: "t.a"}}, "provision", nil, "provision t.a: provision failed"},
		{"validate fails", nil, []ModuleInfo{{ID: "t.a"}}, "validate", nil, "t.a: validate failed"},
		{"bad config", []string{"--default-queues", "0"}, []ModuleInfo{{ID: "t.a"}}, "", nil, "--default-queues 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			o := testOptions(t, &log, tc.args, tc.infos...)
			o.Modules[0].(*fake).fail = tc.fail
			_, err := New(*o)
			if err == nil || tc.err != nil && !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("New: %v, want %v containing %q", err, tc.err, tc.msg)
			}
			for _, l := range log {
				if strings.HasPrefix(l, "start") {
					t.Errorf("a module started: %v", log)
				}
			}
		})
	}
}

// TestRunStopsOnCancel checks that Run returns nil once its context is
// done, after stopping every module.
func TestRunStopsOnCancel(t *testing.T) {
	var log []string
	o := testOptions(t, &log, nil, ModuleInfo{ID: "t.a"})
	ready := make(chan struct{})
	o.Announce = writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "karman: ready") {
			close(ready)
		}
		return len(p), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, *o) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, ","); !strings.HasSuffix(got, "start t.a,stop t.a") {
		t.Errorf("life cycle %s", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// cleaner is a fake that also cleans up.
type cleaner struct{ fake }

func (c *cleaner) Cleanup() error { return c.step("cleanup") }

var _ Cleaner = (*cleaner)(nil)

// TestCleanup checks that provisioned modules clean up, in reverse order
// and once: after a server stops, when a never-started server is
// stopped, and when New fails after provisioning some of them.
func TestCleanup(t *testing.T) {
	newServer := func(log *[]string, failValidate ModuleID) (*Server, error) {
		r := &Registry{}
		for _, id := range []ModuleID{"t.a", "t.b"} {
			mi := ModuleInfo{ID: id}
			if id == "t.b" {
				mi.Deps = []Dependency{{ID: "t.a"}}
			}
			mi.New = func() Module {
				c := &cleaner{fake{info: mi, log: log}}
				if id == failValidate {
					c.fail = "validate"
				}
				return c
			}
			r.Register(mi)
		}
		o, err := r.NewOptions()
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Flags.Parse([]string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "off"}); err != nil {
			t.Fatal(err)
		}
		return New(*o)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fail  ModuleID
		start bool
		want  string
	}{
		{"started and stopped", "", true,
			"provision t.a,validate t.a,provision t.b,validate t.b,start t.a,start t.b,stop t.b,stop t.a,cleanup t.b,cleanup t.a"},
		{"stopped unstarted", "", false,
			"provision t.a,validate t.a,provision t.b,validate t.b,cleanup t.b,cleanup t.a"},
		{"New fails", "t.b", false,
			"provision t.a,validate t.a,provision t.b,validate t.b,cleanup t.b,cleanup t.a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			s, err := newServer(&log, tc.fail)
			if (err != nil) != (tc.fail != "") {
				t.Fatalf("New: %v", err)
			}
			if s != nil {
				if tc.start {
					if err := s.Start(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				s.Stop(ctx) // once only
			}
			if got := strings.Join(log, ","); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
