package karmancmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/karmanmq/karman/server"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Main runs the command line with the modules registered with
// server.Default and exits the process: 0 on success, 1 on any error
// (cobra prints it).
func Main() {
	if err := New(server.Default).ExecuteContext(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// New returns the root command; serve runs the modules of reg.
func New(reg *server.Registry) *cobra.Command {
	root := &cobra.Command{
		Use:   "karman",
		Short: "Karman is a RocketMQ-compatible messaging and streaming engine",
		Long: `Karman is a RocketMQ-compatible messaging and streaming engine.

Run "karman serve" to start a server with its data in ./data; every flag
of serve can also be set with an environment variable KARMAN_<FLAG>
(for example KARMAN_HTTP_ADDR=:9090).`,
		// Errors are printed once by cobra; usage only on request.
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true}, // newCompletionCmd instead
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if s := flagSuggestions(c, err); len(s) > 0 {
			return fmt.Errorf("%w\n\nDid you mean this?\n\t%s\nRun '%s --help' for usage.", err, strings.Join(s, "\n\t"), c.CommandPath())
		}
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	root.AddCommand(
		newServeCmd(reg),
		newNamesrvCmd(reg),
		newControllerCmd(),
		newConfigCmd(reg),
		newAdminCmd(),
		newBenchCmd(),
		newChaosCmd(),
		newVersionCmd(),
		newListModulesCmd(reg),
		newBuildCmd(),
		newCompletionCmd(),
	)
	suggestCommands(root)
	return root
}

// newLogger returns a text logger to w at level.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// sortedFlags keeps a command's flags in the order they were added, which
// groups related flags in --help.
func sortedFlags(fs *pflag.FlagSet) *pflag.FlagSet {
	fs.SortFlags = false
	return fs
}
