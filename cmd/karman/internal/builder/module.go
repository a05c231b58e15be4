package builder

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of a build's input, wrapped with the value at fault.
var (
	// ErrUnknownModule: an id to leave out names no standard module.
	ErrUnknownModule = errors.New("builder: unknown standard module")
	// ErrInvalidPath: a module or package path is not a valid one.
	ErrInvalidPath = errors.New("builder: invalid module path")
	// ErrLocalModule: a local module directory does not exist, has no
	// go.mod, or holds another module.
	ErrLocalModule = errors.New("builder: bad local module")
	// ErrNoOutput: no output file was given.
	ErrNoOutput = errors.New("builder: no output file")
	// ErrNoSource: no Karman source tree was found or given.
	ErrNoSource = errors.New("builder: no Karman source tree")
	// ErrGoCommand: a go command failed (see CommandError).
	ErrGoCommand = errors.New("builder: go command failed")
)

// Paths of the Karman packages every build imports.
const (
	// CommandPackage is the karman command line; main calls its Main.
	CommandPackage = "github.com/karmanmq/karman/cmd/karman/karmancmd"
	// StandardPackage imports every standard module.
	StandardPackage = "github.com/karmanmq/karman/server/modules/standard"
	// CommandModule is the Go module holding CommandPackage, which a
	// source tree must have.
	CommandModule = "github.com/karmanmq/karman/cmd/karman"
)

// StandardModule is a module of the standard set and the package that
// registers it.
type StandardModule struct {
	ID      string
	Package string
}

// Standard lists the modules StandardPackage imports, by id. A test holds
// it to the registry of a binary that imports StandardPackage.
var Standard = []StandardModule{
	{ID: "auth.acl", Package: "github.com/karmanmq/karman/server/modules/auth"},
	{ID: "frontend.grpc", Package: "github.com/karmanmq/karman/server/modules/grpc"},
	{ID: "frontend.mqtt", Package: "github.com/karmanmq/karman/server/modules/mqtt"},
	{ID: "frontend.namesrv", Package: "github.com/karmanmq/karman/server/modules/namesrv"},
	{ID: "frontend.remoting", Package: "github.com/karmanmq/karman/server/modules/broker"},
	{ID: "plugin.process", Package: "github.com/karmanmq/karman/server/modules/plugin"},
}

// standardIDs returns the ids of Standard, comma separated.
func standardIDs() string {
	ids := make([]string, len(Standard))
	for i, m := range Standard {
		ids[i] = m.ID
	}
	return strings.Join(ids, ", ")
}

// checkWithout checks that every id names a standard module.
func checkWithout(ids []string) error {
	for _, id := range ids {
		if !slices.ContainsFunc(Standard, func(m StandardModule) bool { return m.ID == id }) {
			return fmt.Errorf("%w %q (standard modules: %s)", ErrUnknownModule, id, standardIDs())
		}
	}
	return nil
}

// Module is a Go package to compile in, one that registers server modules
// by being imported (usually a module's root package).
type Module struct {
	// Path is the package's import path.
	Path string
	// Version is the version of its Go module to require: a semantic
	// version or any query "go get" takes (a branch, a commit, "latest").
	// Empty: the latest, or the one in Dir.
	Version string
	// Dir, when set, is a local directory holding the package's Go module
	// (its go.mod), used in place of any published version.
	Dir string
}

// String returns m as ParseModule reads it.
func (m Module) String() string {
	s := m.Path
	if m.Version != "" {
		s += "@" + m.Version
	}
	if m.Dir != "" {
		s += "=" + m.Dir
	}
	return s
}

// ParseModule reads PATH[@VERSION][=DIR]: a package path, optionally the
// version of its module, optionally a local directory holding the module.
// A path fetched from the network (no DIR) needs a dot in its first
// element, as the go command requires.
func ParseModule(s string) (Module, error) {
	var m Module
	spec, dir, hasDir := strings.Cut(s, "=")
	if hasDir {
		if dir == "" {
			return Module{}, fmt.Errorf("%w %q: empty local directory after '='", ErrLocalModule, s)
		}
		m.Dir = dir
	}
	path, version, hasVersion := strings.Cut(spec, "@")
	if hasVersion {
		if version == "" || strings.ContainsFunc(version, func(r rune) bool { return r <= ' ' || r == '@' || r > '~' }) {
			return Module{}, fmt.Errorf("%w %q: invalid version %q", ErrInvalidPath, s, version)
		}
		m.Version = version
	}
	if err := checkPath(path, !hasDir); err != nil {
		return Module{}, err
	}
	m.Path = path
	return m, nil
}

// checkPath reports whether p is a valid import path; fetched: one the go
// command can download, with a domain-like first element.
func checkPath(p string, fetched bool) error {
	bad := func(why string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidPath, p, fmt.Sprintf(why, args...))
	}
	if p == "" {
		return bad("empty")
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || p == "." || p == ".." {
		return bad("a file path, not a module path (a local directory goes after '=': PATH=DIR)")
	}
	elems := strings.Split(p, "/")
	for _, e := range elems {
		switch {
		case e == "":
			return bad("empty path element")
		case e == "." || e == "..":
			return bad("path element %q", e)
		case e[0] == '.' || e[len(e)-1] == '.':
			return bad("path element %q begins or ends with a dot", e)
		}
		for _, r := range e {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~+", r)) {
				return bad("character %q is not allowed in a module path", r)
			}
		}
	}
	if fetched {
		first := elems[0]
		if !strings.Contains(first, ".") {
			return bad("the first element %q has no dot, so the go command cannot fetch it (for a local module write PATH=DIR)", first)
		}
		if first[0] == '-' || strings.ContainsFunc(first, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '.') }) {
			return bad("the first element %q is not a lower-case domain name", first)
		}
	}
	return nil
}
