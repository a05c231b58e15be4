package builder

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

// TestStandardMatchesRegistry holds Standard to what importing the
// standard set registers: the same ids, each from the listed package.
func TestStandardMatchesRegistry(t *testing.T) {
	var got []StandardModule
	for _, mi := range server.Default.Modules() {
		typ := reflect.TypeOf(mi.New())
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		got = append(got, StandardModule{ID: string(mi.ID), Package: typ.PkgPath()})
	}
	if !slices.Equal(got, Standard) {
		t.Errorf("server/modules/standard registers\n%v\nStandard lists\n%v", got, Standard)
	}
}

func TestParseModule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Module
		err  error
	}{
		{"example.com/karman-echo", Module{Path: "example.com/karman-echo"}, nil},
		{"example.com/karman-echo@v1.2.3", Module{Path: "example.com/karman-echo", Version: "v1.2.3"}, nil},
		{"example.com/karman-echo/sub@main", Module{Path: "example.com/karman-echo/sub", Version: "main"}, nil},
		{"example.com/karman-echo=../echo", Module{Path: "example.com/karman-echo", Dir: "../echo"}, nil},
		{"example.com/e@v1.0.0=./e", Module{Path: "example.com/e", Version: "v1.0.0", Dir: "./e"}, nil},
		{"echo=./e", Module{Path: "echo", Dir: "./e"}, nil}, // a local module needs no domain
		{"github.com/A/B_c~d+e", Module{Path: "github.com/A/B_c~d+e"}, nil},
		{"", Module{}, ErrInvalidPath},
		{"echo", Module{}, ErrInvalidPath},                  // no dot: cannot be fetched
		{"Example.com/echo", Module{}, ErrInvalidPath},      // upper-case domain
		{"-x.com/echo", Module{}, ErrInvalidPath},           // leading dash
		{"./testdata/echo", Module{}, ErrInvalidPath},       // a file path
		{"/abs/echo", Module{}, ErrInvalidPath},             // a file path
		{"example.com//echo", Module{}, ErrInvalidPath},     // empty element
		{"example.com/../echo", Module{}, ErrInvalidPath},   // dot-dot
		{"example.com/.echo", Module{}, ErrInvalidPath},     // leading dot
		{"example.com/echo/", Module{}, ErrInvalidPath},     // trailing slash
		{"example.com/ec ho", Module{}, ErrInvalidPath},     // space
		{"example.com/échø", Module{}, ErrInvalidPath},      // not ASCII
		{"example.com/echo@", Module{}, ErrInvalidPath},     // empty version
		{"example.com/echo@v1 x", Module{}, ErrInvalidPath}, // space in version
		{"example.com/echo@v1@v2", Module{}, ErrInvalidPath},
		{"example.com/echo=", Module{}, ErrLocalModule}, // empty directory
	} {
		got, err := ParseModule(tc.in)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("ParseModule(%q) = %+v, %v; want %+v, %v", tc.in, got, err, tc.want, tc.err)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("ParseModule(%q).String() = %q", tc.in, got.String())
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(tc.in)) && !strings.Contains(err.Error(), tc.in) {
			t.Errorf("ParseModule(%q): error %q does not name the input", tc.in, err)
		}
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	noMod := filepath.Join(dir, "nomod")
	file := filepath.Join(dir, "file")
	for _, p := range []string{noMod} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		b    Build
		err  error
		want string
	}{
		{"fine", Build{Output: "k", Without: []string{"frontend.grpc"}, Modules: []Module{{Path: "example.com/e", Dir: "../../karmancmd/testdata/echo"}}}, nil, ""},
		{"no output", Build{}, ErrNoOutput, "--output"},
		{"unknown id", Build{Output: "k", Without: []string{"frontend.amqp"}}, ErrUnknownModule, "frontend.grpc, frontend.mqtt, frontend.namesrv, frontend.remoting"},
		{"no directory", Build{Output: "k", Modules: []Module{{Path: "example.com/e", Dir: filepath.Join(dir, "absent")}}}, ErrLocalModule, "absent"},
		{"a file", Build{Output: "k", Modules: []Module{{Path: "example.com/e", Dir: file}}}, ErrLocalModule, "not a directory"},
		{"no go.mod", Build{Output: "k", Modules: []Module{{Path: "example.com/e", Dir: noMod}}}, ErrLocalModule, "has no go.mod"},
		{"bad path", Build{Output: "k", Modules: []Module{{Path: "e"}}}, ErrInvalidPath, `"e"`},
	} {
		err := tc.b.Check()
		if !errors.Is(err, tc.err) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Check() = %v, want %v with %q", tc.name, err, tc.err, tc.want)
		}
	}
}

