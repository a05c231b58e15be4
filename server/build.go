package server

import (
	"reflect"
	"runtime/debug"
	"strings"
)

// Build tells where a module comes from in a binary.
type Build struct {
	// Package is the Go package that defines the module.
	Package string `json:"package"`
	// Module and Version are the Go module holding Package and its
	// version in the build: "(devel)" for the main module and modules
	// built from a source tree, "unknown" without build information.
	Module  string `json:"module"`
	Version string `json:"version"`
}

// BuildOf returns the package of m and the Go module of bi that provides
// it (bi may be nil: debug.ReadBuildInfo's answer where there is none).
func BuildOf(m Module, bi *debug.BuildInfo) Build {
	b := Build{Package: pkgPath(m), Version: "unknown"}
	if bi == nil {
		return b
	}
	for _, dm := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
		if dm.Path == "" || len(dm.Path) <= len(b.Module) || (b.Package != dm.Path && !strings.HasPrefix(b.Package, dm.Path+"/")) {
			continue
		}
		b.Module, b.Version = dm.Path, dm.Version
		if dm.Replace != nil && dm.Replace.Version != "" {
			b.Version = dm.Replace.Version
		}
		if b.Version == "" {
			b.Version = "(devel)"
		}
	}
	return b
}

// pkgPath returns the package that defines m's type.
func pkgPath(m Module) string {
	t := reflect.TypeOf(m)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}
