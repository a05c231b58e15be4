package frontend

import (
	"context"
	"strings"
	"testing"
)

func start(context.Context, Host) (func(context.Context) error, error) { return nil, nil }

func TestRegistryOrder(t *testing.T) {
	var r Registry
	for _, n := range []string{"namesrv", "remoting", "grpc", "mqtt"} {
		r.Register(Frontend{Name: n, Start: start})
	}
	var got []string
	for _, f := range r.All() {
		got = append(got, f.Name)
	}
	if want := "namesrv remoting grpc mqtt"; strings.Join(got, " ") != want {
		t.Errorf("All() = %v, want %s", got, want)
	}
}

func TestRegisterRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Frontend
	}{
		{"empty name", Frontend{Start: start}},
		{"upper case", Frontend{Name: "Remoting", Start: start}},
		{"underscore", Frontend{Name: "my_proto", Start: start}},
		{"reserved http", Frontend{Name: "http", Start: start}},
		{"no start", Frontend{Name: "mqtt"}},
		{"duplicate", Frontend{Name: "dup", Start: start}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Registry
			r.Register(Frontend{Name: "dup", Start: start})
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", tc.f)
				}
			}()
			r.Register(tc.f)
		})
	}
}

func TestAllIsACopy(t *testing.T) {
	var r Registry
	r.Register(Frontend{Name: "a", Start: start})
	all := r.All()
	all[0].Name = "changed"
	if r.All()[0].Name != "a" {
		t.Error("All exposes the registry's slice")
	}
}