func TestMainFile(t *testing.T) {
	for _, tc := range []struct {
		without []string
		mods    []Module
		want    []string
	}{
		{nil, nil, []string{StandardPackage}},
		{nil, []Module{{Path: "example.com/e"}, {Path: "example.com/e", Version: "v1.0.0"}}, []string{StandardPackage, "example.com/e"}},
		{[]string{"frontend.grpc"}, nil, []string{Standard[0].Package, Standard[2].Package, Standard[3].Package, Standard[4].Package, Standard[5].Package}},
		{[]string{"auth.acl", "frontend.grpc", "frontend.mqtt", "frontend.namesrv", "frontend.remoting", "plugin.process"}, []Module{{Path: "example.com/e"}}, []string{"example.com/e"}},
	} {
		src, err := MainFile(imports(tc.without, tc.mods))
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), "main.go", src, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatalf("generated main does not parse: %v\n%s", err, src)
		}
		var blank []string
		cmd := false
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case imp.Name != nil && imp.Name.Name == "_":
				blank = append(blank, p)
			case p == CommandPackage:
				cmd = true
			default:
				t.Errorf("unexpected import %s", p)
			}
		}
		slices.Sort(blank)
		want := slices.Sorted(slices.Values(tc.want))
		if f.Name.Name != "main" || !cmd || !slices.Equal(blank, want) {
			t.Errorf("without %v, modules %v: package %s imports karmancmd %v and %v; want %v", tc.without, tc.mods, f.Name.Name, cmd, blank, want)
		}
		if !strings.Contains(string(src), "func main() { karmancmd.Main() }") || !strings.HasPrefix(string(src), "// Code generated") {
			t.Errorf("generated main:\n%s", src)
		}
	}
}

// TestLoadSource reads the repository's own go.work: a directory
// replacement for every module it uses, and its other replacements.
func TestLoadSource(t *testing.T) {
	root, err := FindSource(".")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{gocmd: "go", env: append(os.Environ(), "GOWORK=off")}
	src, err := loadSource(context.Background(), r, root)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, rep := range src.replace {
		if rep.NewVersion == "" {
			dirs[rep.Old] = rep.New
		}
	}
	for mod, dir := range map[string]string{
		CommandModule:                              "cmd/karman",
		"github.com/karmanmq/karman/server":        "server",
		"github.com/karmanmq/karman/engine":        "engine",
		"github.com/karmanmq/karman/filter":        "filter",
		"github.com/karmanmq/karman/bench":         "bench",
		"github.com/karmanmq/karman/protocol/grpc": "protocol/grpc",
	} {
		if want := filepath.Join(root, dir); dirs[mod] != want {
			t.Errorf("%s replaced by %q, want %q", mod, dirs[mod], want)
		}
	}
	if src.goVersion == "" || len(src.sums) < 2 {
		t.Errorf("go version %q, sums %v", src.goVersion, src.sums)
	}

	// A tree without the command's module is not a Karman tree; a
	// directory without go.work is none at all.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.work"), []byte("go 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSource(context.Background(), r, other); !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), CommandModule) {
		t.Errorf("loadSource of a foreign workspace: %v", err)
	}
	if _, err := loadSource(context.Background(), r, t.TempDir()); !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "no go.work") {
		t.Errorf("loadSource without go.work: %v", err)
	}
	if _, err := FindSource(t.TempDir()); !errors.Is(err, ErrNoSource) {
		t.Errorf("FindSource outside a workspace: %v", err)
	}
}

// TestLoadSourceConflict: two modules replacing one module differently is
// an error, as it is in workspace mode, unless go.work settles it.
func TestLoadSourceConflict(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/go.mod", "module "+CommandModule+"\n\ngo 1.26.0\n\nreplace example.com/x => example.com/y v1.0.0\n")
	write("b/go.mod", "module example.com/b\n\ngo 1.26.0\n\nreplace example.com/x => ../x\n")
	write("go.work", "go 1.26.0\n\nuse (\n\t./a\n\t./b\n)\n")
	r := &runner{gocmd: "go", env: append(os.Environ(), "GOWORK=off")}
	if _, err := loadSource(context.Background(), r, root); !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "conflicting replacements of example.com/x") {
		t.Errorf("conflicting replacements: %v", err)
	}
	write("go.work", "go 1.26.0\n\nuse (\n\t./a\n\t./b\n)\n\nreplace example.com/x => ./x\n")
	src, err := loadSource(context.Background(), r, root)
	if err != nil {
		t.Fatal(err)
	}
	want := replacement{Old: "example.com/x", New: filepath.Join(root, "x")}
	if !slices.Contains(src.replace, want) {
		t.Errorf("replacements %+v lack go.work's %+v", src.replace, want)
	}
}
