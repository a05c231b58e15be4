package karmancmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

// namesrvModule is the registered module "karman namesrv" runs, and
// namesrvFrontend its listener name.
const (
	namesrvModule   server.ModuleID = "frontend.namesrv"
	namesrvFrontend                 = "namesrv"
)

func newNamesrvCmd(reg *server.Registry) *cobra.Command {
	var (
		addr            string
		level           slog.Level
		shutdownTimeout time.Duration
		withController  bool
		ctl             controllerFlags
	)
	defAddr := ":9876"
	mi, haveNamesrv := reg.Lookup(namesrvModule)
	if haveNamesrv && mi.DefaultAddr != "" {
		defAddr = mi.DefaultAddr
	}
	cmd := &cobra.Command{
		Use:   "namesrv",
		Short: "Run a RocketMQ name server alone",
		Long: `Run only the RocketMQ name server: brokers register with it, clients ask
it where topics live. It keeps everything in memory and needs no data
directory; brokers register again within 30 s after a restart.

"karman serve" runs the same name server next to the broker (--namesrv-addr).
With --controller, a node of the replication controller quorum runs in
the same process (see "karman controller" for its flags).
The bound address is printed as "karman: namesrv listening on <addr>", then
"karman: ready". SIGINT or SIGTERM shuts it down gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !haveNamesrv {
				return errors.New("namesrv: this karman binary was built without the name server (module " + string(namesrvModule) + ")")
			}
			m := mi.New()
			st, ok := m.(server.Starter)
			if !ok {
				return fmt.Errorf("namesrv: module %s has no Start method", namesrvModule)
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return fmt.Errorf("namesrv: --addr %q: want host:port or :port: %w", addr, err)
			}
			if shutdownTimeout <= 0 {
				return errors.New("namesrv: --shutdown-timeout must be positive")
			}
			if !withController {
				for _, name := range []string{"controller-id", "controller-peers", "controller-addr", "data", "broker-heartbeat-timeout", "allow-unclean-election"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("namesrv: --%s is a controller flag: add --controller", name)
					}
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop() // a second signal gets the default action
			}()
			log := newLogger(cmd.ErrOrStderr(), level).With("module", namesrvFrontend)

			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("namesrv: listen: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "karman: %s listening on %s\n", namesrvFrontend, ln.Addr())
			err = st.Start(ctx, server.Host{
				Listener: ln,
				Logger:   log,
				Metrics:  prometheus.NewRegistry(), // not served: there is no HTTP endpoint
				Addrs:    map[string]net.Addr{namesrvFrontend: ln.Addr()},
			})
			if err != nil {
				ln.Close()
				return fmt.Errorf("namesrv: start: %w", err)
			}
			var (
				stopCtl func(context.Context) error
				ctlErr  <-chan error
			)
			if withController {
				stopCtl, ctlErr, err = ctl.start(cmd.OutOrStdout(), newLogger(cmd.ErrOrStderr(), level).With("module", "controller"))
				if err != nil {
					if sp, ok := m.(server.Stopper); ok {
						sp.Stop(context.WithoutCancel(ctx))
					}
					return err
				}
			}
			log.Info("ready", "addr", ln.Addr().String())
			fmt.Fprintln(cmd.OutOrStdout(), "karman: ready")

			select {
			case <-ctx.Done():
			case err := <-ctlErr:
				log.Error("controller request API stopped", "err", err)
			}
			log.Info("shutting down", "cause", context.Cause(ctx))
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			if stopCtl != nil {
				if err := stopCtl(sctx); err != nil {
					return fmt.Errorf("namesrv: stop the controller: %w", err)
				}
			}
			if sp, ok := m.(server.Stopper); ok {
				if err := sp.Stop(sctx); err != nil {
					return fmt.Errorf("namesrv: stop: %w", err)
				}
			}
			log.Info("stopped")
			return nil
		},
	}
	fs := sortedFlags(cmd.Flags())
	fs.StringVar(&addr, "addr", defAddr, "listen address")
	fs.Var(levelFlag{&level}, "log-level", "log level: debug, info, warn or error")
	fs.DurationVar(&shutdownTimeout, "shutdown-timeout", config.DefaultShutdownTimeout, "time allowed for a graceful shutdown")
	fs.BoolVar(&withController, "controller", false, "also run a node of the replication controller quorum")
	ctl.bind(fs)
	return cmd
}

// levelFlag is a slog.Level flag.
type levelFlag struct{ l *slog.Level }

func (f levelFlag) String() string {
	if f.l == nil {
		return slog.LevelInfo.String()
	}
	return f.l.String()
}

func (f levelFlag) Set(s string) error { return f.l.UnmarshalText([]byte(s)) }

func (f levelFlag) Type() string { return "level" }
