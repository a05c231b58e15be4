package karmancmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/karmanmq/karman/server"
)

func TestListModules(t *testing.T) {
	reg := &server.Registry{}
	(&echo{}).register(reg, "zeta", ":0")
	(&echo{}).register(reg, "alpha", "")
	bi := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/custom", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/karmanmq/karman", Version: "v0.0.1"},
			{Path: "github.com/karmanmq/karman/cmd/karman", Version: "v0.3.0"},
		},
	}
	got := listModules(reg, bi)
	want := []moduleEntry{
		{ID: "test.alpha", Package: "github.com/karmanmq/karman/cmd/karman/karmancmd", Module: "github.com/karmanmq/karman/cmd/karman", Version: "v0.3.0"},
		{ID: "test.zeta", Package: "github.com/karmanmq/karman/cmd/karman/karmancmd", Module: "github.com/karmanmq/karman/cmd/karman", Version: "v0.3.0"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("listModules\n got %+v\nwant %+v", got, want)
	}

	for _, args := range [][]string{{"list-modules"}, {"list-modules", "--json"}} {
		root := New(reg)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if len(args) == 1 {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "test.alpha ") || !strings.HasPrefix(lines[1], "test.zeta ") ||
				!strings.HasSuffix(lines[0], " github.com/karmanmq/karman/cmd/karman/karmancmd") {
				t.Errorf("list-modules printed %q", out.String())
			}
			continue
		}
		var entries []moduleEntry
		if err := json.Unmarshal(out.Bytes(), &entries); err != nil || len(entries) != 2 || entries[0].ID != "test.alpha" || entries[0].Version == "" {
			t.Errorf("list-modules --json printed %q (%v)", out.String(), err)
		}
	}
}

// TestServeRefusesBadModulesBeforeBinding checks that a missing
// dependency and a flag claimed twice fail serve before any listener is
// bound or announced.
func TestServeRefusesBadModulesBeforeBinding(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(reg *server.Registry)
		err   error
	}{
		{"missing dependency", func(reg *server.Registry) {
			e := &echo{}
			e.register(reg, "echo", "127.0.0.1:0")
			reg.Register(server.ModuleInfo{ID: "test.needy", Deps: []server.Dependency{{ID: "test.absent"}},
				New: func() server.Module { return e }})
		}, server.ErrMissingDependency},
		{"flag claimed twice", func(reg *server.Registry) {
			(&echo{}).register(reg, "echo", "127.0.0.1:0")
			e := &echo{}
			e.info = server.ModuleInfo{ID: "test.other", Name: "echo", DefaultAddr: "127.0.0.1:0"}
			reg.Register(server.ModuleInfo{ID: e.info.ID, Name: "echo", DefaultAddr: "127.0.0.1:0", New: func() server.Module { return e }})
		}, server.ErrFlagConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &server.Registry{}
			tc.setup(reg)
			root := New(reg)
			var out, errOut bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errOut)
			root.SetArgs([]string{"serve", "--data", t.TempDir(), "--http-addr", "127.0.0.1:0"})
			err := root.Execute()
			if !errors.Is(err, tc.err) {
				t.Errorf("serve: %v, want %v", err, tc.err)
			}
			if strings.Contains(out.String(), "listening") {
				t.Errorf("serve bound a listener before failing: %q", out.String())
			}
		})
	}
}

// TestLinksNoModule checks that the command line links no module and no
// gRPC: a custom binary chooses its modules.
func TestLinksNoModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/karmanmq/karman/server/modules/") || strings.HasPrefix(pkg, "google.golang.org/grpc") ||
			strings.HasPrefix(pkg, "github.com/karmanmq/karman/protocol/grpc") {
			t.Errorf("karmancmd links %s", pkg)
		}
	}
}
