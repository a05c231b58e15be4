package cli

import (
	"fmt"
	"os"

	"github.com/karmanmq/karman/cmd/karman/internal/config"
	"github.com/karmanmq/karman/cmd/karman/internal/frontend"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newConfigCmd(reg *frontend.Registry) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect the server configuration",
		Args:  cobra.NoArgs,
	}

	var cfg config.Config
	fs := sortedFlags(pflag.NewFlagSet("config", pflag.ContinueOnError))
	cfg.Bind(fs, reg.All())
	var format string
	print := &cobra.Command{
		Use:   "print [serve flags]",
		Short: "Print the effective serve configuration (defaults, then KARMAN_* variables, then flags)",
		Long: `Print the configuration "karman serve" would run with given the same flags
and environment: defaults, overridden by KARMAN_<FLAG> environment
variables, overridden by flags. The configuration is checked first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			warnings, err := config.ApplyEnv(fs, os.Environ())
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "karman: warning:", w)
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			return config.Print(cmd.OutOrStdout(), fs, format)
		},
	}
	print.Flags().StringVar(&format, "format", "json", "output format: json or kv (name=value lines)")
	print.Flags().AddFlagSet(fs)
	print.Flags().SortFlags = false
	cmd.AddCommand(print)
	return cmd
}
