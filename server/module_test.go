package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// fake is a test module: it records the life-cycle calls into a shared
// log, and fails the step named in fail.
type fake struct {
	info  ModuleInfo
	log   *[]string
	fail  string
	flags []string // flags it binds, besides its address
	value string
}

func (f *fake) KarmanModule() ModuleInfo { return f.info }

func (f *fake) BindFlags(fs *pflag.FlagSet) {
	for _, n := range f.flags {
		fs.StringVar(&f.value, n, "", "test flag")
	}
}

func (f *fake) step(name string) error {
	*f.log = append(*f.log, name+" "+string(f.info.ID))
	if f.fail == name {
		return errors.New(name + " failed")
	}
	return nil
}

func (f *fake) Provision(ProvisionContext) error { return f.step("provision") }
func (f *fake) Validate() error                  { return f.step("validate") }
func (f *fake) Start(_ context.Context, h Host) error {
	if h.Listener != nil {
		defer h.Listener.Close()
	}
	return f.step("start")
}
func (f *fake) Stop(context.Context) error { return f.step("stop") }

var (
	_ FlagBinder  = (*fake)(nil)
	_ Provisioner = (*fake)(nil)
	_ Validator   = (*fake)(nil)
	_ Starter     = (*fake)(nil)
	_ Stopper     = (*fake)(nil)
)

// registry returns a registry of fakes sharing log; each info's New makes
// a fake with that info.
func registry(log *[]string, infos ...ModuleInfo) *Registry {
	r := &Registry{}
	for _, mi := range infos {
		mi.New = func() Module { return &fake{info: mi, log: log} }
		r.Register(mi)
	}
	return r
}

func ids(infos []ModuleInfo) string {
	var s []string
	for _, mi := range infos {
		s = append(s, string(mi.ID))
	}
	return strings.Join(s, " ")
}

func TestModuleID(t *testing.T) {
	for _, tc := range []struct{ id, ns, name string }{
		{"frontend.remoting", "frontend", "remoting"},
		{"connector.kafka.sink", "connector.kafka", "sink"},
	} {
		if id := ModuleID(tc.id); id.Namespace() != tc.ns || id.Name() != tc.name {
			t.Errorf("%s: Namespace %q Name %q, want %q %q", tc.id, id.Namespace(), id.Name(), tc.ns, tc.name)
		}
	}
}

func TestResolveOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		infos []ModuleInfo
		want  string
	}{
		{"standard set", []ModuleInfo{
			{ID: "frontend.grpc", Deps: []Dependency{{ID: "frontend.remoting", Optional: true}}},
			{ID: "frontend.remoting", Deps: []Dependency{{ID: "frontend.namesrv", Optional: true}}},
			{ID: "frontend.namesrv"},
		}, "frontend.namesrv frontend.remoting frontend.grpc"},
		{"no deps: by id", []ModuleInfo{{ID: "b.b"}, {ID: "a.z"}, {ID: "a.a"}}, "a.a a.z b.b"},
		{"chain against id order", []ModuleInfo{
			{ID: "a.a", Deps: []Dependency{{ID: "a.b"}}},
			{ID: "a.b", Deps: []Dependency{{ID: "a.c"}}},
			{ID: "a.c"},
		}, "a.c a.b a.a"},
		{"optional dependency absent", []ModuleInfo{
			{ID: "x.a", Deps: []Dependency{{ID: "x.gone", Optional: true}}},
		}, "x.a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			got, err := registry(&log, tc.infos...).Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if ids(got) != tc.want {
				t.Errorf("order %q, want %q", ids(got), tc.want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		infos []ModuleInfo
		ids   []ModuleID
		err   error
		msg   string
	}{
		{"unknown id", []ModuleInfo{{ID: "frontend.remoting"}}, []ModuleID{"frontend.nope"}, ErrUnknownModule,
			`unknown module "frontend.nope" (registered: frontend.remoting)`},
		{"missing required dependency", []ModuleInfo{{ID: "frontend.grpc", Deps: []Dependency{{ID: "frontend.remoting"}}}}, nil,
			ErrMissingDependency, "module frontend.grpc requires frontend.remoting, which is not compiled in or not selected"},
		{"dependency not selected", []ModuleInfo{{ID: "a.a", Deps: []Dependency{{ID: "a.b"}}}, {ID: "a.b"}}, []ModuleID{"a.a"},
			ErrMissingDependency, "module a.a requires a.b"},
		{"cycle", []ModuleInfo{
			{ID: "a.a", Deps: []Dependency{{ID: "a.b"}}},
			{ID: "a.b", Deps: []Dependency{{ID: "a.a"}}},
			{ID: "a.c"},
		}, nil, ErrDependencyCycle, "modules a.a, a.b: dependency cycle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			r := registry(&log, tc.infos...)
			_, err := r.Resolve(tc.ids...)
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Resolve: %v, want %v containing %q", err, tc.err, tc.msg)
			}
			if _, err := r.NewOptions(tc.ids...); !errors.Is(err, tc.err) {
				t.Errorf("NewOptions: %v, want %v", err, tc.err)
			}
		})
	}
}

