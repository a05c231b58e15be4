package karmancmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

// benchProgram is the program that runs the protocol benchmarks. It is a
// binary of its own because it links the peer brokers' code (an embedded
// NATS server) and other clients, which the server binary does not.
const benchProgram = "karman-bench"

// errNoBenchProgram means karman-bench is neither beside karman nor on
// the PATH.
var errNoBenchProgram = errors.New("bench: " + benchProgram + " not found")

// executable returns the path of this program's executable; tests
// replace it.
var executable = os.Executable

// newBenchExecCmd returns "bench <name>", which runs "karman-bench <name>"
// with the same arguments in place of this process.
func newBenchExecCmd(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:   name + " [flags]",
		Short: short,
		Long: short + `.

Run by the ` + benchProgram + ` program with the same arguments, standard
streams and exit status; karman looks for it beside its own executable,
then on the PATH. "karman bench ` + name + ` --help" lists the flags.`,
		// Every argument, --help included, is karman-bench's.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := findBenchProgram()
			if err != nil {
				return err
			}
			// karman-bench calls itself by its first argument in help and
			// errors: "karman bench".
			argv := append([]string{cmd.Parent().CommandPath(), name}, args...)
			return execBench(path, argv)
		},
	}
}

// findBenchProgram returns the path of karman-bench: beside this
// executable, else on the PATH.
func findBenchProgram() (string, error) {
	exe, exeErr := executable()
	if exeErr == nil {
		if path, err := exec.LookPath(filepath.Join(filepath.Dir(exe), benchProgram)); err == nil {
			return path, nil
		}
	}
	if path, err := exec.LookPath(benchProgram); err == nil {
		return path, nil
	}
	dir := "DIR"
	where := "beside karman"
	if exeErr == nil {
		dir = filepath.Dir(exe)
		where = "in " + dir
	}
	return "", fmt.Errorf(`%w %s or on the PATH; from the repository root, build it beside karman with
  go build -o %s ./cmd/karman/karman-bench
or install it into $(go env GOPATH)/bin, which should be on the PATH, with
  go install ./cmd/karman/karman-bench`, errNoBenchProgram, where, filepath.Join(dir, benchProgram))
}

// execBench replaces this process with the program at path, run with argv
// (argv[0] first) and this process's environment. The program inherits
// the process id, the standard streams and every signal sent to karman;
// its exit status is karman's. execBench returns only on failure.
func execBench(path string, argv []string) error {
	err := syscall.Exec(path, argv, os.Environ())
	return fmt.Errorf("bench: run %s: %w", path, err)
}
