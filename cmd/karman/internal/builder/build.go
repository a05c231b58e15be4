package builder

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// mainModule is the module path of the generated main package.
const mainModule = "karman-build"

// Build describes one custom binary.
type Build struct {
	// Modules are the packages compiled in besides the standard set.
	Modules []Module
	// Without lists ids of standard modules (Standard) to leave out.
	Without []string
	// Output is the file to write the binary to. Required.
	Output string
	// Source is the root of a Karman source tree (its go.work), which
	// Karman's own modules are taken from; see FindSource.
	Source string
	// KarmanVersion, when Source is empty, is the published version of
	// Karman's command module (CommandModule) to build with instead; the
	// go command resolves the rest of Karman's modules from it. One of
	// Source and KarmanVersion is required.
	KarmanVersion string
	// Go is the go command. Empty: "go" from the PATH.
	Go string
	// Env is the go commands' environment (GOWORK=off is added). Nil:
	// this process's.
	Env []string
	// Log receives, when Verbose, every go command run and what it
	// prints to standard error; with KeepWork, the work directory. Nil:
	// io.Discard.
	Log     io.Writer
	Verbose bool
	// KeepWork keeps the temporary directory with the generated main
	// package and go.mod instead of removing it.
	KeepWork bool
}

// Check checks the build's input without running anything: an output,
// the ids to leave out, and the modules' paths and local directories.
func (b *Build) Check() error {
	if b.Output == "" {
		return fmt.Errorf("%w (want --output FILE)", ErrNoOutput)
	}
	if err := checkWithout(b.Without); err != nil {
		return err
	}
	for _, m := range b.Modules {
		if err := checkPath(m.Path, m.Dir == ""); err != nil {
			return err
		}
		if err := checkLocal(m); err != nil {
			return err
		}
	}
	return nil
}

// Run checks the input, generates the main package and its go.mod in a
// temporary directory, resolves the modules and builds the binary to
// Output.
func (b *Build) Run(ctx context.Context) (err error) {
	if err := b.Check(); err != nil {
		return err
	}
	if b.Source == "" && b.KarmanVersion == "" {
		return fmt.Errorf("%w given, nor a Karman version", ErrNoSource)
	}
	r := &runner{gocmd: b.Go, env: b.Env, log: b.Log, verbose: b.Verbose}
	if r.gocmd == "" {
		r.gocmd = "go"
	}
	if _, err := exec.LookPath(r.gocmd); err != nil {
		return fmt.Errorf("builder: a Go toolchain is needed to build: %w", err)
	}
	if r.env == nil {
		r.env = os.Environ()
	}
	r.env = append(r.env[:len(r.env):len(r.env)], "GOWORK=off")
	if r.log == nil {
		r.log = io.Discard
	}
	out, err := filepath.Abs(b.Output)
	if err != nil {
		return fmt.Errorf("builder: output: %w", err)
	}

	src := &source{}
	var gets []Module
	if b.Source != "" {
		if src, err = loadSource(ctx, r, b.Source); err != nil {
			return err
		}
	} else {
		gets = append(gets, Module{Path: CommandModule, Version: b.KarmanVersion})
	}
	edit := []string{"mod", "edit"}
	if src.goVersion != "" {
		edit = append(edit, "-go="+src.goVersion)
	}
	for _, rep := range src.replace {
		edit = append(edit, rep.flag())
	}
	for _, m := range b.Modules {
		if m.Dir == "" {
			if m.Version != "" {
				gets = append(gets, m)
			}
			continue
		}
		mod, dir, err := localModule(ctx, r, m)
		if err != nil {
			return err
		}
		if m.Version != "" {
			edit = append(edit, "-require="+mod+"@"+m.Version)
		}
		edit = append(edit, replacement{Old: mod, New: dir}.flag())
	}

	work, err := os.MkdirTemp("", "karman-build-")
	if err != nil {
		return fmt.Errorf("builder: %w", err)
	}
	if b.KeepWork {
		fmt.Fprintf(r.log, "karman build: work directory %s\n", work)
	} else {
		defer func() {
			if rerr := os.RemoveAll(work); rerr != nil && err == nil {
				err = fmt.Errorf("builder: removing the work directory: %w", rerr)
			}
		}()
	}

	if _, err := r.run(ctx, work, "mod", "init", mainModule); err != nil {
		return err
	}
	if len(edit) > 2 {
		if _, err := r.run(ctx, work, edit...); err != nil {
			return err
		}
	}
	sums, err := seedSums(src.sums)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "go.sum"), sums, 0o644); err != nil {
		return fmt.Errorf("builder: %w", err)
	}
	for _, m := range gets {
		if _, err := r.run(ctx, work, "get", m.Path+"@"+m.Version); err != nil {
			return fmt.Errorf("builder: module %s@%s: %w", m.Path, m.Version, err)
		}
	}
	main, err := MainFile(imports(b.Without, b.Modules))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "main.go"), main, 0o644); err != nil {
		return fmt.Errorf("builder: %w", err)
	}
	if _, err := r.run(ctx, work, "mod", "tidy"); err != nil {
		return fmt.Errorf("builder: resolving modules: %w", err)
	}
	if _, err := r.run(ctx, work, "build", "-o", out, "."); err != nil {
		return fmt.Errorf("builder: building %s: %w", b.Output, err)
	}
	return nil
}

// MainFile returns the source of a main package that runs the karman
// command line with the packages pkgs imported for their modules.
func MainFile(pkgs []string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`// Code generated by karman build. DO NOT EDIT.

// Command karman is a custom build of Karman; "karman list-modules" shows
// the modules it holds.
package main

import (
	karmancmd "` + CommandPackage + `"

`)
	for _, p := range pkgs {
		fmt.Fprintf(&buf, "\t_ %s\n", strconv.Quote(p))
	}
	buf.WriteString(")\n\nfunc main() { karmancmd.Main() }\n")
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("builder: generated main: %w", err)
	}
	return src, nil
}