func TestNewOptionsFlags(t *testing.T) {
	var log []string
	r := &Registry{}
	r.Register(ModuleInfo{ID: "frontend.remoting", Name: "broker", DefaultAddr: ":10911", New: func() Module {
		return &fake{info: ModuleInfo{ID: "frontend.remoting", Name: "broker", DefaultAddr: ":10911"}, log: &log, flags: []string{"broker-name"}}
	}})
	o, err := r.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Flags.Parse([]string{"--broker-addr", "127.0.0.1:1", "--broker-name", "b1", "--data", "/d"}); err != nil {
		t.Fatal(err)
	}
	if a, _ := o.Config.Addr("broker"); a != "127.0.0.1:1" || o.Config.Data != "/d" || o.Modules[0].(*fake).value != "b1" {
		t.Errorf("flags did not reach the config and module: addr %q data %q name %q", a, o.Config.Data, o.Modules[0].(*fake).value)
	}
}

func TestNewOptionsFlagConflicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b fake
		msg  string
	}{
		{"two modules one flag", fake{info: ModuleInfo{ID: "x.a", Name: "x"}, flags: []string{"x-size"}},
			fake{info: ModuleInfo{ID: "x.b", Name: "x"}, flags: []string{"x-size"}},
			"module x.b: flag --x-size is module x.a's already"},
		{"two modules one address", fake{info: ModuleInfo{ID: "x.a", Name: "x", DefaultAddr: ":1"}},
			fake{info: ModuleInfo{ID: "x.b", Name: "x", DefaultAddr: ":2"}},
			"module x.b: flag --x-addr is module x.a's already"},
		{"a server flag", fake{info: ModuleInfo{ID: "x.a"}, flags: []string{"a-ok"}},
			fake{info: ModuleInfo{ID: "x.http", DefaultAddr: ":2"}},
			"module x.http: flag --http-addr is the server's already"},
		{"outside its prefix", fake{info: ModuleInfo{ID: "x.a"}},
			fake{info: ModuleInfo{ID: "x.b"}, flags: []string{"data-dir"}},
			`module x.b: flag --data-dir is neither --b nor starts with "b-"`},
		{"one module twice", fake{info: ModuleInfo{ID: "x.a"}},
			fake{info: ModuleInfo{ID: "x.b"}, flags: []string{"b-x", "b-x"}},
			"module x.b: x.b flag redefined: b-x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Registry{}
			for _, f := range []fake{tc.a, tc.b} {
				r.Register(ModuleInfo{ID: f.info.ID, Name: f.info.Name, DefaultAddr: f.info.DefaultAddr,
					New: func() Module { g := f; return &g }})
			}
			_, err := r.NewOptions()
			if !errors.Is(err, ErrFlagConflict) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("NewOptions: %v, want ErrFlagConflict containing %q", err, tc.msg)
			}
		})
	}
}

func TestRegisterRejects(t *testing.T) {
	newFake := func() Module { return &fake{} }
	for _, tc := range []struct {
		name string
		mi   ModuleInfo
	}{
		{"no namespace", ModuleInfo{ID: "remoting", New: newFake}},
		{"upper case", ModuleInfo{ID: "frontend.Remoting", New: newFake}},
		{"underscore", ModuleInfo{ID: "frontend.my_proto", New: newFake}},
		{"bad name", ModuleInfo{ID: "frontend.x", Name: "X", New: newFake}},
		{"no New", ModuleInfo{ID: "frontend.mqtt"}},
		{"duplicate", ModuleInfo{ID: "frontend.dup", New: newFake}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Registry
			r.Register(ModuleInfo{ID: "frontend.dup", New: newFake})
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", tc.mi)
				}
			}()
			r.Register(tc.mi)
		})
	}
}
