package karmancmd

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/karmanmq/karman/cmd/karman/internal/builder"
	"github.com/spf13/cobra"
)

func newBuildCmd() *cobra.Command {
	var (
		b    builder.Build
		with []string
	)
	cmd := &cobra.Command{
		Use:   "build --output FILE [--with MODULE[@VERSION][=DIR]]... [--without ID]...",
		Short: "Build a custom karman binary with other modules compiled in",
		Long: `Build a karman binary with the standard modules, less those named by
--without, and the Go packages named by --with, which register their own
server modules by being imported.

--with MODULE[@VERSION][=DIR] names a Go package (usually a module's root
package), optionally the version of its module to require, optionally a
local directory holding that module (its go.mod), used in place of any
published version.

--without ID leaves out a standard module: ` + standardIDList() + `.

Karman's own modules come from a source tree, --src (default: the nearest
directory at or above the current one with a go.work), or else from a
published version, --karman-version (default: this binary's own, when it
was built from a published version). The Go toolchain
does the work in a temporary directory (go mod tidy, go get, go build), in
this environment: GOFLAGS, GOPROXY and the rest apply. -v prints each go
command. "karman list-modules" of the result shows what it holds.`,
		Example: `  karman build --with example.com/karman-echo@v1.2.0 --output ./karman
  karman build --with example.com/karman-echo=../karman-echo --without frontend.grpc -o ./karman`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, w := range with {
				m, err := builder.ParseModule(w)
				if err != nil {
					return fmt.Errorf("--with: %w", err)
				}
				b.Modules = append(b.Modules, m)
			}
			if err := b.Check(); err != nil {
				return err
			}
			if b.Source != "" && b.KarmanVersion != "" {
				return errors.New("karman build: --src and --karman-version exclude each other")
			}
			if b.Source == "" && b.KarmanVersion == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				src, err := builder.FindSource(wd)
				switch {
				case err == nil:
					b.Source = src
				case releasedVersion() != "":
					b.KarmanVersion = releasedVersion()
				default:
					return fmt.Errorf("%w; pass --src with the root of a Karman source tree, or --karman-version", err)
				}
			}
			b.Log = cmd.ErrOrStderr()
			// An interrupt stops the go command and still removes the
			// work directory.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := b.Run(ctx); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "karman build: built %s\n", b.Output)
			return err
		},
	}
	f := sortedFlags(cmd.Flags())
	f.StringArrayVar(&with, "with", nil, "a Go package to compile in for its modules: MODULE[@VERSION][=DIR] (repeatable)")
	f.StringSliceVar(&b.Without, "without", nil, "a standard module to leave out, by id (repeatable, or comma separated)")
	f.StringVarP(&b.Output, "output", "o", "", "the file to write the binary to (required)")
	f.StringVar(&b.Source, "src", "", "the Karman source tree (a directory with a go.work) to take Karman's modules from (default: found above the current directory)")
	f.StringVar(&b.KarmanVersion, "karman-version", "", "the published version of Karman to build with when no source tree is used")
	f.BoolVarP(&b.Verbose, "verbose", "v", false, "print the go commands run and their messages")
	f.BoolVar(&b.KeepWork, "work", false, "keep the temporary directory with the generated main package and print its path")
	return cmd
}

// releasedVersion returns the published version of Karman's command
// module this binary was built from, or "" when it was built from a source
// tree.
func releasedVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
		if m.Path == builder.CommandModule && m.Replace == nil && strings.HasPrefix(m.Version, "v") {
			return m.Version
		}
	}
	return ""
}

// standardIDList returns the standard module ids for help texts.
func standardIDList() string {
	s := ""
	for i, m := range builder.Standard {
		if i > 0 {
			s += ", "
		}
		s += m.ID
	}
	return s
}
