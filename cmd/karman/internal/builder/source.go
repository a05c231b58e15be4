package builder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FindSource returns the nearest directory at or above dir that holds a
// go.work: the Karman source tree a build takes Karman's modules from.
func FindSource(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoSource, err)
	}
	for d := abs; ; {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%w: no go.work in %s or any directory above it", ErrNoSource, abs)
		}
		d = parent
	}
}

// replacement is one replace directive: Old (at OldVersion, or every
// version) by New at NewVersion, or by the directory New when NewVersion
// is empty.
type replacement struct {
	Old, OldVersion, New, NewVersion string
}

// flag returns r as go mod edit's -replace argument.
func (r replacement) flag() string {
	old, nw := r.Old, r.New
	if r.OldVersion != "" {
		old += "@" + r.OldVersion
	}
	if r.NewVersion != "" {
		nw += "@" + r.NewVersion
	}
	return "-replace=" + old + "=" + nw
}

// source is what a build takes from a Karman source tree.
type source struct {
	dir string
	// goVersion is the go.work's go version.
	goVersion string
	// replace has a directory replacement for every module of the
	// workspace, then the tree's own replacements of other modules.
	replace []replacement
	// sums are the go.sum and go.work.sum files of the tree.
	sums []string
}

// loadSource reads the go.work at dir and the go.mod of every module it
// uses.
func loadSource(ctx context.Context, r *runner, dir string) (*source, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoSource, err)
	}
	work := filepath.Join(dir, "go.work")
	if _, err := os.Stat(work); err != nil {
		return nil, fmt.Errorf("%w: %s has no go.work (want the root of a Karman source tree)", ErrNoSource, dir)
	}
	wf, err := r.readMod(ctx, dir, work)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrNoSource, work, err)
	}
	src := &source{dir: dir, goVersion: wf.Go, sums: []string{filepath.Join(dir, "go.work.sum")}}

	// Replacements of other modules: go.work's win; the modules' own must
	// agree with each other, as in workspace mode.
	type origin struct {
		r        replacement
		from     string
		conflict bool
	}
	others := map[string]origin{}
	var order []string
	workspace := map[string]bool{}
	for _, use := range wf.Use {
		mdir := filepath.Join(dir, filepath.FromSlash(use.DiskPath))
		if filepath.IsAbs(use.DiskPath) {
			mdir = filepath.Clean(use.DiskPath)
		}
		gomod := filepath.Join(mdir, "go.mod")
		mf, err := r.readMod(ctx, mdir, gomod)
		if err != nil {
			return nil, fmt.Errorf("%w: reading %s: %w", ErrNoSource, gomod, err)
		}
		workspace[mf.Module.Path] = true
		src.replace = append(src.replace, replacement{Old: mf.Module.Path, New: mdir})
		src.sums = append(src.sums, filepath.Join(mdir, "go.sum"))
		for _, rep := range mf.Replace {
			rr := replacement{Old: rep.Old.Path, OldVersion: rep.Old.Version, New: rep.New.Path, NewVersion: rep.New.Version}
			if rr.NewVersion == "" && !filepath.IsAbs(rr.New) {
				rr.New = filepath.Join(mdir, filepath.FromSlash(rr.New))
			}
			key := rr.Old + "@" + rr.OldVersion
			if prev, ok := others[key]; ok {
				if prev.r != rr {
					others[key] = origin{r: prev.r, from: prev.from + " and " + gomod, conflict: true}
				}
				continue
			}
			others[key] = origin{r: rr, from: gomod}
			order = append(order, key)
		}
	}
	if !workspace[CommandModule] {
		return nil, fmt.Errorf("%w: %s uses no module %s", ErrNoSource, work, CommandModule)
	}
	for _, rep := range wf.Replace {
		rr := replacement{Old: rep.Old.Path, OldVersion: rep.Old.Version, New: rep.New.Path, NewVersion: rep.New.Version}
		if rr.NewVersion == "" && !filepath.IsAbs(rr.New) {
			rr.New = filepath.Join(dir, filepath.FromSlash(rr.New))
		}
		key := rr.Old + "@" + rr.OldVersion
		if _, ok := others[key]; !ok {
			order = append(order, key)
		}
		others[key] = origin{r: rr, from: work}
	}
	for _, key := range order {
		o := others[key]
		if workspace[strings.TrimSuffix(key, "@")] {
			continue // the workspace's own copy is used
		}
		if o.conflict {
			return nil, fmt.Errorf("%w: conflicting replacements of %s in %s", ErrNoSource, strings.TrimSuffix(key, "@"), o.from)
		}
		src.replace = append(src.replace, o.r)
	}
	return src, nil
}

// seedSums returns the lines of the go.sum files, each once, in order.
func seedSums(files []string) ([]byte, error) {
	seen := map[string]bool{}
	var out []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("builder: %w", err)
		}
		for line := range strings.Lines(string(data)) {
			line = strings.TrimRight(line, "\r\n")
			if line == "" || seen[line] {
				continue
			}
			seen[line] = true
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out, nil
}

// localModule returns the module path of the go.mod in m.Dir, checking
// that it holds m.Path.
func localModule(ctx context.Context, r *runner, m Module) (path, dir string, err error) {
	dir, err = filepath.Abs(m.Dir)
	if err != nil {
		return "", "", fmt.Errorf("%w %s: %w", ErrLocalModule, m, err)
	}
	mf, err := r.readMod(ctx, dir, filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", "", fmt.Errorf("%w %s: %w", ErrLocalModule, m, err)
	}
	mod := mf.Module.Path
	if m.Path != mod && !strings.HasPrefix(m.Path, mod+"/") {
		return "", "", fmt.Errorf("%w %s: %s declares module %q, which does not hold package %s", ErrLocalModule, m, filepath.Join(m.Dir, "go.mod"), mod, m.Path)
	}
	return mod, dir, nil
}

// checkLocal checks, without the go command, that m.Dir is a directory
// with a go.mod.
func checkLocal(m Module) error {
	if m.Dir == "" {
		return nil
	}
	st, err := os.Stat(m.Dir)
	switch {
	case err != nil:
		return fmt.Errorf("%w %s: %w", ErrLocalModule, m, err)
	case !st.IsDir():
		return fmt.Errorf("%w %s: %s is not a directory", ErrLocalModule, m, m.Dir)
	}
	if _, err := os.Stat(filepath.Join(m.Dir, "go.mod")); err != nil {
		return fmt.Errorf("%w %s: %s has no go.mod (want the root of a Go module)", ErrLocalModule, m, m.Dir)
	}
	return nil
}

// imports returns the packages the generated main imports blank: the
// standard set less without, then each module's package once.
func imports(without []string, mods []Module) []string {
	var pkgs []string
	if len(without) == 0 {
		pkgs = append(pkgs, StandardPackage)
	} else {
		for _, s := range Standard {
			if !slices.Contains(without, s.ID) {
				pkgs = append(pkgs, s.Package)
			}
		}
	}
	for _, m := range mods {
		if !slices.Contains(pkgs, m.Path) {
			pkgs = append(pkgs, m.Path)
		}
	}
	return pkgs
}
