package karmancmd

import (
	"fmt"
	"os"

	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newConfigCmd(reg *server.Registry) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect the server configuration",
		Args:  cobra.NoArgs,
	}

	opts, optsErr := reg.NewOptions()
	fs := pflag.NewFlagSet("config", pflag.ContinueOnError)
	if optsErr == nil {
		fs = opts.Flags
	}
	var format string
	print := &cobra.Command{
		Use:   "print [serve flags]",
		Short: "Print the effective serve configuration (defaults, then KARMAN_* variables, then flags)",
		Long: `Print the configuration "karman serve" would run with given the same flags
and environment: defaults, overridden by KARMAN_<FLAG> environment
variables, overridden by flags. The configuration is checked first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if optsErr != nil {
				return optsErr
			}
			warnings, err := config.ApplyEnv(fs, os.Environ())
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "karman: warning:", w)
			}
			srv, err := server.New(*opts) // validates, binds nothing
			if err != nil {
				return err
			}
			// Never started: Stop only cleans up what the modules
			// provisioned (plugin processes, say).
			if err := srv.Stop(cmd.Context()); err != nil {
				return err
			}
			return config.Print(cmd.OutOrStdout(), fs, format)
		},
	}
	print.Flags().StringVar(&format, "format", "json", "output format: json or kv (name=value lines)")
	print.Flags().AddFlagSet(fs)
	print.Flags().SortFlags = false
	refuseBrokenModules(print, optsErr)
	cmd.AddCommand(print)
	return cmd
}
