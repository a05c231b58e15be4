package karmancmd

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newServeCmd(reg *server.Registry) *cobra.Command {
	opts, optsErr := reg.NewOptions()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	if optsErr == nil {
		fs = opts.Flags
	}

	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the engine with its HTTP endpoint and protocol front-ends",
		Long: `Run a karman server: the engine with its data in --data, an HTTP endpoint
serving /healthz and /metrics, and every module compiled in (see
"karman list-modules"): each protocol front-end has its --<name>-addr
flag; "off" disables it.

Each flag can also be set with KARMAN_<FLAG>, for example KARMAN_DATA or
KARMAN_HTTP_ADDR; flags win over the environment. Bound addresses are
printed as "karman: <name> listening on <addr>", then "karman: ready".
SIGINT or SIGTERM shuts the server down gracefully; a second signal
stops it at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if optsErr != nil {
				return optsErr
			}
			warnings, err := config.ApplyEnv(fs, os.Environ())
			if err != nil {
				return err
			}
			logger := newLogger(cmd.ErrOrStderr(), opts.Config.LogLevel)
			for _, w := range warnings {
				logger.Warn(w)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop() // a second signal gets the default action
			}()
			opts.Version = Version()
			opts.Logger = logger
			opts.Announce = cmd.OutOrStdout()
			return server.Run(ctx, *opts)
		},
	}
	cmd.Flags().AddFlagSet(fs)
	cmd.Flags().SortFlags = false
	cmd.SetGlobalNormalizationFunc(rocketmqFlagNames)
	refuseBrokenModules(cmd, optsErr)
	return cmd
}

// rocketmqFlagAliases are serve flags by the names RocketMQ's own
// deployments call them, each mapped onto the module flag it sets.
var rocketmqFlagAliases = map[string]string{
	"controller-addrs":    "ha-controller",
	"replication":         "ha-replication",
	"min-insync-replicas": "ha-min-insync-replicas",
}

// rocketmqFlagNames lets serve take rocketmqFlagAliases.
func rocketmqFlagNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if to, ok := rocketmqFlagAliases[name]; ok {
		return pflag.NormalizedName(to)
	}
	return pflag.NormalizedName(name)
}

// refuseBrokenModules makes cmd fail with err, whatever its arguments,
// when the modules could not be set up (an unknown id, a missing
// dependency, a flag claimed twice): their flags are not bound, so parsing
// the command line would only hide err behind "unknown flag".
func refuseBrokenModules(cmd *cobra.Command, err error) {
	if err == nil {
		return
	}
	cmd.DisableFlagParsing = true
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(*cobra.Command, []string) error { return err }
}
