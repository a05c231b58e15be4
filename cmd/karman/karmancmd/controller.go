package karmancmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/server/config"
	"github.com/spf13/cobra"
)

func newControllerCmd() *cobra.Command {
	var (
		opts            controller.Options
		peers           string
		addr            string
		level           = levelFlag{new(slog.Level)}
		shutdownTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run one node of the replication controller quorum",
		Long: `Run one node of the controller quorum (3 or 5 nodes, on hashicorp/raft):
it keeps, for every broker group, its members, its master and the master's
epoch, and the in-sync set, and elects a new master from the in-sync set
when a master's heartbeats stop for --broker-heartbeat-timeout.

Every node is given the same --controller-peers (id=host:port of each
node's raft address, its own included); brokers reach the quorum on each
node's --controller-addr (HTTP/JSON; only the leader answers writes).
The raft log, stable store and snapshots live in --data; a node restarted
with peers other than those it stored refuses to start.

The request address is printed as "karman: controller listening on
<addr>", then "karman: ready". SIGINT or SIGTERM stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Peers, err = parsePeers(peers); err != nil {
				return err
			}
			if opts.HeartbeatTimeout <= 0 {
				return errors.New("controller: --broker-heartbeat-timeout must be positive")
			}
			if shutdownTimeout <= 0 {
				return errors.New("controller: --shutdown-timeout must be positive")
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return fmt.Errorf("controller: --controller-addr %q: want host:port or :port: %w", addr, err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop()
			}()
			opts.Logger = newLogger(cmd.ErrOrStderr(), *level.l).With("module", "controller")

			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("controller: listen: %w", err)
			}
			c, err := controller.Open(opts)
			if err != nil {
				ln.Close()
				return err
			}
			srv := &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 5 * time.Second}
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			fmt.Fprintf(cmd.OutOrStdout(), "karman: controller listening on %s\n", ln.Addr())
			fmt.Fprintln(cmd.OutOrStdout(), "karman: ready")

			select {
			case <-ctx.Done():
			case err = <-errc:
				opts.Logger.Error("request API stopped", "err", err)
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			return errors.Join(srv.Shutdown(sctx), c.Close())
		},
	}
	fs := sortedFlags(cmd.Flags())
	fs.StringVar(&opts.ID, "controller-id", "", "this node's id, one of --controller-peers")
	fs.StringVar(&peers, "controller-peers", "", "every node's raft address: id=host:port separated by commas")
	fs.StringVar(&addr, "controller-addr", ":9878", "address of the request API brokers call")
	fs.StringVar(&opts.Dir, "data", "./controller-data", "directory of the raft log and snapshots")
	fs.DurationVar(&opts.HeartbeatTimeout, "broker-heartbeat-timeout", 5*time.Second, "silence after which a master is replaced")
	fs.BoolVar(&opts.AllowUncleanElection, "allow-unclean-election", false, "elect a live broker outside the in-sync set when none in it is live (loses what only the old master held)")
	fs.Var(level, "log-level", "log level: debug, info, warn or error")
	fs.DurationVar(&shutdownTimeout, "shutdown-timeout", config.DefaultShutdownTimeout, "time allowed for a graceful shutdown")
	return cmd
}

// parsePeers reads id=host:port,... into a map, refusing repeated ids.
func parsePeers(s string) (map[string]string, error) {
	peers := map[string]string{}
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		id, addr, ok := strings.Cut(p, "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("controller: --controller-peers: %q: want id=host:port", p)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("controller: --controller-peers: id %q given twice", id)
		}
		peers[id] = addr
	}
	if len(peers) == 0 {
		return nil, errors.New("controller: --controller-peers: none given")
	}
	return peers, nil
}
