package karmancmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/karmanmq/karman/server"
)

// runRoot runs "karman <args>" in this process and returns standard
// output.
func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := New(&server.Registry{})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestBenchHelpListsCommands(t *testing.T) {
	out, err := runRoot(t, "bench", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"engine", "produce", "consume", "mqtt"} {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("bench --help does not list %s:\n%s", name, out)
		}
	}
}

// writeProgram writes a file name in dir with the permissions perm.
func writeProgram(t *testing.T, dir, name string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeExecutable makes karman's executable dir/karman for the test.
func fakeExecutable(t *testing.T, dir string) {
	old := executable
	executable = func() (string, error) { return filepath.Join(dir, "karman"), nil }
	t.Cleanup(func() { executable = old })
}

func TestFindBenchProgram(t *testing.T) {
	for _, tc := range []struct {
		name   string
		beside os.FileMode // of a karman-bench beside karman; 0: none
		onPath os.FileMode // of one on the PATH; 0: none
		want   string      // "beside", "path" or "" (not found)
	}{
		{"beside", 0o755, 0, "beside"},
		{"beside wins", 0o755, 0o755, "beside"},
		{"on the PATH", 0, 0o755, "path"},
		{"beside not executable", 0o644, 0o755, "path"},
		{"not executable", 0o644, 0o644, ""},
		{"absent", 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, empty, pathDir := t.TempDir(), t.TempDir(), t.TempDir()
			fakeExecutable(t, bin)
			t.Setenv("PATH", empty+string(os.PathListSeparator)+pathDir)
			paths := map[string]string{}
			if tc.beside != 0 {
				paths["beside"] = writeProgram(t, bin, benchProgram, tc.beside)
			}
			if tc.onPath != 0 {
				paths["path"] = writeProgram(t, pathDir, benchProgram, tc.onPath)
			}
			got, err := findBenchProgram()
			if tc.want != "" {
				if err != nil || got != paths[tc.want] {
					t.Errorf("findBenchProgram() = %q, %v; want %q", got, err, paths[tc.want])
				}
				return
			}
			if !errors.Is(err, errNoBenchProgram) {
				t.Fatalf("findBenchProgram() = %q, %v; want %v", got, err, errNoBenchProgram)
			}
			for _, s := range []string{
				"go build -o " + filepath.Join(bin, benchProgram) + " ./cmd/karman/karman-bench",
				"go install ./cmd/karman/karman-bench",
			} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not say %q:\n%v", s, err)
				}
			}
		})
	}
}

// Without karman-bench, "bench produce" and "bench consume" fail saying
// how to get it, whatever their arguments.
func TestBenchWithoutProgram(t *testing.T) {
	fakeExecutable(t, t.TempDir())
	t.Setenv("PATH", t.TempDir())
	for _, args := range [][]string{
		{"bench", "produce", "--count", "1"},
		{"bench", "consume", "--help"},
		{"bench", "produce", "--no-such-flag"},
	} {
		if _, err := runRoot(t, args...); !errors.Is(err, errNoBenchProgram) || !strings.Contains(err.Error(), "go build -o") {
			t.Errorf("%v: %v, want %v with how to build it", args, err, errNoBenchProgram)
		}
	}
}

// Without karman-bench, "chaos" fails saying how to get it.
func TestChaosWithoutProgram(t *testing.T) {
	fakeExecutable(t, t.TempDir())
	t.Setenv("PATH", t.TempDir())
	if _, err := runRoot(t, "chaos", "--fault", "kill-master"); !errors.Is(err, errNoBenchProgram) || !strings.Contains(err.Error(), "go build -o") {
		t.Errorf("chaos: %v, want %v with how to build it", err, errNoBenchProgram)
	}
}
