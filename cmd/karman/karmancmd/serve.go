package cli

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/karmanmq/karman/cmd/karman/internal/config"
	"github.com/karmanmq/karman/cmd/karman/internal/frontend"
	"github.com/karmanmq/karman/cmd/karman/internal/serve"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newServeCmd(reg *frontend.Registry) *cobra.Command {
	var cfg config.Config
	fronts := reg.All()
	fs := sortedFlags(pflag.NewFlagSet("serve", pflag.ContinueOnError))
	cfg.Bind(fs, fronts)

	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the engine with its HTTP endpoint and protocol front-ends",
		Long: `Run a karman server: the engine with its data in --data, an HTTP endpoint
serving /healthz and /metrics, and every protocol front-end compiled in
(each with its --<name>-addr flag; "off" disables a listener).

Each flag can also be set with KARMAN_<FLAG>, for example KARMAN_DATA or
KARMAN_HTTP_ADDR; flags win over the environment. Bound addresses are
printed as "karman: <name> listening on <addr>", then "karman: ready".
SIGINT or SIGTERM shuts the server down gracefully; a second signal
stops it at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			warnings, err := config.ApplyEnv(fs, os.Environ())
			if err != nil {
				return err
			}
			logger := newLogger(cmd.ErrOrStderr(), cfg.LogLevel)
			for _, w := range warnings {
				logger.Warn(w)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop() // a second signal gets the default action
			}()
			return serve.Run(ctx, serve.Options{
				Config:    &cfg,
				Frontends: fronts,
				Version:   Version(),
				Logger:    logger,
				Announce:  cmd.OutOrStdout(),
			})
		},
	}
	cmd.Flags().AddFlagSet(fs)
	cmd.Flags().SortFlags = false
	return cmd
}
