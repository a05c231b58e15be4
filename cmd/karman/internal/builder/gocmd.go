package builder

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// CommandError is a go command that failed: where it ran, its arguments
// and what it printed. It matches ErrGoCommand and the exec error.
type CommandError struct {
	Dir    string
	Args   []string
	Output string
	Err    error
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("%s: %v", strings.Join(e.Args, " "), e.Err)
	if out := strings.TrimSpace(e.Output); out != "" {
		msg += "\n\t" + strings.ReplaceAll(out, "\n", "\n\t")
	}
	return msg
}

func (e *CommandError) Unwrap() []error { return []error{ErrGoCommand, e.Err} }

// runner runs go commands in one environment, printing each to log when
// verbose.
type runner struct {
	gocmd   string
	env     []string
	log     io.Writer
	verbose bool
	lastDir string
}

// run runs "go args..." in dir and returns its standard output.
func (r *runner) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	if r.verbose {
		if dir != r.lastDir {
			fmt.Fprintf(r.log, "cd %s\n", shellQuote(dir))
			r.lastDir = dir
		}
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = shellQuote(a)
		}
		fmt.Fprintf(r.log, "go %s\n", strings.Join(quoted, " "))
	}
	cmd := exec.CommandContext(ctx, r.gocmd, args...)
	cmd.Dir = dir
	cmd.Env = r.env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if r.verbose {
		cmd.Stderr = io.MultiWriter(&stderr, r.log)
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("builder: go %s: %w", strings.Join(args, " "), context.Cause(ctx))
		}
		return nil, &CommandError{Dir: dir, Args: append([]string{"go"}, args...), Output: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// modFile is what "go mod edit -json" and "go work edit -json" print that
// a build uses.
type modFile struct {
	Module struct{ Path string }
	Go     string
	Use    []struct{ DiskPath string }
	// Replace holds the replacements; New.Version is empty for a local
	// directory.
	Replace []struct {
		Old, New struct{ Path, Version string }
	}
}

// readMod reads the go.mod or go.work at file with the go command.
func (r *runner) readMod(ctx context.Context, dir, file string) (*modFile, error) {
	sub := "mod"
	if strings.HasSuffix(file, ".work") {
		sub = "work"
	}
	out, err := r.run(ctx, dir, sub, "edit", "-json", file)
	if err != nil {
		return nil, err
	}
	var mf modFile
	if err := json.Unmarshal(out, &mf); err != nil {
		return nil, fmt.Errorf("builder: go %s edit -json %s: %w", sub, file, err)
	}
	return &mf, nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_./=@:+,%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
